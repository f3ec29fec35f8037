"""A session over a busy cluster may change the status of thousands of PodGroups: the status-only plans
are split so that each commits as one atomic batch."""

from __future__ import annotations

from contracts.objects import ObjectMeta, PodGroup, PodGroupStatus
from contracts.plans import PodGroupUpdate
from services.scheduler.core.framework.plan import SessionResult
from services.scheduler.core.snapshot import ClusterSnapshot
from services.scheduler.plans import STATUS_PLAN_GROUPS, build_plans


def test_status_only_plans_hold_at_most_a_batch_worth_of_podgroups() -> None:
    count = 2 * STATUS_PLAN_GROUPS + 5
    groups = tuple(
        PodGroup(meta=ObjectMeta(f"g{i:04d}", "default"), status=PodGroupStatus(phase="Pending"))
        for i in range(count)
    )
    result = SessionResult(
        "s1", podgroups={g.meta.key: PodGroupUpdate("Inqueue", (), 0, 0, 0) for g in groups}
    )
    plans = build_plans(
        result, ClusterSnapshot(podgroups=groups, sequence=7), "r0", {g.meta.key for g in groups}
    )
    assert [len(p.podgroups) for p in plans] == [STATUS_PLAN_GROUPS, STATUS_PLAN_GROUPS, 5]
    assert sorted(k for p in plans for k in p.podgroups) == sorted(g.meta.key for g in groups)
    assert len({p.plan_id for p in plans}) == 3
