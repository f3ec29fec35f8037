"""Queue fairness arithmetic: water-filling properties, then fixed cases (seed 003 and Volcano's quirks)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.resources import Resources
from services.scheduler.core.plugins.fairness import (
    QueueDemand,
    capability_limits,
    over_limit,
    real_capability,
    share,
    water_fill,
)

DIMS = ("cpu", "memory", "nvidia.com/gpu")
UNLIMITED = Resources()  # a real capability naming no dimension caps nothing

vectors = st.dictionaries(st.sampled_from(DIMS), st.integers(0, 20_000), min_size=1).map(Resources)
totals = st.dictionaries(st.sampled_from(DIMS), st.integers(1, 20_000), min_size=1).map(Resources)


@st.composite
def demands(draw, *, guarantees: bool = False, caps: bool = True) -> list[QueueDemand]:
    count = draw(st.integers(1, 5))
    return [
        QueueDemand(
            f"q{i}",
            draw(st.integers(1, 10)),
            draw(vectors),
            draw(vectors) if caps and draw(st.booleans()) else UNLIMITED,
            draw(vectors) if guarantees and draw(st.booleans()) else Resources(),
        )
        for i in range(count)
    ]


def _sum(deserved: dict[str, Resources], dim: str) -> int:
    return sum(d.get(dim) for d in deserved.values())


# --- properties ----------------------------------------------------------------------------------


@given(totals, demands())
def test_never_hands_out_more_than_the_cluster_has(total: Resources, queues: list[QueueDemand]) -> None:
    deserved = water_fill(total, queues)
    for dim in set(total) | {d for q in queues for d in q.request}:
        assert _sum(deserved, dim) <= total.get(dim)


@given(totals, demands(caps=False))
def test_hands_out_everything_when_demand_exceeds_the_cluster(
    total: Resources, queues: list[QueueDemand]
) -> None:
    """Integer shares leave a remainder smaller than the queues' total weight on a dimension."""
    deserved = water_fill(total, queues)
    weights = sum(q.weight for q in queues)
    for dim, value in total.items():
        if sum(q.request.get(dim) for q in queues) >= value:
            assert 0 <= value - _sum(deserved, dim) < weights


@given(totals, demands(guarantees=True))
def test_deserved_stays_within_request_and_real_capability_unless_guaranteed(
    total: Resources, queues: list[QueueDemand]
) -> None:
    deserved = water_fill(total, queues)
    for queue in queues:
        for dim, value in deserved[queue.name].items():
            bound = min(queue.request.get(dim), queue.real_capability.get(dim, value))
            assert value <= max(bound, queue.guarantee.get(dim))


@settings(max_examples=300)
@given(totals, demands(), st.data())
def test_raising_a_weight_never_lowers_that_queues_deserved(
    total: Resources, queues: list[QueueDemand], data: st.DataObject
) -> None:
    """Up to integer rounding: a queue whose part of the remainder rounds to zero stops growing (Volcano's
    floats stop the same way once the remainder is below 0.1), which costs it less than the total weight."""
    index = data.draw(st.integers(0, len(queues) - 1))
    raised = list(queues)
    q = queues[index]
    raised[index] = QueueDemand(
        q.name, q.weight + data.draw(st.integers(1, 10)), q.request, q.real_capability
    )
    before, after = water_fill(total, queues)[q.name], water_fill(total, raised)[q.name]
    rounding = sum(r.weight for r in raised)
    for dim in set(before) | set(after):
        assert after.get(dim) > before.get(dim) - rounding


@given(totals, demands(guarantees=True), st.integers(1, 10), vectors)
def test_equal_queues_deserve_equally(
    total: Resources, others: list[QueueDemand], weight: int, request: Resources
) -> None:
    twins = [QueueDemand(name, weight, request, UNLIMITED) for name in ("twin-a", "twin-b")]
    deserved = water_fill(total, [twins[0], *others, twins[1]])
    assert deserved["twin-a"] == deserved["twin-b"]


# --- fixed cases --------------------------------------------------------------------------------


def cpu(cores: float) -> Resources:
    return Resources({"cpu": int(cores * 1000)})


