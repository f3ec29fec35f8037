"""The job-controller core with its read model: the Jobs, PodGroups and Pods of the state (objects.py),
which of them an event changed, and the few status details the controller's own state does not keep.

`ProjectedCore` (a shared.projected_core.Projection) wraps `JobControllerCore`: beside the
controller's state it keeps pod exit codes, reasons, start times and nominated nodes (pod_lifecycle),
PodGroup conditions and when a pod's stop was asked for, and marks the objects each event changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from contracts import codec, payloads
from contracts.events import JOB_CONTROLLER
from contracts.objects import PodGroupCondition, PodStatus
from contracts.read_model_kinds import KINDS_BY_WRITER
from services.job_controller.core import pod_lifecycle, render
from services.job_controller.core.core import JobControllerCore
from services.job_controller.core.objects import podgroup_conditions
from services.job_controller.core.state import JobRecord, PodRecord, State, job_namespace, pod_key
from shared.projected_core import ObjectKey, ProjectedState, Projection
from shared.runner_types import Event

KINDS: tuple[str, ...] = KINDS_BY_WRITER[JOB_CONTROLLER]
# events after which every object they change still exists: its details need no forgetting
_NEVER_ENDS = frozenset(
    {"PodCreated", "PodBound", "PodNominated", "PodRunning", "PodEvicting", "PodGroupCreated"}
    | {"PodGroupStatusChanged"}
    | {"JobSubmitted", "JobUpdated", "JobStatusChanged"}
)
_NO_DETAILS = PodStatus()


@dataclass(slots=True)
class Projected(ProjectedState[State]):
    pod_details: dict[str, PodStatus] = field(default_factory=dict)  # pod key -> reason, exit code, ...
    deletion_times: dict[str, float] = field(default_factory=dict)  # pod key -> when its stop was asked
    conditions: dict[str, tuple[PodGroupCondition, ...]] = field(default_factory=dict)  # PodGroup key


class ProjectedCore(Projection[State, Projected]):
    """JobControllerCore plus its read model (see the module docstring)."""

    kinds = KINDS

    def __init__(self, inner: JobControllerCore | None = None) -> None:
        super().__init__(inner or JobControllerCore())

    def initial(self) -> Projected:
        return Projected(self.inner.initial())

    def apply(self, state: Projected, event: Event) -> Projected:
        owner = _owner(state.core, event)
        before = state.core.jobs.get(owner) if owner else None
        pod_before = before.pods.get(event.name) if before is not None and event.kind == "pod" else None
        self.inner.apply(state.core, event)
        owner = owner or _owner(state.core, event)
        after = state.core.jobs.get(owner) if owner else None
        if before is None and after is None:
            return state  # about nothing the controller knows
        if after is not None:
            _note_details(state, after, event, pod_before)
        pod_after = after.pods.get(event.name) if after is not None and event.kind == "pod" else None
        counted = _counted(pod_before) != _counted(pod_after)
        changed = _changed_keys(event, owner or "", after, counted)
        forgotten = before is not None and before is not after
        if before is not None and forgotten:
            changed.extend(_record_keys(before))  # forgotten (or replaced by its successor)
        for key in changed:
            state.dirty[key] = event.seq
            if forgotten or event.type not in _NEVER_ENDS:
                _forget_details(state, key)
        return state

    def render(self, state: Projected, key: ObjectKey) -> Mapping[str, Any] | None:
        """codec.encode_object of objects.py's object for `key`, encoded directly (render.py)."""
        kind, namespace, name = key
        full = pod_key(namespace or "", name)
        core = state.core
        if kind == "pod":
            record = core.jobs.get(core.pod_owner.get(full, ""))
            return render.pod_value(record, name, state.pod_details.get(full), state.deletion_times.get(full))
        if kind == "job":
            return render.job_value(core.jobs.get(full))
        if kind == "podgroup":
            conditions = state.conditions.get(full, ())
            return render.podgroup_value(core.jobs.get(full), conditions, core.priority_classes)
        return None

    def keys(self, state: Projected) -> Iterator[ObjectKey]:
        for record in state.core.jobs.values():
            for key in _record_keys(record):
                if _exists(state.core, key):
                    yield key

    def details_to_plain(self, state: Projected) -> dict[str, Any]:
        return {
            "pod_details": {k: codec.encode(v) for k, v in state.pod_details.items()},
            "deletion_times": state.deletion_times,
            "conditions": {k: [codec.encode(c) for c in v] for k, v in state.conditions.items()},
        }

    def from_checkpoint(self, core: State, document: Mapping[str, Any]) -> Projected:
        return Projected(
            core,
            pod_details={k: codec.decode(PodStatus, v) for k, v in document["pod_details"].items()},
            deletion_times={k: float(v) for k, v in document["deletion_times"].items()},
            conditions={
                k: tuple(codec.decode(PodGroupCondition, c) for c in v)
                for k, v in document["conditions"].items()
            },
        )


