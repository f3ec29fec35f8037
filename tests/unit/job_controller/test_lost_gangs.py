"""Gangs whose pods were lost while their nodes ran on (the issue's NATS outage): the binder gave the
pods up (PodLost), the node agents' reports of the same runs landed around it, and the job-controller
created the lost pods again. Two gang jobs were left stuck for good:

- shape A: a PodGroup with 4 pending pods against minAvailable 10: the scheduler's view turned pods
  that had succeeded (PodSucceeded before PodLost) into failed ones, which no gang counts, while the
  job-controller, rightly, did not create them again;
- shape B: a Completed PodGroup under a Running job with 2 pods pending: the old runs' late
  PodSucceeded (after PodLost, after the new generation's PodCreated) marked the new, unbound
  generation succeeded in the scheduler's view and in the binder's ledger.

One hand-made log is folded by the job-controller (which writes back what it decides), then by the
scheduler's view and the binder's ledger; all three must tell the same story, and a session over the
view must place the replacements, so that the gang reaches minAvailable again.
"""

from __future__ import annotations

from typing import Any

from support.builders import node
from support.core_log import CoreLog

from contracts import codec, payloads
from contracts.objects import Container, Job, ObjectMeta, PodSpec, PodTemplate, TaskSpec
from contracts.resources import Resources
from services.binder.core.ledger import Ledger, apply_event
from services.job_controller.core.core import JobControllerCore
from services.job_controller.core.objects import job_object
from services.scheduler.core.framework.session import run_session
from services.scheduler.view import SchedulerView

NAMESPACE, JOB = "team-a", "train"
KEY = f"{NAMESPACE}/{JOB}"
REPLICAS = 10
PODS = [f"{JOB}-worker-{i}" for i in range(REPLICAS)]
NODES = ("n1", "n2")


def node_of(name: str) -> str:
    return NODES[PODS.index(name) % 2]


class Log(CoreLog):
    def __init__(self) -> None:
        super().__init__(JobControllerCore())

    def settle_now(self) -> None:
        self.settle(100.0)

    def pod(self, type: str, name: str, **payload: Any) -> None:
        self.append(type, "pod", NAMESPACE, name, {"node": node_of(name), **payload})

    def node(self, type: str, name: str, payload: dict[str, Any] | None = None) -> None:
        self.append(type, "node", None, name, payload)


def running_gang() -> Log:
    """A gang of 10 one-cpu pods (minAvailable 10), running on two 8-cpu nodes."""
    log = Log()
    for name in NODES:
        log.node("NodeRegistered", name, {"object": codec.encode_object(node(name, cpu=8))})
    container = Container(name="c", requests=Resources.parse({"cpu": "1", "memory": "1Gi"}))
    task = TaskSpec(
        name="worker", replicas=REPLICAS, template=PodTemplate(spec=PodSpec(containers=(container,)))
    )
    job = Job(meta=ObjectMeta(JOB, NAMESPACE, uid="uid-train", creation_timestamp=1.0), tasks=(task,))
    log.append("JobSubmitted", "job", NAMESPACE, JOB, {"object": codec.encode_object(job)})
    log.settle_now()
    log.append("PodGroupStatusChanged", "podgroup", NAMESPACE, JOB, {"phase": "Inqueue", "conditions": []})
    log.settle_now()
    for name in PODS:
        log.pod("PodBound", name, plan="p1")
    log.append("PodGroupStatusChanged", "podgroup", NAMESPACE, JOB, {"phase": "Running", "conditions": []})
    for name in PODS:
        log.pod("PodRunning", name)
    log.settle_now()
    assert job_phase(log) == "Running"
    return log


def binder_loses_both_nodes(log: Log) -> None:
    for name in NODES:
        log.node("NodeNotReady", name, {"last_heartbeat": 50.0})


def nodes_heard_again(log: Log) -> None:
    for name in NODES:
        log.node("NodeReady", name)


def succeeded(log: Log, name: str) -> None:
    log.pod("PodSucceeded", name, exit_code=0)


def lost(log: Log, name: str) -> None:
    log.pod("PodLost", name, reason="NodeLost")


def job_phase(log: Log) -> str:
    published = log.state.jobs[KEY].published
    assert published is not None
    return published.phase


