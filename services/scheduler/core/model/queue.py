"""A Queue as the scheduler sees it (Volcano's QueueInfo)."""

from __future__ import annotations

from contracts.objects import Queue
from contracts.queue_overcommit import parse_overcommit_factor
from contracts.resources import Resources

HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"
FIFO = "fifo"


class QueueInfo:
    __slots__ = (
        "capability",
        "creation_timestamp",
        "deserved",
        "fifo",
        "guarantee",
        "hierarchy",
        "hierarchy_weights",
        "name",
        "overcommit_factor",
        "parent",
        "priority",
        "queue",
        "reclaimable",
        "state",
        "uid",
        "weight",
    )

    def __init__(self, queue: Queue) -> None:
        self.queue = queue
        self.name = queue.meta.name
        self.uid = queue.meta.uid or queue.meta.name
        self.weight = max(queue.weight, 1)
        self.capability: Resources | None = queue.capability
        self.deserved: Resources | None = queue.deserved
        self.guarantee: Resources | None = queue.guarantee
        self.reclaimable = queue.is_reclaimable
        self.parent = queue.parent
        self.priority = queue.priority
        self.state = queue.status.state or "Open"
        self.creation_timestamp = queue.meta.creation_timestamp
        self.hierarchy = queue.meta.annotations.get(HIERARCHY_ANNOTATION, "")
        self.hierarchy_weights = queue.meta.annotations.get(HIERARCHY_WEIGHTS_ANNOTATION, "")
        # `dequeueStrategy: fifo`: a job that cannot be placed holds back the jobs behind it
        self.fifo = queue.dequeue_strategy == FIFO
        # `volcano.sh/overcommit-factor`: the queue's own enqueue budget (None: none; a str: why the value
        # is invalid, which keeps the queue's jobs Pending)
        self.overcommit_factor: float | str | None = parse_overcommit_factor(queue.meta.annotations)

    @property
    def is_open(self) -> bool:
        return self.state == "Open"

    def __repr__(self) -> str:
        return f"Queue({self.name} w={self.weight} {self.state})"
