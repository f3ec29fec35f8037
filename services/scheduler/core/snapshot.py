"""The immutable input of a scheduling session: every object the scheduler reads, at one point in the log.

A snapshot is a value: the scheduler service builds it from its event-fed view, `lahar simulate` from
YAML files, replay from a recorded log. Sessions never modify it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from contracts.objects import HyperNode, Node, ObjectMeta, Pod, PodGroup, PriorityClass, Queue

DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    nodes: tuple[Node, ...] = ()
    pods: tuple[Pod, ...] = ()
    podgroups: tuple[PodGroup, ...] = ()
    queues: tuple[Queue, ...] = ()
    priority_classes: tuple[PriorityClass, ...] = ()
    hypernodes: tuple[HyperNode, ...] = ()
    # the event-log sequence this snapshot reflects (0 for offline inputs)
    sequence: int = 0

    @classmethod
    def from_objects(cls, objects: Iterable[object], sequence: int = 0) -> ClusterSnapshot:
        """Sort objects by kind; other kinds (Job, Command) are ignored here (the job-controller expands
        Jobs before the scheduler sees them). The `default` queue always exists, as in Volcano."""
        buckets: dict[type, list] = {
            Node: [],
            Pod: [],
            PodGroup: [],
            Queue: [],
            PriorityClass: [],
            HyperNode: [],
        }
        for obj in objects:
            bucket = buckets.get(type(obj))
            if bucket is not None:
                bucket.append(obj)
        queues = buckets[Queue]
        if not any(q.meta.name == DEFAULT_QUEUE for q in queues):
            queues.insert(
                0,
                Queue(
                    meta=ObjectMeta(
                        name=DEFAULT_QUEUE, namespace="", uid=DEFAULT_QUEUE, creation_timestamp=-1.0
                    )
                ),
            )
        return cls(
            nodes=tuple(buckets[Node]),
            pods=tuple(buckets[Pod]),
            podgroups=tuple(buckets[PodGroup]),
            queues=tuple(queues),
            priority_classes=tuple(buckets[PriorityClass]),
            hypernodes=tuple(buckets[HyperNode]),
            sequence=sequence,
        )