@pytest.mark.parametrize(
    ("total", "queues", "expected"),
    [
        pytest.param(  # seed 003: test1 weight 1, test2 weight 3, both demanding the whole 4-core cluster
            cpu(4),
            [QueueDemand("test1", 1, cpu(4), UNLIMITED), QueueDemand("test2", 3, cpu(4), UNLIMITED)],
            {"test1": cpu(1), "test2": cpu(3)},
            id="seed-003-weights-1-and-3",
        ),
        pytest.param(  # a lone queue may use the whole cluster
            cpu(4),
            [QueueDemand("test1", 1, cpu(4), UNLIMITED)],
            {"test1": cpu(4)},
            id="lone-queue",
        ),
        pytest.param(  # what a small demand leaves goes to the others in a second round
            cpu(10),
            [
                QueueDemand("small", 1, cpu(1), UNLIMITED),
                QueueDemand("a", 1, cpu(10), UNLIMITED),
                QueueDemand("b", 2, cpu(10), UNLIMITED),
            ],
            {"small": cpu(1), "a": cpu(3), "b": cpu(6)},
            id="second-round-redistribution",
        ),
        pytest.param(  # a capped queue drops out; the rest goes to the other
            cpu(4),
            [QueueDemand("capped", 1, cpu(4), cpu(1)), QueueDemand("open", 1, cpu(4), UNLIMITED)],
            {"capped": cpu(1), "open": cpu(3)},
            id="capability-cap",
        ),
        pytest.param(  # a guarantee raises deserved above the weighted part, even above the request
            cpu(4),
            [QueueDemand("g", 1, cpu(1), UNLIMITED, cpu(2)), QueueDemand("other", 1, cpu(4), UNLIMITED)],
            {"g": cpu(2), "other": cpu(2)},
            id="guarantee-floor",
        ),
        pytest.param(  # a queue demanding nothing deserves nothing
            cpu(4),
            [QueueDemand("idle", 1, Resources(), UNLIMITED), QueueDemand("busy", 1, cpu(2), UNLIMITED)],
            {"idle": Resources(), "busy": cpu(2)},
            id="no-demand",
        ),
        pytest.param(  # a dimension the cluster lacks is never handed out
            cpu(4),
            [QueueDemand("gpu", 1, Resources({"cpu": 1000, "nvidia.com/gpu": 1000}), UNLIMITED)],
            {"gpu": cpu(1)},
            id="missing-dimension",
        ),
    ],
)
def test_water_fill_cases(
    total: Resources, queues: list[QueueDemand], expected: dict[str, Resources]
) -> None:
    assert water_fill(total, queues) == expected


def test_real_capability_leaves_others_guarantees_and_keeps_volcanos_dimensions() -> None:
    total = Resources({"cpu": 8000, "memory": 8000, "nvidia.com/gpu": 2000, "pods": 20_000})
    guarantees = Resources({"cpu": 3000, "nvidia.com/gpu": 2000})
    own = Resources({"cpu": 1000})
    real = real_capability(total, guarantees, own, None)
    # gpu is fully guaranteed elsewhere: Volcano drops the dimension (unlimited as a cap, zero in fit checks)
    assert real.to_dict() == {"cpu": 6000, "memory": 8000, "pods": 20_000}
    capped = real_capability(total, guarantees, own, capability_limits(Resources({"cpu": 0, "memory": 2000})))
    assert capped.to_dict() == {"cpu": 6000, "memory": 2000, "pods": 20_000}


def test_real_capability_keeps_cpu_and_memory_at_zero_when_guarantees_take_all() -> None:
    real = real_capability(Resources({"cpu": 2000}), Resources({"cpu": 4000}), Resources(), None)
    assert real.to_dict() == {"cpu": 0, "memory": 0}


@pytest.mark.parametrize(
    ("capability", "expected"),
    [
        (None, None),
        (Resources(), None),
        (Resources({"cpu": 0, "memory": 1000}), {"memory": 1000}),
        (Resources({"cpu": 2000, "nvidia.com/gpu": 0}), {"cpu": 2000, "nvidia.com/gpu": 0}),
    ],
)
def test_capability_limits(capability: Resources | None, expected: dict[str, int] | None) -> None:
    limits = capability_limits(capability)
    assert (None if limits is None else limits.to_dict()) == expected


@pytest.mark.parametrize(
    ("allocated", "deserved", "expected"),
    [
        ({"cpu": 1000}, {"cpu": 2000, "memory": 4000}, 0.5),
        ({"cpu": 1000, "memory": 4000}, {"cpu": 2000, "memory": 4000}, 1.0),
        ({"cpu": 3000}, {"cpu": 2000}, 1.5),
        ({}, {"cpu": 2000}, 0.0),
        ({"cpu": 1000}, {}, 0.0),  # nothing deserved: no dimension to look at
        ({"nvidia.com/gpu": 1000}, {"cpu": 2000, "nvidia.com/gpu": 0}, 0.0),
    ],
)
def test_share(allocated: dict[str, int], deserved: dict[str, int], expected: float) -> None:
    assert share(allocated, deserved) == pytest.approx(expected)


def test_over_limit_reads_only_requested_dimensions_and_ignores_pods() -> None:
    limit = Resources({"cpu": 2000, "pods": 0})
    assert over_limit({"cpu": 1000, "memory": 10**9}, Resources({"cpu": 1000, "pods": 1000}), limit) == []
    assert over_limit({"cpu": 1500}, Resources({"cpu": 1000}), limit) == ["cpu"]
    # a dimension the limit does not name is a limit of zero
    assert over_limit({}, Resources({"nvidia.com/gpu": 1000}), limit) == ["nvidia.com/gpu"]
