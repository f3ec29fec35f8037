"""Configuration of the event-sourced loop; a service's config subclasses RunnerConfig."""

from __future__ import annotations

import dataclasses

from shared.config import ServiceConfig


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunnerConfig(ServiceConfig):
    reconcile_interval_s: float = 1.0  # timer reconcile, for time-based decisions (TTLs, timeouts)
    checkpoint_every_events: int = 1000
    checkpoint_every_s: float = 30.0
    inflight_timeout_s: float = 30.0  # an output not seen in the log after this long is sent again
    max_batch_events: int = 512  # events applied between two reconciles at most
    leader_election: bool = False
    leader_lease_ttl_s: int = 5
    instance_id: str = ""  # the election candidate's name; empty: <hostname>-<pid>
    stream_replicas: int = 1  # replicas of LAHAR_EVENTS when this service is the one creating it

    def problems(self) -> list[str]:
        problems = super().problems()
        for name in ("reconcile_interval_s", "checkpoint_every_s", "inflight_timeout_s"):
            if getattr(self, name) <= 0:
                problems.append(f"{name}: expected a positive number, got {getattr(self, name)}")
        for name in ("checkpoint_every_events", "max_batch_events", "leader_lease_ttl_s", "stream_replicas"):
            if getattr(self, name) < 1:
                problems.append(f"{name}: expected an integer >= 1, got {getattr(self, name)}")
        return problems
