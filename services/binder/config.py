"""The binder's configuration (leader-elected; its plan handling's bounds and timings)."""

from __future__ import annotations

import dataclasses

from services.binder.core.liveness import DEFAULT_NODE_TIMEOUT_S
from shared.runner import RunnerConfig


@dataclasses.dataclass(frozen=True, kw_only=True)
class BinderConfig(RunnerConfig):
    """The binder (leader-elected)."""

    leader_election: bool = True
    node_timeout_s: float = DEFAULT_NODE_TIMEOUT_S  # heartbeats silent this long: NodeNotReady
    plan_ack_wait_s: float = 10.0  # an unacknowledged plan is delivered again (to the new leader) after this
    plan_max_deliver: int = 20
    plan_attempts: int = 3  # a plan whose handling raised this often is moved to the dead letters
    plan_catch_up_s: float = 5.0  # how long a plan made at a later seq than the ledger's waits for it
    plan_max_age_s: float = 120.0  # a plan stored longer ago than this is refused, not committed late
    plan_retry_max_s: float = 30.0  # the longest wait before a plan whose events were not stored comes back
    plan_sweep_s: float = 10.0  # how often an idle leader looks for plans past their last delivery

    def problems(self) -> list[str]:
        problems = super().problems()
        for name in (
            "node_timeout_s",
            "plan_ack_wait_s",
            "plan_catch_up_s",
            "plan_max_age_s",
            "plan_retry_max_s",
            "plan_sweep_s",
        ):
            if getattr(self, name) <= 0:
                problems.append(f"{name}: expected a positive number, got {getattr(self, name)}")
        if self.plan_max_deliver < 1:
            problems.append(f"plan_max_deliver: expected an integer >= 1, got {self.plan_max_deliver}")
        if not 1 <= self.plan_attempts < self.plan_max_deliver:
            problems.append(
                f"plan_attempts: expected an integer from 1 to plan_max_deliver - 1, got {self.plan_attempts}"
            )
        return problems
