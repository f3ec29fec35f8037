"""What a session keeps counted on a job instead of recounting, and queues drained without ordering."""

from __future__ import annotations

from support.builders import node, pod, podgroup

from services.scheduler.core.framework.action import PriorityQueue
from services.scheduler.core.framework.build import build_model
from services.scheduler.core.model.job import JobInfo
from services.scheduler.core.model.task import TaskStatus
from services.scheduler.core.snapshot import ClusterSnapshot

_READY = (
    TaskStatus.BOUND,
    TaskStatus.BINDING,
    TaskStatus.RUNNING,
    TaskStatus.ALLOCATED,
    TaskStatus.SUCCEEDED,
)


def _recounted(job: JobInfo) -> int:
    return sum(job.status_counts[status] for status in _READY)


def _jobs() -> dict[str, JobInfo]:
    objects: list[object] = [node("n1", cpu=16, memory="64Gi"), node("n2", cpu=16, memory="64Gi")]
    for name in ("mine", "other"):
        objects.append(podgroup(name, min_member=3, phase="Running"))
        objects += [pod(f"{name}-run-{i}", name, node_name="n1", phase="Running") for i in range(2)]
        objects += [pod(f"{name}-wait-{i}", name) for i in range(3)]
        objects.append(pod(f"{name}-done", name, node_name="n2", phase="Succeeded"))
        objects.append(pod(f"{name}-failed", name, node_name="n2", phase="Failed"))
    model = build_model(
        ClusterSnapshot.from_objects(objects), lambda key: key == "default/mine", victims=False
    )
    return model.jobs


def test_the_ready_count_follows_every_status_change() -> None:
    jobs = _jobs()
    mine, other = jobs["default/mine"], jobs["default/other"]
    # modelled tasks (mine) and counted pods of another replica's job (other) alike
    assert mine.ready_task_num() == _recounted(mine) == 3
    assert other.ready_task_num() == _recounted(other) == 3
    moves = [
        TaskStatus.ALLOCATED,
        TaskStatus.PIPELINED,
        TaskStatus.BINDING,
        TaskStatus.RELEASING,
        TaskStatus.PENDING,
    ]
    for task, status in zip(sorted(mine.tasks.values(), key=lambda t: t.uid), moves * 2, strict=False):
        mine.update_task_status(task, status)
        assert mine.ready_task_num() == _recounted(mine), (task.uid, status)


def test_draining_a_queue_returns_every_item_without_comparing_them() -> None:
    compared = 0

    def less(left: int, right: int) -> bool:
        nonlocal compared
        compared += 1
        return left < right

    queue = PriorityQueue(less, range(50))
    compared = 0
    assert sorted(queue.drain()) == list(range(50))
    assert compared == 0 and not queue
