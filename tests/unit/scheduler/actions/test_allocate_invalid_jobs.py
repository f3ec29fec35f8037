"""A job allocate cannot consider yet: which ones get an Unschedulable condition (Volcano's gang says
nothing of a job without tasks)."""

from __future__ import annotations

from support.builders import node, pod, podgroup, run

from services.scheduler.core.conf import default_conf


def _condition(objects: list[object]) -> tuple[str, str] | None:
    update = run(objects, default_conf()).podgroups.get("default/train")
    if update is None:
        return None
    found = [c for c in update.conditions if c.type == "Unschedulable" and c.status == "True"]
    return (found[0].reason, found[0].message) if found else None


def test_an_enqueued_job_whose_pods_are_not_created_yet_is_not_called_unschedulable() -> None:
    group = podgroup("train", min_member=2, min_task_member={"worker": 2})
    assert _condition([node("n1"), group]) is None


def test_a_job_with_fewer_pods_of_a_task_than_its_minimum_is() -> None:
    group = podgroup("train", min_member=2, min_task_member={"worker": 2})
    reason, message = _condition([node("n1"), group, pod("train-worker-0", "train", role="worker")]) or (
        "",
        "",
    )
    assert reason == "NotEnoughPodsOfTask" and "valid 1, min 2" in message
