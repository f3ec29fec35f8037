"""What the job-controller writes for plain pods and PodGroups (level-triggered, like reconcile.py for
Jobs: outputs follow from the state alone, and ids from the fact, so a repeat is deduplicated):

- PodGroupCreated for a user's PodGroup, and for a plain pod's own group while the pod stands;
- PodCreated for a plain pod once its PodGroup exists (Volcano's scheduler leaves a pod alone until its
  group exists; here the pod is only created then, so every reader sees its group first), with the
  group's queue as its queue annotation, as a Job's pods carry theirs;
- PodDeletionRequested for a withdrawn pod that was created and is not gone (a finished one too, so every
  reader lets go of it), again on the node it lands on if it is bound after the request;
- PodGroupDeleted for a withdrawn PodGroup, and for a plain pod's own group once the pod finished, ended
  or was withdrawn and is gone: the group only serves the pod's scheduling (docs/deviations.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from contracts import codec, payloads
from contracts.events import JOB_CONTROLLER
from contracts.job_shape import QUEUE_NAME
from contracts.objects import PodGroupStatus, PodStatus, frozen_map
from services.job_controller.core.plain.state import PlainGroup, PlainPod, PlainState, own_group
from shared.projected_core import ObjectKey
from shared.runner_types import Output, deterministic_id


def reconcile(state: PlainState, keys: Iterable[ObjectKey] | None = None) -> list[Output]:
    """What to write about the objects `keys` (default: every one). A pod and its PodGroup decide about
    each other (a pod waits for its group, a pod's own group goes with it), so each key brings the other
    along."""
    if keys is None:
        groups: Iterable[PlainGroup] = state.groups.values()
        pods: Iterable[PlainPod] = state.pods.values()
    else:
        groups, pods = _related(state, keys)
    outputs: list[Output] = []
    for group in groups:
        outputs.extend(_group_outputs(state, group))
    for record in pods:
        outputs.extend(_pod_outputs(state, record))
    return outputs


def _related(state: PlainState, keys: Iterable[ObjectKey]) -> tuple[list[PlainGroup], list[PlainPod]]:
    group_keys: dict[str, None] = {}
    pod_keys: dict[str, None] = {}
    for kind, namespace, name in keys:
        full = f"{namespace}/{name}"
        if kind == "pod":
            pod_keys[full] = None
            record = state.pods.get(full)
            if record is not None:
                group_keys[record.group_key] = None
        elif kind == "podgroup":
            group_keys[full] = None
            pod_keys.update(dict.fromkeys(sorted(state.members.get(full, ()))))
    groups = [g for k in group_keys if (g := state.groups.get(k)) is not None]
    pods = [r for k in pod_keys if (r := state.pods.get(k)) is not None]
    return groups, pods


def _group_outputs(state: PlainState, group: PlainGroup) -> list[Output]:
    if not group.created and _wanted(state, group):
        podgroup = replace(group.podgroup, status=PodGroupStatus())
        payload = payloads.PodGroupCreated(object=codec.encode_object(podgroup))
        return [
            _output("PodGroupCreated", "podgroup", group.key, payload, group.cause, group.cause[1], group)
        ]
    if group.exists and not _wanted(state, group):
        cause = group.withdrawn or _owner_end(state, group) or group.cause
        deleted = payloads.Empty()
        return [_output("PodGroupDeleted", "podgroup", group.key, deleted, group.cause, cause[1], group)]
    return []


def _wanted(state: PlainState, group: PlainGroup) -> bool:
    """A user's PodGroup until it is withdrawn; a pod's own group while the pod stands and is not done."""
    if group.owner is None:
        return group.withdrawn is None
    pod = state.pods.get(f"{group.podgroup.meta.namespace}/{group.owner}")
    if pod is None or own_group(state, pod) is not group:
        return False
    return pod.withdrawn is None and not (pod.created and pod.done)


def _owner_end(state: PlainState, group: PlainGroup) -> tuple[int, str] | None:
    pod = state.pods.get(f"{group.podgroup.meta.namespace}/{group.owner}") if group.owner else None
    return None if pod is None else (pod.withdrawn or pod.done_cause or pod.cause)


def _pod_outputs(state: PlainState, record: PlainPod) -> list[Output]:
    if record.withdrawn is None and not record.created:
        group = state.groups.get(record.group_key)
        if group is None or not group.exists:
            return []  # waits for its group
        annotations = frozen_map({**record.pod.meta.annotations, QUEUE_NAME: group.podgroup.queue})
        pod = replace(record.pod, meta=replace(record.pod.meta, annotations=annotations), status=PodStatus())
        created = payloads.PodCreated(object=codec.encode_object(pod))
        return [_output("PodCreated", "pod", record.key, created, record.cause, record.cause[1])]
    if record.stop_unrequested:
        assert record.withdrawn is not None  # stop_unrequested
        stop = payloads.PodDeletionRequested(reason="PodDeleted", node=record.node)
        cause = record.withdrawn[1]
        return [
            _output("PodDeletionRequested", "pod", record.key, stop, record.cause, cause, fact=record.node)
        ]
    return []


def _output(
    event_type: str,
    kind: str,
    key: str,
    payload: payloads.Payload,
    incarnation: tuple[int, str],
    cause: str,
    group: PlainGroup | None = None,
    fact: str = "",
) -> Output:
    """An event about `key`, its id from the record's incarnation (the seq of its first event) and `fact`
    in a namespace of its own ("plain/"), apart from the Jobs' outputs; caused by event id `cause`. A
    pod's own group is correlated (traced) with its pod."""
    namespace, _, name = key.partition("/")
    correlation = key
    if group is not None and group.owner is not None:
        correlation = f"{namespace}/{group.owner}"
    return Output(
        type=event_type,
        kind=kind,
        namespace=namespace,
        name=name,
        payload=payload,
        id=deterministic_id(JOB_CONTROLLER, event_type, key, f"plain/{incarnation[0]}/{fact}"),
        causation_id=cause or None,
        correlation_id=correlation,
    )
