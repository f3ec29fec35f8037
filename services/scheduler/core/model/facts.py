"""What a session reads of a pod to make it a task, computed once per version of the pod (pure).

Turning a pod into a task reads its annotations (group, role, task priority, preemptable), its name
(the replica index), its requests (the effective request folds containers, init containers and
overhead) and its phase and placement (the task status). None of it depends on the session, so the
scheduler's view computes a pod's facts when the pod changes (`core/live.py`) and every session opens
from them; offline producers (`lahar simulate`, tests) compute them at session open.

What does depend on the session stays out: the job's priority (priority classes may change), the
request vector (its columns depend on the session's resource dimensions) and whether the pod's job is
owned.
"""

from __future__ import annotations

from contracts.job_shape import GROUP_NAME
from contracts.objects import Pod
from contracts.resources import Resources
from services.scheduler.core.model.task import (
    TASK_PRIORITY_ANNOTATION,
    TaskStatus,
    pod_cooldown_s,
    pod_index,
    pod_preemptable,
    pod_role,
    status_of_pod,
)

Signature = tuple[object, ...]


class TaskFacts:
    """One pod's session-independent task fields. Immutable by convention: shared by every session that
    opens while the pod stays as it is."""

    __slots__ = (
        "best_effort",
        "cooldown",
        "creation_timestamp",
        "group",
        "index",
        "key",
        "name",
        "namespace",
        "node",
        "nominated",
        "pod",
        "pod_priority",
        "preemptable",
        "requests",
        "role",
        "signature",
        "status",
        "task_priority",
        "uid",
    )

    def __init__(self, pod: Pod) -> None:
        meta = pod.meta
        spec = pod.spec
        self.pod = pod
        self.key = meta.key
        self.uid = meta.uid or self.key
        self.name = meta.name
        self.namespace = meta.namespace
        group = meta.annotations.get(GROUP_NAME, "")
        # the PodGroup the annotation names; "" for a pod of none (the session gives a pending one its
        # implicit group)
        self.group = f"{meta.namespace}/{group}" if group else ""
        self.role = pod_role(pod)
        self.index = pod_index(pod)
        self.creation_timestamp = meta.creation_timestamp
        annotated = meta.annotations.get(TASK_PRIORITY_ANNOTATION)
        self.task_priority: int | None = (
            int(annotated) if annotated and annotated.lstrip("-").isdigit() else None
        )
        self.pod_priority: int | None = spec.priority
        self.requests: Resources = spec.effective_requests()
        self.best_effort = self.requests.is_empty()
        self.preemptable = pod_preemptable(pod)
        self.cooldown = pod_cooldown_s(pod)
        self.status: TaskStatus = status_of_pod(pod)
        self.node = spec.node_name
        # the node whose room a preemption reserved for the pod, while it is pending
        self.nominated = pod.status.nominated_node_name
        # pods with the same placement constraints share static predicate results within a session
        self.signature: Signature = (
            tuple(sorted(spec.node_selector.items())),
            spec.node_affinity,
            spec.tolerations,
        )

    @property
    def waits(self) -> bool:
        """Pending, unbound and not being deleted (Volcano's Pending task)."""
        return self.status is TaskStatus.PENDING

    def __repr__(self) -> str:
        return f"TaskFacts({self.key} {self.status.name} node={self.node or '-'})"


def task_facts(pod: Pod, previous: TaskFacts | None = None) -> TaskFacts:
    """The facts of `pod` (the view calls this once per pod change; the count of calls is what tests
    check). `previous`: the facts of an earlier version of the same pod; when the pod changed only
    where it runs and in what phase (bound, running, finished, being deleted, nominated: what the log
    changes in a pod), the rest is taken from them instead of being read again."""
    if previous is None or not _same_task(previous.pod, pod):
        return TaskFacts(pod)
    facts: TaskFacts = object.__new__(TaskFacts)
    for name in _KEPT:
        setattr(facts, name, getattr(previous, name))
    facts.pod = pod
    facts.status = status_of_pod(pod)
    facts.node = pod.spec.node_name
    facts.nominated = pod.status.nominated_node_name
    return facts


_KEPT = tuple(name for name in TaskFacts.__slots__ if name not in ("pod", "status", "node", "nominated"))


def _same_task(old: Pod, new: Pod) -> bool:
    """Whether everything the facts read but the placement and the phase is the same (the log's pod
    changes share the unchanged parts, so identity is the common answer; anything else is read anew)."""
    if old.meta is not new.meta:
        a, b = old.meta, new.meta
        if not (
            a.annotations is b.annotations
            and a.labels is b.labels
            and a.name == b.name
            and a.namespace == b.namespace
            and a.uid == b.uid
            and a.creation_timestamp == b.creation_timestamp
        ):
            return False
    if old.spec is not new.spec:
        c, d = old.spec, new.spec
        if not (
            c.containers is d.containers
            and c.init_containers is d.init_containers
            and c.overhead is d.overhead
            and c.node_selector is d.node_selector
            and c.node_affinity is d.node_affinity
            and c.tolerations is d.tolerations
            and c.priority == d.priority
        ):
            return False
    return True
