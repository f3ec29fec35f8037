"""Plans committed together: the binder publishes a fetched batch of accepted plans as few atomic
batches as the stream allows, each plan whole inside one of them, rejections beside them."""

from __future__ import annotations

from services.binder.core.core import committed_together
from shared.runner_types import Output


def events(plan: str, count: int) -> list[Output]:
    return [
        Output("PodBound", "pod", "default", f"{plan}-{i}", f"{plan}/{i}", plan, batch=plan)
        for i in range(count)
    ]


def rejected(plan: str) -> list[Output]:
    return [Output("PlanRejected", "podgroup", "default", plan, f"{plan}/rejected", plan)]


def test_accepted_plans_share_batches_of_at_most_the_limit_and_keep_their_order() -> None:
    per_plan = [events("a", 3), rejected("b"), events("c", 4), events("d", 2), events("e", 5)]
    merged = committed_together(per_plan, most=9)
    assert [o.id for o in merged] == [o.id for outputs in per_plan for o in outputs]
    batches = [o.batch for o in merged]
    # a, c and d fit in 9 events; e would overflow it and opens the next batch; the rejection stands apart
    assert batches == ["a"] * 3 + [None] + ["a"] * 4 + ["a"] * 2 + ["e"] * 5
    assert [len([b for b in batches if b == key]) for key in ("a", "e")] == [9, 5]


def test_a_plan_is_never_split_across_batches() -> None:
    merged = committed_together([events("a", 2), events("b", 2)], most=3)
    assert [o.batch for o in merged] == ["a", "a", "b", "b"]
