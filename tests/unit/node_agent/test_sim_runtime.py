"""The sim runtime: simulated durations under a time scale, exit codes, stops, and thousands of pods."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Coroutine, Mapping
from typing import Any

import pytest
from support.work import calls

from contracts.job_shape import POD_GENERATION
from contracts.objects import Container, ObjectMeta, Pod, PodSpec, frozen_map
from contracts.resources import Resources
from contracts.sim_annotations import SIM_DURATION, SIM_EXIT_CODE
from services.node_agent.core.state import Observation
from services.node_agent.runtime.base import Runtime
from services.node_agent.runtime.sim import RunShape, SimRuntime, hollow_nodes, run_shape, shape_key


def pod(name: str, annotations: Mapping[str, str] | None = None, command: tuple[str, ...] = ("run",)) -> Pod:
    return Pod(
        meta=ObjectMeta(name=name, annotations=frozen_map(annotations)),
        spec=PodSpec(containers=(Container("main", command=command),)),
    )


async def next_report(runtime: SimRuntime, timeout_s: float = 5.0) -> Observation:
    return await asyncio.wait_for(runtime.observations.get(), timeout_s)


@pytest.fixture
async def runtime() -> AsyncIterator[SimRuntime]:
    sim = SimRuntime(time_scale=0.01)
    yield sim
    await sim.close()


async def test_durations_follow_the_annotation_then_sleep_then_the_default(runtime: SimRuntime) -> None:
    loop = asyncio.get_running_loop()
    began = loop.time()
    await runtime.start(pod("default-60s"), "r3")
    await runtime.start(pod("sleeps", command=("sh", "-c", "sleep 20")), "r2")
    await runtime.start(pod("annotated", {SIM_DURATION: "10s"}, command=("sleep", "30")), "r1")
    assert [(await next_report(runtime)).kind for _ in range(3)] == ["started"] * 3
    ended = []
    for _ in range(3):
        report = await next_report(runtime)
        ended.append((report.pod, report.kind, report.exit_code, loop.time() - began))
    # 10 s, 20 s and 60 s at 1/100 (the loop may fire a timer up to its clock resolution early)
    assert [e[:3] for e in ended] == [
        ("default/annotated", "exited", 0),
        ("default/sleeps", "exited", 0),
        ("default/default-60s", "exited", 0),
    ]
    assert [e[3] >= d - 0.01 for e, d in zip(ended, (0.1, 0.2, 0.6), strict=True)] == [True] * 3
    assert ended[2][3] < 3.0


async def test_exit_codes_and_bad_annotations(runtime: SimRuntime) -> None:
    await runtime.start(pod("fails", {SIM_EXIT_CODE: "3", SIM_DURATION: "1s"}), "r1")
    await runtime.start(pod("broken", {SIM_EXIT_CODE: "three"}), "r2")
    reports = [await next_report(runtime) for _ in range(3)]
    assert [(r.pod, r.kind, r.exit_code, r.reason) for r in reports] == [
        ("default/fails", "started", None, ""),
        ("default/broken", "exited", 128, "StartError"),
        ("default/fails", "exited", 3, ""),
    ]


@pytest.mark.parametrize(
    ("annotations", "fragment"),
    [
        ({SIM_DURATION: "banana"}, f"{SIM_DURATION}: expected a duration"),
        ({SIM_DURATION: "-1s"}, f"{SIM_DURATION}: expected a duration of 0 or more"),
        ({SIM_EXIT_CODE: "1,x"}, f"{SIM_EXIT_CODE}: expected an exit code"),
        ({"lahar.dev/sim-usage": "gpu=1"}, "lahar.dev/sim-usage: expected cpu=<quantity>"),
    ],
)
async def test_a_malformed_run_knob_from_an_old_log_fails_the_pod_at_start(
    runtime: SimRuntime, annotations: dict[str, str], fragment: str
) -> None:
    await runtime.start(pod("old", annotations), "r1")
    report = await next_report(runtime)
    assert (report.kind, report.exit_code, report.reason) == ("exited", 128, "StartError")
    assert report.message.startswith("simulation annotations: ") and fragment in report.message
    assert await runtime.running() == {}


async def test_knobs_the_node_does_not_read_never_stop_a_pod(runtime: SimRuntime) -> None:
    odd = {"lahar.dev/sim-barrier": "yes", "lahar.dev/sim-arrival": "soon", "lahar.dev/sim-typo": "1"}
    await runtime.start(pod("p", {SIM_DURATION: "1s", **odd}), "r1")
    assert [(await next_report(runtime)).kind for _ in range(2)] == ["started", "exited"]


async def test_stop_ends_a_run_for_good_and_a_run_starts_once(runtime: SimRuntime) -> None:
    await runtime.start(pod("p", {SIM_DURATION: "5s"}), "r1")
    await runtime.start(pod("p", {SIM_DURATION: "5s"}), "r1")
    assert await runtime.running() == {"default/p": "r1"}
    await runtime.stop("default/p", "r1", grace_s=30)
    await runtime.start(pod("p", {SIM_DURATION: "5s"}), "r1")  # ended: never again
    await runtime.stop("default/q", "unknown", grace_s=30)
    assert await runtime.running() == {}
    reports = [await next_report(runtime) for _ in range(3)]
    assert [(r.pod, r.run_id, r.kind) for r in reports] == [
        ("default/p", "r1", "started"),
        ("default/p", "r1", "stopped"),
        ("default/q", "unknown", "stopped"),
    ]
    # the stopped run's timer is gone: nothing else is reported even after its 50 ms would have passed
    await runtime.start(pod("marker", {SIM_DURATION: "10s"}), "r9")
    reports = [await next_report(runtime) for _ in range(2)]
    assert [(r.pod, r.kind) for r in reports] == [("default/marker", "started"), ("default/marker", "exited")]


async def test_a_new_run_of_the_same_pod_replaces_the_old_one(runtime: SimRuntime) -> None:
    await runtime.start(pod("p"), "r1")
    await runtime.start(pod("p", {SIM_DURATION: "1s"}), "r2")
    reports = [await next_report(runtime) for _ in range(4)]
    assert [(r.run_id, r.kind) for r in reports] == [
        ("r1", "started"),
        ("r1", "stopped"),
        ("r2", "started"),
        ("r2", "exited"),
    ]


async def test_thousands_of_pods_quickly() -> None:
    runtime = SimRuntime(time_scale=0.001)  # 1..5 s pods last 1..5 ms
    loop = asyncio.get_running_loop()
    began = loop.time()
    count = 5000
    for i in range(count):
        annotations = {SIM_DURATION: f"{1 + i % 5}s", SIM_EXIT_CODE: str(i % 2)}
        await runtime.start(pod(f"p{i}", annotations), f"r{i}")
    reports = [await next_report(runtime) for _ in range(2 * count)]
    assert loop.time() - began < 10.0
    assert Counter(r.kind for r in reports) == {"started": count, "exited": count}
    assert Counter(r.exit_code for r in reports if r.kind == "exited") == {0: count // 2, 1: count // 2}
    assert len({r.run_id for r in reports}) == count
    assert await runtime.running() == {}
    await runtime.close()


def test_hollow_nodes_and_the_protocol() -> None:
    cpu = Resources.parse({"cpu": "8"})
    nodes = hollow_nodes(3, cpu, prefix="sim", labels={"zone": "a"})
    assert [n.meta.name for n in nodes] == ["sim-0", "sim-1", "sim-2"]
    assert all(n.allocatable == cpu and n.meta.namespace == "" for n in nodes)
    # the given labels, and each node's own well-known ones (its hostname, the OS and architecture)
    for node in nodes:
        assert node.meta.labels["zone"] == "a"
        assert node.meta.labels["kubernetes.io/hostname"] == node.meta.name
        assert node.meta.labels["kubernetes.io/os"] == "linux"
        assert node.meta.labels["kubernetes.io/arch"]
    runtime: Runtime = SimRuntime()
    assert isinstance(runtime.observations, asyncio.Queue)


def test_pods_that_differ_only_in_what_the_simulation_ignores_share_a_run_shape() -> None:
    template = {SIM_DURATION: "10s", SIM_EXIT_CODE: "1,0", "lahar.dev/job-name": "j"}
    first = pod("j-worker-0", {**template, POD_GENERATION: "0", "lahar.dev/task-index": "0"})
    sibling = pod("j-worker-1", {**template, POD_GENERATION: "0", "lahar.dev/task-index": "1"})
    assert shape_key(first) == shape_key(sibling)
    assert run_shape(first) == run_shape(sibling) == RunShape(None, 10.0, 1)
    # what decides a run: the pod's generation, its sim-* annotations, its commands (without a duration)
    retried = pod("j-worker-0", {**template, POD_GENERATION: "1"})
    longer = pod("j-worker-0", {**template, POD_GENERATION: "0", SIM_DURATION: "20s"})
    sleeper = pod("s", command=("sleep", "5"))
    assert len({shape_key(p) for p in (first, retried, longer, sleeper, pod("t"))}) == 5
    assert [run_shape(p) for p in (retried, longer, sleeper, pod("t"))] == [
        RunShape(None, 10.0, 0),
        RunShape(None, 20.0, 1),
        RunShape(None, 5.0, 0),
        RunShape(None, 60.0, 0),
    ]
    broken = run_shape(pod("b", {SIM_EXIT_CODE: "x"}))
    assert broken.problem is not None and broken.exit_code == 128


async def test_a_gangs_pods_are_shaped_once(runtime: SimRuntime) -> None:
    """The first pod of a template has its annotations parsed; the others of the gang reuse the shape, so
    each of their starts makes the same, smaller, number of calls."""

    def start(i: int) -> int:
        started = runtime.start(pod(f"g-{i}", {SIM_DURATION: "1h", POD_GENERATION: "0"}), f"r{i}")
        return calls(lambda: run_now(started))[1]

    counts = [start(i) for i in range(50)]
    assert counts[0] > counts[1] and set(counts[1:]) == {counts[1]}, counts
    assert len(await runtime.running()) == 50


def run_now(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine that never waits (a sim runtime's start) to its end, here and now."""
    try:
        coroutine.send(None)
    except StopIteration:
        return
    raise AssertionError("the coroutine waited")
