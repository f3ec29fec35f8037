"""overcommit: the enqueue gate against the overcommitted cluster, through real sessions."""

from __future__ import annotations

from typing import Any

import pytest
from support.builders import conf, node, pod, podgroup, res, session

from services.scheduler.core.framework.plugin import Vote


def overcommit(factor: Any = None):
    plugin: dict[str, Any] = {"name": "overcommit"}
    if factor is not None:
        plugin["arguments"] = {"overcommit-factor": factor}
    return conf("enqueue, allocate", [plugin])


def group(name: str, phase: str = "Pending", *, min_member: int = 1, **minimum: Any):
    return podgroup(
        name, phase=phase, min_member=min_member, min_resources=res(**minimum) if minimum else None
    )


def running(name: str, *cpus: float, min_cpu: float | None = None, min_member: int = 1) -> list:
    """A Running PodGroup whose pods are bound to n1."""
    minimum = {} if min_cpu is None else {"cpu": str(min_cpu)}
    pods = [pod(f"{name}-{i}", name, cpu=str(c), memory=None, node_name="n1") for i, c in enumerate(cpus)]
    return [group(name, "Running", min_member=min_member, **minimum), *pods]


CASES = [
    pytest.param(1.0, [*running("busy", 2), group("fits", cpu=2)], {"fits": "Inqueue"}, id="exactly-idle"),
    pytest.param(1.0, [*running("busy", 2), group("big", cpu="2001m")], {"big": "Pending"}, id="above-idle"),
    pytest.param(
        None, [*running("busy", 2), group("fits", cpu="2800m")], {"fits": "Inqueue"}, id="default-1.2"
    ),
    pytest.param(
        None, [*running("busy", 2), group("big", cpu="2801m")], {"big": "Pending"}, id="default-1.2-above"
    ),
    pytest.param(
        0.5, [*running("busy", 2), group("fits", cpu="2800m")], {"fits": "Inqueue"}, id="below-1-means-1.2"
    ),
    pytest.param(2.0, [*running("busy", 2), group("fits", cpu=6)], {"fits": "Inqueue"}, id="factor-2"),
    pytest.param(  # Inqueue PodGroups hold their minResources
        1.0,
        [group("waiting", "Inqueue", cpu=3), group("one", cpu=1), group("two", cpu=1)],
        {"one": "Inqueue", "two": "Pending"},
        id="inqueue-reserved-then-admitted",
    ),
    pytest.param(  # a Running gang holds the part of its minimum its allocated tasks do not cover yet
        1.0,
        [*running("gang", 1, 1, min_cpu=3, min_member=2), group("next", cpu=1), group("after", cpu="500m")],
        {"next": "Inqueue", "after": "Pending"},
        id="running-unmet-minimum",
    ),
    pytest.param(  # ... but not while fewer tasks than minMember are allocated (it is not running yet)
        1.0,
        [*running("gang", 1, min_cpu=3, min_member=2), group("next", cpu=3)],
        {"next": "Inqueue"},
        id="running-below-min-member",
    ),
    pytest.param(  # only the dimensions the PodGroup asks for are compared
        1.0,
        [*running("busy", 4), group("memory-only", memory="4Gi"), group("cpu", cpu="100m")],
        {"memory-only": "Inqueue", "cpu": "Pending"},
        id="requested-dimensions",
    ),
    pytest.param(  # a resource the cluster has none of
        1.0, [group("gpu", gpu=1)], {"gpu": "Pending"}, id="missing-dimension"
    ),
    pytest.param(  # no minResources: always admitted
        1.0, [*running("busy", 4), group("free")], {"free": "Inqueue"}, id="no-min-resources"
    ),
]


@pytest.mark.parametrize(("factor", "objects", "phases"), CASES)
def test_enqueue(factor: Any, objects: list, phases: dict[str, str]) -> None:
    result = session([node("n1", cpu=4, memory="8Gi"), *objects], overcommit(factor)).run()
    for name, phase in phases.items():
        assert result.podgroups[f"default/{name}"].phase == phase


def test_enqueued_adds_to_admitted_work() -> None:
    ssn = session([node("n1", cpu=4), group("a", cpu=3), group("b", cpu=2)], overcommit(1.0))
    plugin = ssn.plugins["overcommit"]
    a, b = ssn.jobs["default/a"], ssn.jobs["default/b"]
    assert plugin.job_enqueueable(ssn, b) == Vote.PERMIT
    plugin.job_enqueued(ssn, a)
    assert plugin.job_enqueueable(ssn, b) == Vote.REJECT


def test_idle_counts_pods_of_no_podgroup() -> None:
    """Pods of other schedulers use node capacity too."""
    objects = [node("n1", cpu=4), pod("foreign", cpu=3, memory=None, node_name="n1"), group("j", cpu=2)]
    result = session(objects, overcommit(1.0)).run()
    assert result.podgroups["default/j"].phase == "Pending"
