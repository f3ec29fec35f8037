"""Plain Pods and PodGroups (submitted without a Job) in the job-controller: what it writes for them, in
which order, and when it forgets them; run through the whole controller core (Jobs' core beside), so
each side is also shown to leave the other's objects alone."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from support.core_log import CoreLog

from contracts import payloads
from contracts.codec import decode_object, encode_object
from contracts.events import EVENT_TYPES
from contracts.objects import Container, ObjectMeta, Pod, PodGroup, PodSpec, frozen_map
from services.job_controller.core.controller import ControllerCore
from shared.runner_types import Event, Output

GROUP_NAME = "scheduling.k8s.io/group-name"
OWNER = "owner.lahar.dev/podgroup"


def plain_pod(name: str, group: str, uid: str = "") -> Pod:
    return Pod(
        meta=ObjectMeta(
            name=name,
            uid=uid or f"uid-{name}",
            annotations=frozen_map({GROUP_NAME: group}),
            creation_timestamp=1.0,
        ),
        spec=PodSpec(containers=(Container("main", command=("true",)),), scheduler_name="volcano"),
    )


def own_group(pod: Pod, queue: str = "default") -> PodGroup:
    name = pod.meta.annotations[GROUP_NAME]
    annotations = frozen_map({OWNER: f"Pod/{pod.meta.name}"})
    return PodGroup(meta=ObjectMeta(name=name, uid=name, annotations=annotations), min_member=1, queue=queue)


def users_group(name: str, queue: str = "research") -> PodGroup:
    return PodGroup(
        meta=ObjectMeta(name=name, uid=name, annotations=frozen_map({OWNER: "User"})),
        min_member=2,
        queue=queue,
    )


class Controller(CoreLog):
    """The core over an in-memory log; `settle` reconciles and folds the outputs back until quiet."""

    def __init__(self) -> None:
        super().__init__(ControllerCore(), now=0.0)
        self.written: list[Output] = []

    def fold(self, type: str, key: str, payload: dict[str, Any] | None = None, at: float = 0.0) -> Event:
        self.now = at
        namespace, _, name = key.partition("/")
        return self.append(type, EVENT_TYPES[type].subject_kind, namespace, name, payload)

    def submit(self, pod: Pod, group: PodGroup | None = None) -> Event:
        payload = {"object": encode_object(pod), "podgroup": None if group is None else encode_object(group)}
        return self.fold("PodSubmitted", pod.meta.key, payload)

    def settle(self, now: float = 100.0) -> list[tuple[str, str]]:  # type: ignore[override]
        """(type, key) of everything written until reconcile has nothing left to say."""
        self.now = 0.0
        outputs = super().settle(now)
        self.written.extend(outputs)
        return [(o.type, f"{o.namespace}/{o.name}") for o in outputs]

    def output(self, type: str) -> Output:
        return [o for o in self.written if o.type == type][-1]

    def rendered(self, kind: str, key: str) -> Any:
        namespace, _, name = key.partition("/")
        value = self.core.render(self.state, (kind, namespace, name))
        return None if value is None else decode_object(value)

    def run(self, key: str, node: str = "n1") -> None:
        self.fold("PodBound", key, {"node": node, "plan": "p1"})
        self.fold("PodRunning", key, {"node": node}, at=7.0)


POD = plain_pod("p", "podgroup-uid-p")


def test_a_plain_pods_own_group_comes_first_then_the_pod_in_the_groups_queue() -> None:
    controller = Controller()
    submitted = controller.submit(POD, own_group(POD, queue="research"))
    assert controller.settle() == [("PodGroupCreated", "default/podgroup-uid-p"), ("PodCreated", "default/p")]
    created = controller.output("PodCreated").payload.decoded()
    assert created.meta.uid == "uid-p" and created.meta.annotations["volcano.sh/queue-name"] == "research"
    group = controller.output("PodGroupCreated")
    assert group.causation_id == submitted.id and group.correlation_id == "default/p"
    assert controller.state.jobs.core.jobs == {}  # the Jobs' core took none of it for an orphan
    assert controller.rendered("podgroup", "default/podgroup-uid-p").queue == "research"
    assert controller.settle() == []  # level-triggered: nothing more to say


def test_a_finished_plain_pod_stays_visible_and_its_own_group_goes() -> None:
    controller = Controller()
    controller.submit(POD, own_group(POD))
    controller.settle()
    controller.run("default/p")
    running = controller.rendered("pod", "default/p")
    assert (running.status.phase, running.spec.node_name, running.status.start_time) == ("Running", "n1", 7.0)
    assert controller.rendered("podgroup", "default/podgroup-uid-p").status.running == 1
    succeeded = controller.fold("PodSucceeded", "default/p", {"node": "n1", "exit_code": 0})
    assert controller.settle() == [("PodGroupDeleted", "default/podgroup-uid-p")]
    assert controller.output("PodGroupDeleted").causation_id == succeeded.id
    done = controller.rendered("pod", "default/p")
    assert (done.status.phase, done.status.exit_code) == ("Succeeded", 0)
    assert controller.rendered("podgroup", "default/podgroup-uid-p") is None


def test_an_evicted_plain_pod_is_not_created_again_it_ends_failed() -> None:
    controller = Controller()
    controller.submit(POD, own_group(POD))
    controller.settle()
    controller.run("default/p")
    controller.fold("PodEvicting", "default/p", {"node": "n1", "reason": "preempted", "plan": "p2"}, at=9.0)
    assert controller.rendered("pod", "default/p").meta.deletion_timestamp == 9.0
    controller.fold("PodTerminated", "default/p", {"node": "n1", "reason": "Evicted"})
    assert controller.settle() == [("PodGroupDeleted", "default/podgroup-uid-p")]
    failed = controller.rendered("pod", "default/p")
    assert (failed.status.phase, failed.status.reason) == ("Failed", "Evicted")


def test_withdrawing_a_running_pod_stops_it_then_forgets_it_and_its_group() -> None:
    controller = Controller()
    controller.submit(POD, own_group(POD))
    controller.settle()
    controller.run("default/p")
    withdrawn = controller.fold("PodWithdrawn", "default/p")
    assert controller.settle() == [
        ("PodGroupDeleted", "default/podgroup-uid-p"),
        ("PodDeletionRequested", "default/p"),
    ]
    stop = controller.output("PodDeletionRequested")
    assert stop.payload == payloads.PodDeletionRequested(reason="PodDeleted", node="n1")
    assert stop.causation_id == withdrawn.id
    assert controller.rendered("pod", "default/p").meta.deletion_timestamp is not None  # still stopping
    controller.fold("PodTerminated", "default/p", {"node": "n1", "reason": "Deleted"})
    assert controller.rendered("pod", "default/p") is None
    assert controller.state.plain.pods == {} and controller.state.plain.groups == {}
    assert controller.state.plain.members == {}


def test_a_pod_withdrawn_before_it_was_created_writes_nothing_more_and_a_late_creation_is_stopped() -> None:
    controller = Controller()
    controller.submit(POD, own_group(POD))
    [create_group] = controller.core.reconcile(controller.state, 0.0)  # decided, not yet on the log
    controller.fold("PodWithdrawn", "default/p")
    assert controller.settle() == [] and controller.state.plain.pods == {}
    # the group's creation lands after all: an orphan, deleted
    controller.fold("PodGroupCreated", "default/podgroup-uid-p", create_group.plain_payload)
    assert controller.settle() == [("PodGroupDeleted", "default/podgroup-uid-p")]
    # and a pod's: stopped before any node takes it
    controller.fold("PodCreated", "default/p", {"object": encode_object(POD)})
    assert controller.settle() == [("PodDeletionRequested", "default/p")]
    assert controller.state.plain.pods == {} and controller.state.plain.groups == {}


def test_a_pod_submitted_again_while_its_predecessor_stops_starts_after_it() -> None:
    controller = Controller()
    controller.submit(POD, own_group(POD))
    controller.settle()
    controller.run("default/p")
    controller.fold("PodWithdrawn", "default/p")
    controller.settle()
    again = plain_pod("p", "podgroup-uid-2", uid="uid-2")
    controller.submit(again, own_group(again))
    assert controller.settle() == []  # the first one still runs
    controller.fold("PodTerminated", "default/p", {"node": "n1", "reason": "Deleted"})
    assert controller.settle() == [("PodGroupCreated", "default/podgroup-uid-2"), ("PodCreated", "default/p")]
    assert controller.output("PodCreated").payload.decoded().meta.uid == "uid-2"
    assert controller.rendered("pod", "default/p").status.phase == "Pending"


def test_pods_of_a_users_podgroup_wait_for_it_and_stay_when_it_is_withdrawn() -> None:
    controller = Controller()
    members = [plain_pod(f"m{i}", "gang") for i in range(2)]
    for pod in members:
        controller.submit(pod)
    assert controller.settle() == []  # no group yet
    controller.fold("PodGroupSubmitted", "default/gang", {"object": encode_object(users_group("gang"))})
    assert controller.settle() == [
        ("PodGroupCreated", "default/gang"),
        ("PodCreated", "default/m0"),
        ("PodCreated", "default/m1"),
    ]
    controller.run("default/m0")
    controller.fold("PodGroupStatusChanged", "default/gang", {"phase": "Running", "conditions": []})
    gang = controller.rendered("podgroup", "default/gang")
    assert (gang.status.phase, gang.status.running, gang.min_member) == ("Running", 1, 2)
    controller.fold("PodGroupWithdrawn", "default/gang")
    assert controller.settle() == [("PodGroupDeleted", "default/gang")]
    assert controller.state.plain.groups == {}
    assert controller.rendered("pod", "default/m0").status.phase == "Running"  # Volcano keeps them too


def test_events_of_an_earlier_pod_of_the_same_name_are_ignored() -> None:
    controller = Controller()
    controller.submit(POD, own_group(POD))
    controller.settle()
    controller.run("default/p", node="n2")
    controller.fold("PodFailed", "default/p", {"node": "n1", "exit_code": 1, "reason": "Error"})
    assert controller.rendered("pod", "default/p").status.phase == "Running"


def test_the_checkpoint_keeps_plain_objects_and_the_read_model_lists_them() -> None:
    controller = Controller()
    controller.submit(POD, own_group(POD))
    controller.fold("PodGroupSubmitted", "default/gang", {"object": encode_object(users_group("gang"))})
    controller.submit(plain_pod("m0", "gang"))
    controller.settle()
    controller.run("default/p")
    controller.fold("PodWithdrawn", "default/p")
    controller.settle()
    loaded = controller.core.load(controller.core.dump(controller.state))
    assert loaded.plain == controller.state.plain
    keys = sorted(controller.core.keys(loaded))
    assert keys == [
        ("pod", "default", "m0"),
        ("pod", "default", "p"),
        ("podgroup", "default", "gang"),
    ]
    assert all(
        controller.core.render(loaded, key) == controller.core.render(controller.state, key) for key in keys
    )
    assert {key for key in controller.state.jobs.dirty} >= set(keys)


def test_a_plain_pod_never_reaches_a_job_record_even_with_a_jobs_name() -> None:
    controller = Controller()
    pod = replace(POD, meta=replace(POD.meta, name="train-worker-0"))
    controller.submit(pod, own_group(pod))
    controller.settle()
    controller.run("default/train-worker-0")
    assert controller.state.jobs.core.jobs == {} and controller.state.jobs.core.pod_owner == {}


def test_a_plain_pod_shows_the_room_a_preemption_reserved_until_it_is_bound() -> None:
    controller = Controller()
    controller.submit(POD, own_group(POD))
    controller.settle()
    controller.fold(
        "PodNominated", "default/p", {"node": "n2", "reason": "preempt: evicting x", "plan": "p1"}
    )
    assert controller.rendered("pod", "default/p").status.nominated_node_name == "n2"
    controller.run("default/p", node="n2")
    bound = controller.rendered("pod", "default/p")
    assert (bound.spec.node_name, bound.status.nominated_node_name) == ("n2", "")
    controller.fold("PodNominated", "default/p", {"node": "n3", "reason": "stale", "plan": "p0"})
    assert controller.rendered("pod", "default/p").status.nominated_node_name == ""
