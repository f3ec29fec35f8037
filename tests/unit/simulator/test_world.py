"""The simulated world: pod run times, exit codes, arrivals, gang barriers and evictions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from contracts.objects import (
    Container,
    Job,
    ObjectMeta,
    Pod,
    PodSpec,
    PodStatus,
    PodTemplate,
    TaskSpec,
    frozen_map,
)
from contracts.resources import Resources
from services.scheduler.core.framework.plan import Bind, Eviction, Plan, PodGroupUpdate, SessionResult
from services.simulator.engine import build_world
from services.simulator.world import (
    DEFAULT_DURATION_S,
    SIM_ARRIVAL,
    SIM_BARRIER,
    SIM_DURATION,
    SIM_EXIT_CODE,
    World,
    arrival_time,
    pod_duration,
)

CPU = Resources.parse({"cpu": "1"})


def container(command: Sequence[str] = (), args: Sequence[str] = ()) -> Container:
    return Container(name="c", command=tuple(command), args=tuple(args), requests=CPU)


def pod(
    *containers: Container,
    annotations: Mapping[str, str] | None = None,
    node: str = "",
    phase: str = "Pending",
) -> Pod:
    return Pod(
        meta=ObjectMeta("p", annotations=frozen_map(annotations)),
        spec=PodSpec(containers=containers or (container(),), node_name=node),
        status=PodStatus(phase=phase),
    )


def job(name: str, replicas: int, annotations: Mapping[str, str] | None = None) -> Job:
    template = PodTemplate(spec=PodSpec(containers=(container(),)))
    return Job(
        meta=ObjectMeta(name, uid=f"default-{name}", annotations=frozen_map(annotations)),
        tasks=(TaskSpec(name="w", replicas=replicas, template=template),),
    )


def session(
    binds: Mapping[str, str] | None = None, evictions: Sequence[str] = (), group: str = "default/g"
) -> SessionResult:
    """A session result that binds and evicts the given pods (of one PodGroup)."""
    plan = Plan(
        binds=tuple(Bind(task, group, node) for task, node in (binds or {}).items()),
        evictions=tuple(Eviction(task, group, "n1", "reclaim") for task in evictions),
    )
    return SessionResult("s", plans=(plan,))


# --- run time ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "seconds"),
    [
        # the annotation wins over a sleep in the command
        (pod(container(["sh", "-c", "sleep 30"]), annotations={SIM_DURATION: "90s"}), 90.0),
        (pod(annotations={SIM_DURATION: "1m30s"}), 90.0),
        (pod(annotations={SIM_DURATION: "250ms"}), 0.25),
        # a `sleep N` in the command or the arguments
        (pod(container(["sh", "-c", "sleep 30"])), 30.0),
        (pod(container(["sh", "-c"], ["echo hi; sleep 12.5; echo bye"])), 12.5),
        (pod(container(["sleep"], ["45"])), 45.0),
        # in any container
        (pod(container(["server"]), container(["sh", "-c", "sleep 7"])), 7.0),
        # no hint: the default
        (pod(container(["python", "train.py"])), DEFAULT_DURATION_S),
        (pod(container(["sh", "-c", "nosleep 30"])), DEFAULT_DURATION_S),
        (pod(annotations={SIM_DURATION: ""}), DEFAULT_DURATION_S),
    ],
)
def test_pod_duration_precedence(given: Pod, seconds: float) -> None:
    assert pod_duration(given) == seconds


def test_default_duration_is_a_minute() -> None:
    assert DEFAULT_DURATION_S == 60.0


# --- completion and exit codes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "phase", "code"),
    [
        ({}, "Succeeded", 0),
        ({SIM_EXIT_CODE: "0"}, "Succeeded", 0),
        ({SIM_EXIT_CODE: "1"}, "Failed", 1),
        ({SIM_EXIT_CODE: "137"}, "Failed", 137),
    ],
)
def test_exit_code_decides_the_final_phase(annotations: dict[str, str], phase: str, code: int) -> None:
    world = World()
    running = pod(annotations={SIM_DURATION: "10s", **annotations}, node="n1", phase="Running")
    world.add(running, 5.0)
    assert world.finish_at == {"default/p": 15.0}
    assert world.next_completion() == 15.0
    assert world.complete_due(14.0) == 0
    assert world.pods["default/p"].status.phase == "Running"
    assert world.complete_due(15.0) == 1
    done = world.pods["default/p"]
    assert (done.status.phase, done.status.exit_code) == (phase, code)
    assert world.finish_at == {}
    assert world.next_completion() is None


def test_failed_pods_fail_their_job() -> None:
    world = World()
    world.add(job("j", 2, {SIM_DURATION: "10s", SIM_EXIT_CODE: "2"}), 0.0)
    world.apply(session({"default/j-w-0": "n1", "default/j-w-1": "n1"}, group="default/j"), 0.0)
    world.sync_jobs(0.0)
    assert world.jobs["default/j"].phase == "Running"
    world.complete_due(10.0)
    assert world.sync_jobs(10.0) == 1
    record = world.jobs["default/j"]
    assert (record.phase, record.start_time, record.finish_time) == ("Failed", 0.0, 10.0)
    assert world.unfinished_jobs() == []


# --- arrivals ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "seconds"), [({}, 0.0), ({SIM_ARRIVAL: "90s"}, 90.0), ({SIM_ARRIVAL: "2m"}, 120.0)]
)
def test_arrival_time(annotations: dict[str, str], seconds: float) -> None:
    assert arrival_time(ObjectMeta("x", annotations=frozen_map(annotations))) == seconds


def test_objects_appear_at_their_arrival_time() -> None:
    early = job("early", 1)
    late = job("late", 2, {SIM_ARRIVAL: "30s"})
    world = build_world([early, late])
    assert list(world.jobs) == ["default/early"]
    assert world.next_arrival() == 30.0
    assert not world.admit_arrivals(29.0)
    assert "default/late" not in world.jobs
    assert world.admit_arrivals(31.0)
    assert world.next_arrival() is None
    # expanded on arrival: submit time is when it was admitted, pods Pending
    assert world.jobs["default/late"].submit_time == 31.0
    assert world.podgroups["default/late"].status.phase == "Pending"
    assert sorted(k for k, g in world.pod_job.items() if g == "default/late") == [
        "default/late-w-0",
        "default/late-w-1",
    ]
    assert not world.admit_arrivals(40.0)


# --- gang barriers -------------------------------------------------------------------------------------


def test_barrier_pods_start_only_when_the_whole_gang_runs() -> None:
    world = World()
    world.add(job("g", 3, {SIM_BARRIER: "true", SIM_DURATION: "60s"}), 0.0)
    world.apply(session({"default/g-w-0": "n1", "default/g-w-1": "n1"}), 0.0)
    # running, but waiting for the third member: no completion is scheduled
    assert world.waiting_barrier == {"default/g-w-0", "default/g-w-1"}
    assert world.finish_at == {}
    assert world.next_completion() is None
    world.apply(session({"default/g-w-2": "n2"}), 5.0)
    assert world.waiting_barrier == set()
    # everyone's clock starts when the last member starts
    assert world.finish_at == {"default/g-w-0": 65.0, "default/g-w-1": 65.0, "default/g-w-2": 65.0}


def test_evicting_a_barrier_pod_holds_the_rest_back() -> None:
    world = World()
    world.add(job("g", 2, {SIM_BARRIER: "true"}), 0.0)
    world.apply(session({"default/g-w-0": "n1"}), 0.0)
    world.apply(session({"default/g-w-1": "n1"}, evictions=["default/g-w-0"]), 1.0)
    assert world.waiting_barrier == {"default/g-w-1"}
    assert world.finish_at == {}


def test_pods_without_barrier_start_their_clock_at_once() -> None:
    world = World()
    world.add(job("solo", 2, {SIM_DURATION: "60s"}), 0.0)
    world.apply(session({"default/solo-w-0": "n1"}), 3.0)
    assert world.finish_at == {"default/solo-w-0": 63.0}
    assert world.waiting_barrier == set()


# --- eviction ------------------------------------------------------------------------------------------


def test_eviction_sends_a_pod_back_to_pending_without_a_node() -> None:
    world = World()
    world.add(job("j", 1, {SIM_DURATION: "60s"}), 0.0)
    assert world.apply(session({"default/j-w-0": "n1"}), 0.0) == 1
    bound = world.pods["default/j-w-0"]
    assert (bound.status.phase, bound.spec.node_name, bound.status.start_time) == ("Running", "n1", 0.0)
    assert world.finish_at == {"default/j-w-0": 60.0}

    assert world.apply(session(evictions=["default/j-w-0"]), 10.0) == 1
    evicted = world.pods["default/j-w-0"]
    assert (evicted.status.phase, evicted.spec.node_name) == ("Pending", "")
    assert evicted.status.start_time is None
    assert world.finish_at == {}
    assert world.pending_pods() == ["default/j-w-0"]
    # it never completes on its own: the run it was doing is lost
    assert world.complete_due(100.0) == 0


def test_apply_records_the_podgroup_status() -> None:
    world = World()
    world.add(job("j", 1), 0.0)
    result = SessionResult(
        "s", podgroups={"default/j": PodGroupUpdate("Inqueue", (), running=0, succeeded=0, failed=0)}
    )
    world.apply(result, 0.0)
    assert world.podgroups["default/j"].status.phase == "Inqueue"
