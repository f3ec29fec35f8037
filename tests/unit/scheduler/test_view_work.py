"""What the view tells a replica about whether a session could do anything: PodGroups waiting (a pod for
a node, or the group to be enqueued) and PodGroups whose pods changed since it last asked."""

from __future__ import annotations

from typing import Any

from support.builders import gang, node, podgroup

from contracts.codec import encode_object
from contracts.events import EVENT_TYPES
from services.scheduler.view import SchedulerView
from shared.runner_types import Event

CREATED = {"Node": "NodeRegistered", "Pod": "PodCreated", "PodGroup": "PodGroupCreated"}


class Log:
    def __init__(self) -> None:
        self.view = SchedulerView()
        self.seq = 0

    def add(self, type: str, key: str, payload: dict[str, Any]) -> None:
        self.seq += 1
        namespace, _, name = key.rpartition("/")
        kind = EVENT_TYPES[type].subject_kind
        event = Event(self.seq, type, kind, namespace or None, name, payload, f"e{self.seq}", 1.0, key)
        self.view.apply(event)

    def create(self, *objects: Any) -> None:
        for obj in objects:
            self.add(CREATED[obj.kind], obj.meta.key, {"object": encode_object(obj)})


def test_waiting_groups_follow_pending_pods_and_pending_podgroups() -> None:
    log = Log()
    log.create(node("n1"), podgroup("early", phase="Pending"), *gang("g", 2))
    view = log.view
    assert view.waiting_groups() == {"default/early", "default/g"}
    log.add("PodGroupStatusChanged", "default/early", {"phase": "Inqueue", "conditions": []})
    assert view.waiting_groups() == {"default/g"}  # Inqueue without pods: nothing to do until they come
    log.add("PodBound", "default/g-worker-0", {"node": "n1", "plan": "p"})
    assert view.waiting_groups() == {"default/g"}
    log.add("PodBound", "default/g-worker-1", {"node": "n1", "plan": "p"})
    assert view.waiting_groups() == set()
    log.add("PodDeletionRequested", "default/g-worker-1", {"reason": "test"})
    log.add("PodTerminated", "default/g-worker-1", {"node": "n1"})
    assert view.waiting_groups() == set()


def test_touched_groups_are_those_whose_pods_changed_since_the_last_read() -> None:
    log = Log()
    log.create(node("n1"), *gang("g", 2), *gang("h", 1))
    view = log.view
    assert view.take_touched() == {"default/g", "default/h"}
    assert view.take_touched() == set()
    log.add("PodGroupStatusChanged", "default/g", {"phase": "Running", "conditions": []})
    assert view.take_touched() == set()  # a status is what a session wrote, not a pod's change
    log.add("PodBound", "default/h-worker-0", {"node": "n1", "plan": "p"})
    log.add("PodRunning", "default/h-worker-0", {"node": "n1"})
    assert view.take_touched() == {"default/h"}
