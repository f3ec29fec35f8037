"""The immutable input of a scheduling session: every object the scheduler reads, at one point in the log.

A snapshot is a value: the scheduler service builds it from its event-fed view, `lahar simulate` from
YAML files, replay from a recorded log. Sessions never modify it.

A producer that keeps the node table between sessions (the scheduler's view) passes it as `node_base`,
the same nodes in the same order as `nodes`; without one a session builds it from the Node objects. It
likewise passes each pod's task facts (`task_facts`, in the order of `pods`); without them a session
computes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from contracts.job_shape import DEFAULT_QUEUE, GROUP_NAME
from contracts.objects import HyperNode, Node, ObjectMeta, Pod, PodGroup, PriorityClass, Queue
from contracts.usage import NodeUsage
from services.scheduler.core.model.facts import TaskFacts, task_facts
from services.scheduler.core.model.node_base import NodeBase

ROOT_QUEUE = "root"


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
    node_base: NodeBase | None = field(default=None, compare=False, repr=False)
    # each pod's task facts, in the order of `pods` (the scheduler's view keeps them between sessions)
    task_facts: tuple[TaskFacts, ...] | None = field(default=None, compare=False, repr=False)
    # node name -> its latest usage sample, fresh ones only (the usage plugin's input)
    usage: Mapping[str, NodeUsage] = field(default_factory=dict, compare=False, repr=False)

    def nodes_as_base(self) -> NodeBase:
        return self.node_base if self.node_base is not None else NodeBase.build(self.nodes)

    def facts(self) -> tuple[TaskFacts, ...]:
        """Every pod's task facts: kept ones, else computed now."""
        if self.task_facts is not None:
            return self.task_facts
        return tuple(task_facts(pod) for pod in self.pods)

    @classmethod
    def from_objects(cls, objects: Iterable[object], sequence: int = 0) -> ClusterSnapshot:
        """Sort objects by kind; other kinds (Job, Command) are ignored here (the job-controller expands
        Jobs before the scheduler sees them). The `default` queue always exists, as in Volcano."""
        buckets: dict[type, list[Any]] = {
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


def podgroup_key(pod: Pod) -> str:
    """The PodGroup a pod schedules with: its group annotation, else the implicit group of one that a
    session gives it (`podgroup-<uid>`)."""
    group = pod.meta.annotations.get(GROUP_NAME, "")
    if not group:
        group = f"podgroup-{pod.meta.uid or pod.meta.name}"
    return f"{pod.meta.namespace}/{group}"
