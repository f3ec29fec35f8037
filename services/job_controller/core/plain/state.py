"""What the job-controller knows of plain Pods and PodGroups (submitted without a Job), folded from the
log: per pod, the pod as admission accepted it and what became of it; per PodGroup, whether it exists
and its scheduling status. Mutable containers updated in place by fold.py, like the job state.

A pod is `done` once it will not run any more (finished, stopped or lost on its node) and `gone` once
nothing keeps it either (the rule of a Job's pods: a finished pod once its deletion was asked). A record
is forgotten once it was withdrawn (PodWithdrawn / PodGroupWithdrawn, or an orphan: an output that
landed after its object was forgotten) and nothing of it is left on the log's side: the pod gone or
never created, the group deleted or never created, a pod's own group gone too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contracts.job_shape import GROUP_NAME
from contracts.objects import Pod, PodGroup, PodGroupCondition, PodStatus
from services.job_controller.core.pod_lifecycle import FINISHED_POD_PHASES, gone
from services.job_controller.core.state import Cause


@dataclass(slots=True)
class PlainPod:
    pod: Pod  # as admission accepted it (annotated with its PodGroup's name)
    cause: Cause  # its PodSubmitted; the seq is the incarnation, part of every output id
    created: bool = False  # PodCreated folded
    node: str = ""  # "" while unbound
    phase: str = "Pending"  # Pending | Running | Succeeded | Failed
    evicting: bool = False
    deletion_node: str | None = None  # the node named by the last PodDeletionRequested; None: not asked
    deletion_time: float | None = None
    ended: bool = False  # PodTerminated or PodLost
    done_cause: Cause | None = None  # the event that made it done (finished, stopped or lost)
    details: PodStatus = field(default_factory=PodStatus)  # reason, message, exit code, start time
    withdrawn: Cause | None = None
    successor: tuple[Pod, PodGroup | None, Cause] | None = None  # submitted again while being removed

    @property
    def key(self) -> str:
        return self.pod.meta.key

    @property
    def group_key(self) -> str:
        return f"{self.pod.meta.namespace}/{self.pod.meta.annotations.get(GROUP_NAME, '')}"

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED_POD_PHASES

    @property
    def done(self) -> bool:
        """It will not run (any more): finished, or stopped or lost on its node."""
        return self.finished or self.ended

    @property
    def gone(self) -> bool:
        return gone(self)  # pod_lifecycle.gone: a Job's pod's rule

    @property
    def stop_unrequested(self) -> bool:
        """Withdrawn, created, still on (or headed for) a node, and not yet asked to stop where it is."""
        return (
            self.withdrawn is not None
            and self.created
            and not self.gone
            and not self.evicting
            and self.deletion_node != self.node
        )


@dataclass(slots=True)
class PlainGroup:
    podgroup: PodGroup  # as admission accepted it
    cause: Cause  # the event that started the record (seq: the incarnation)
    owner: str | None = None  # the plain pod whose own group this is; None for a user's PodGroup
    created: bool = False  # PodGroupCreated folded
    deleted: bool = False  # PodGroupDeleted folded
    phase: str = "Pending"
    conditions: tuple[PodGroupCondition, ...] = ()
    withdrawn: Cause | None = None
    successor: tuple[PodGroup, Cause] | None = None

    @property
    def key(self) -> str:
        return self.podgroup.meta.key

    @property
    def exists(self) -> bool:
        return self.created and not self.deleted


@dataclass(slots=True)
class PlainState:
    pods: dict[str, PlainPod] = field(default_factory=dict)  # by pod key
    groups: dict[str, PlainGroup] = field(default_factory=dict)  # by PodGroup key
    members: dict[str, set[str]] = field(default_factory=dict)  # group key -> its pods' keys (derived)


def put_pod(state: PlainState, record: PlainPod) -> None:
    state.pods[record.key] = record
    state.members.setdefault(record.group_key, set()).add(record.key)


def drop_pod(state: PlainState, record: PlainPod) -> None:
    del state.pods[record.key]
    members = state.members.get(record.group_key)
    if members is not None:
        members.discard(record.key)
        if not members:
            del state.members[record.group_key]


def own_group(state: PlainState, record: PlainPod) -> PlainGroup | None:
    group = state.groups.get(record.group_key)
    return group if group is not None and group.owner == record.pod.meta.name else None
