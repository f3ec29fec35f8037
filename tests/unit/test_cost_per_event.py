"""The cost of an event is proportional to what it touches, never to the size of a service's state
(docs/scaling.md): for every service's core, folding one event, naming the keys it touched and
reconciling those keys makes the same number of function calls whether the state holds 5 or 150
unrelated running jobs (with their PodGroups, pods and nodes)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from support.events import EventLog
from support.work import calls

from contracts.codec import encode_object
from contracts.job_shape import default_job
from contracts.objects import Container, Job, Node, ObjectMeta, PodSpec, PodTemplate, TaskSpec
from contracts.plans import Bind, PlanMessage
from contracts.resources import Resources
from services.admission.context_core import AdmissionViewCore
from services.binder.core.core import BinderCore
from services.binder.state import BinderShellCore
from services.job_controller.core.controller import ControllerCore
from services.job_controller.core.expand import pod_for, podgroup_for
from services.node_agent.agent_core import AgentCore
from services.node_agent.core.core import NodeAgentCore
from services.queue_controller.core.projection import ProjectedCore as QueueControllerCore
from services.scheduler.state import ViewCore
from shared.runner_types import Event

CORES: dict[str, Callable[[tuple[Node, ...]], Any]] = {
    "job-controller": lambda _nodes: ControllerCore(),
    "queue-controller": lambda _nodes: QueueControllerCore(),
    "binder": lambda _nodes: BinderShellCore(BinderCore()),
    "node-agent": lambda nodes: AgentCore(NodeAgentCore("sim", nodes)),
    "scheduler": lambda _nodes: ViewCore("scheduler-0"),
    "admission": lambda _nodes: AdmissionViewCore(),
}


def nodes(count: int) -> tuple[Node, ...]:
    allocatable = Resources.parse({"cpu": "64", "memory": "256Gi"})
    return tuple(Node(meta=ObjectMeta(f"n{i}", ""), allocatable=allocatable) for i in range(count))


def training_job(name: str) -> Job:
    container = Container("c", requests=Resources.parse({"cpu": "1", "memory": "1Gi"}))
    task = TaskSpec(name="worker", replicas=2, template=PodTemplate(spec=PodSpec(containers=(container,))))
    meta = ObjectMeta(name, "team-a", uid=f"team-a-{name}", creation_timestamp=1.0)
    return default_job(Job(meta=meta, tasks=(task,), min_available=2))


def running_job(log: EventLog, name: str, node: str) -> list[Event]:
    """A job's life up to its pods running, as the services write it."""
    job = training_job(name)
    pods = [pod_for(job, job.tasks[0], i, created_at=2.0) for i in range(2)]
    events = [
        log.event("JobSubmitted", job.meta.key, {"object": encode_object(job)}),
        log.event("PodGroupCreated", job.meta.key, {"object": encode_object(podgroup_for(job))}),
        log.event("PodGroupStatusChanged", job.meta.key, {"phase": "Inqueue", "conditions": []}),
    ]
    events += [log.event("PodCreated", p.meta.key, {"object": encode_object(p)}) for p in pods]
    events += [log.event("PodBound", p.meta.key, {"node": node, "plan": f"plan-{name}"}) for p in pods]
    events += [log.event("PodRunning", p.meta.key, {"node": node, "started_at": 3.0}) for p in pods]
    return events


def cluster(service: str, unrelated: int) -> tuple[Any, Any, EventLog]:
    """A core of the service whose state holds `unrelated` running jobs, each on a node of its own, and
    the job "target" running on n0; settled as after replay."""
    cluster_nodes = nodes(unrelated + 1)
    core = CORES[service](cluster_nodes)
    log = EventLog(time_from_seq=True)
    history = [log.created(node) for node in cluster_nodes]
    for i in range(unrelated):
        history += running_job(log, f"other-{i:03d}", f"n{i + 1}")
    history += running_job(log, "target", "n0")
    state = core.initial()
    for event in history:
        state = core.apply(state, event)
    core.reconcile(state, 10.0)  # settled as after replay: what is left is the next event's work
    return core, state, log


def one_event(core: Any, state: Any, event: Event) -> int:
    def work() -> None:
        applied = core.apply(state, event)
        core.reconcile(applied, 10.0, list(core.touched(applied, event)))

    return calls(work)[1]


@pytest.mark.parametrize("service", sorted(CORES))
@pytest.mark.parametrize(
    "what",
    ["a pod finishes", "a new job is submitted"],
)
def test_an_events_work_does_not_grow_with_unrelated_jobs(service: str, what: str) -> None:
    counts = []
    for unrelated in (5, 150):
        core, state, log = cluster(service, unrelated)
        if what == "a pod finishes":
            event = log.event("PodSucceeded", "team-a/target-worker-0", {"node": "n0", "exit_code": 0})
        else:
            job = training_job("newcomer")
            event = log.event("JobSubmitted", job.meta.key, {"object": encode_object(job)})
        counts.append(one_event(core, state, event))
    assert counts[0] > 0 and counts[1] == counts[0], f"{service}: {counts} calls with 5 and 150 other jobs"


def test_checking_a_plan_does_not_grow_with_unrelated_jobs_or_nodes() -> None:
    counts = []
    for unrelated in (5, 150):
        core, state, log = cluster("binder", unrelated)
        job = training_job("newcomer")
        pods = [pod_for(job, job.tasks[0], i, created_at=2.0) for i in range(2)]
        for event in (
            log.event("PodGroupCreated", job.meta.key, {"object": encode_object(podgroup_for(job))}),
            *(log.event("PodCreated", p.meta.key, {"object": encode_object(p)}) for p in pods),
        ):
            state = core.apply(state, event)
        plan = PlanMessage(
            "p-new", "scheduler-0", log.seq, tuple(Bind(p.meta.key, job.meta.key, "n0") for p in pods)
        )
        (_, outputs), work = calls(partial(core.core.submit_plan, state.core, plan, 10.0))
        assert [o.type for o in outputs] == ["PodBound", "PodBound"]
        counts.append(work)
    assert counts[1] == counts[0], f"{counts} calls with 5 and 150 other jobs and nodes"