def controller_pods(log: Log) -> dict[str, tuple[str, int]]:
    """Each pod's phase and generation as the job-controller's read model shows them."""
    return {name: (pod.phase, pod.retry) for name, pod in log.state.jobs[KEY].pods.items()}


def folded_view(log: Log) -> SchedulerView:
    view = SchedulerView()
    for event in log.events:
        view.apply(event)
    return view


def folded_ledger(log: Log) -> Ledger:
    ledger = Ledger()
    for event in log.events:
        apply_event(ledger, event)
    return ledger


def assert_every_reader_agrees_and_the_gang_can_run_again(log: Log, replaced: list[str]) -> None:
    # the job-controller created the lost pods again, and only those
    pods = controller_pods(log)
    assert job_phase(log) in ("Pending", "Running")  # Pending while fewer than minAvailable run
    assert {name for name, (_, retry) in pods.items() if retry == 1} == set(replaced)
    assert {name for name, (phase, _) in pods.items() if phase == "Pending"} == set(replaced)
    # the scheduler sees each pod as the job-controller does, and the PodGroup as live work
    view = folded_view(log)
    for name, (phase, _) in pods.items():
        shown = view.pod(f"{NAMESPACE}/{name}")
        assert shown is not None
        assert (shown.status.phase, shown.spec.node_name if phase == "Pending" else "") == (phase, ""), name
    assert KEY in {f"{pg.meta.namespace}/{pg.meta.name}" for pg in view.snapshot().podgroups}
    # the binder would accept binds of the replacements: they are pending and on no node
    ledger = folded_ledger(log)
    for name in replaced:
        entry = ledger.pods[f"{NAMESPACE}/{name}"]
        assert (entry.phase, entry.node) == ("Pending", ""), name
    assert {name: entry.pods for name, entry in ledger.nodes.items()} == {name: set() for name in NODES}
    # a session places every replacement: the gang reaches minAvailable with the pods that succeeded
    session = run_session(view.snapshot())
    bound = {bind.task for plan in session.plans for bind in plan.binds}
    assert bound == {f"{NAMESPACE}/{name}" for name in replaced}


def test_shape_a_pods_that_succeeded_before_their_loss_still_count_for_the_gang() -> None:
    """Six pods' successes land before the binder's PodLost, four pods are lost running, and their
    late successes land after their PodLost but before their replacements."""
    log = running_gang()
    binder_loses_both_nodes(log)
    for name in PODS[:6]:
        succeeded(log, name)
    for name in PODS:
        lost(log, name)  # the six finished pods have nothing left to lose
    for name in PODS[6:]:
        succeeded(log, name)  # after PodLost: that run was given up
    log.settle_now()
    nodes_heard_again(log)
    assert_every_reader_agrees_and_the_gang_can_run_again(log, PODS[6:])
    assert [phase for phase, _ in controller_pods(log).values()].count("Succeeded") == 6


def test_shape_b_a_late_success_of_a_lost_run_does_not_finish_its_replacement() -> None:
    """Eight pods succeed, two are lost running; the lost runs' successes land after the job-controller
    created them again, naming the node of the run that was given up."""
    log = running_gang()
    for name in PODS[:8]:
        succeeded(log, name)
    binder_loses_both_nodes(log)
    for name in PODS:
        lost(log, name)
    log.settle_now()  # the replacements of the two lost pods
    for name in PODS[8:]:
        succeeded(log, name)
        log.pod("PodTerminated", name, reason="Lost")  # the old run's end, reported late as well
    nodes_heard_again(log)
    log.settle_now()
    assert_every_reader_agrees_and_the_gang_can_run_again(log, PODS[8:])


def test_a_late_running_report_does_not_put_a_lost_pod_back_on_its_node() -> None:
    log = running_gang()
    binder_loses_both_nodes(log)
    for name in PODS:
        lost(log, name)
    for name in PODS:
        log.pod("PodRunning", name)  # the agents' reports, published before they folded the PodLost
    log.settle_now()
    nodes_heard_again(log)
    assert_every_reader_agrees_and_the_gang_can_run_again(log, PODS)
    lost_event = next(e for e in log.events if e.type == "PodLost")
    assert isinstance(lost_event.data, payloads.PodLost)
    assert job_object(log.state.jobs[KEY]) is not None