def _exists(core: State, key: ObjectKey) -> bool:
    """Whether an object has a read-model value (what the objects.py functions check, without building
    the object: this runs for every event)."""
    kind, namespace, name = key
    full = pod_key(namespace or "", name)
    if kind == "pod":
        record = core.jobs.get(core.pod_owner.get(full, ""))
        pod = record.pods.get(name) if record is not None and record.job is not None else None
        return pod is not None and not pod.gone
    record = core.jobs.get(full)
    if record is None or record.job is None:
        return False
    return record.active if kind == "job" else record.podgroup_exists


def _owner(core: State, event: Event) -> str | None:
    """The key of the job an event is about (its record may not exist yet)."""
    key = pod_key(event.namespace or "", event.name)
    if event.kind in ("job", "podgroup"):
        return key
    if event.kind == "pod":
        return core.pod_owner.get(key)
    return None


def _counted(pod: PodRecord | None) -> str | None:
    return None if pod is None else pod.counted_as


def _changed_keys(event: Event, owner: str, record: JobRecord | None, counted: bool) -> list[ObjectKey]:
    """The objects whose read-model value an event may change (besides a forgotten record's); a pod
    event changes its job's and PodGroup's only when it moves the pod's count (`counted`)."""
    namespace, _, job = owner.partition("/")
    if event.kind == "job":
        # a changed spec shows on an existing PodGroup too; a status only on the job
        keys: list[ObjectKey] = [("job", namespace, job)]
        if event.type != "JobStatusChanged" and record is not None and record.podgroup_exists:
            keys.append(("podgroup", namespace, job))
        return keys
    if event.kind == "podgroup":
        return [("podgroup", namespace, job)]
    if event.kind == "pod" and record is not None:
        # the job's and the PodGroup's statuses count the job's pods
        if not counted:
            return [("pod", event.namespace, event.name)]
        return [("pod", event.namespace, event.name), ("podgroup", namespace, job), ("job", namespace, job)]
    return []


def _record_keys(record: JobRecord) -> list[ObjectKey]:
    namespace = job_namespace(record.key)
    name = record.key.partition("/")[2]
    pods: list[ObjectKey] = [("pod", namespace, pod) for pod in record.pods]
    return [("job", namespace, name), ("podgroup", namespace, name), *pods]


def _note_details(state: Projected, record: JobRecord, event: Event, pod_before: object) -> None:
    """Keep what the event says about an object that the controller's state does not, if the controller
    applied it (an event about an earlier generation of a pod changes nothing)."""
    key = pod_key(event.namespace or "", event.name)
    if event.kind == "podgroup":
        if event.type == "PodGroupStatusChanged" and record.podgroup_cause == (event.seq, event.id):
            state.conditions[key] = podgroup_conditions(event.payload_as(payloads.PodGroupStatusChanged))
        return
    pod = record.pods.get(event.name) if event.kind == "pod" else None
    if pod is not None and event.type == pod_lifecycle.NOMINATED:  # the controller's state takes no note
        node = pod_lifecycle.nomination(pod, event)
        if node is not None:
            state.pod_details[key] = replace(
                state.pod_details.get(key, _NO_DETAILS), nominated_node_name=node
            )
        return
    if pod is None or pod is pod_before:
        return
    if event.type == "PodCreated":
        state.pod_details.pop(key, None)
        state.deletion_times.pop(key, None)
        return
    details = state.pod_details.get(key, _NO_DETAILS)
    noted = pod_lifecycle.status_details(details, event)
    if noted is not details:
        state.pod_details[key] = noted
    if pod_lifecycle.asks_stop(event):
        state.deletion_times.setdefault(key, event.time)


def _forget_details(state: Projected, key: ObjectKey) -> None:
    """Drop the details of an object that no longer exists."""
    if _exists(state.core, key):
        return
    full = pod_key(key[1] or "", key[2])
    if key[0] == "pod":
        state.pod_details.pop(full, None)
        state.deletion_times.pop(full, None)
    elif key[0] == "podgroup":
        state.conditions.pop(full, None)
