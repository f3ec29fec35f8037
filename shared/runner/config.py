"""Configuration of the event-sourced loop; a service's config subclasses RunnerConfig."""

from __future__ import annotations

import dataclasses

from shared.config import ServiceConfig


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunnerConfig(ServiceConfig):
    reconcile_interval_s: float = 1.0  # the timer, for time-based decisions (TTLs, timeouts, liveness)
    resync_interval_s: float = 300.0  # everything is reconciled this often, a safety net for a missed key
    # A checkpoint costs the whole state, so it is taken by time more than by count: at thousands of
    # events per second a count of 1000 would dump the state several times a second.
    checkpoint_every_events: int = 100_000
    checkpoint_every_s: float = 30.0
    inflight_timeout_s: float = 30.0  # an output not seen in the log after this long is sent again
    max_batch_events: int = 2048  # events applied between two reconciles at most
    read_model_interval_s: float = 0.2  # services with a read model write what changed this often
    leader_election: bool = False
    # How long a leader that stopped renewing (killed, hung, cut off) keeps its term: a standby takes over
    # within this plus etcd's expiry check (every 0.5 s). Renewed every third of it, so the leader's loop
    # may stall up to two thirds of it without losing the term (docs/reliability.md, "Failover"). 2 s is
    # the shortest lease an etcd with default raft timers grants.
    leader_lease_ttl_s: int = 2
    instance_id: str = ""  # the election candidate's name; empty: <hostname>-<pid>
    stream_replicas: int = 1  # replicas of LAHAR_EVENTS when this service is the one creating it

    def problems(self) -> list[str]:
        problems = super().problems()
        for name in (
            "reconcile_interval_s",
            "resync_interval_s",
            "checkpoint_every_s",
            "inflight_timeout_s",
            "read_model_interval_s",
        ):
            if getattr(self, name) <= 0:
                problems.append(f"{name}: expected a positive number, got {getattr(self, name)}")
        for name in ("checkpoint_every_events", "max_batch_events", "leader_lease_ttl_s", "stream_replicas"):
            if getattr(self, name) < 1:
                problems.append(f"{name}: expected an integer >= 1, got {getattr(self, name)}")
        return problems
