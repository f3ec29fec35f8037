"""Safety and liveness invariants of a run, checked from the event log alone.

Pure functions over the decoded log (a list of `shared.runner_types.Event` in stream order), so the same
checks serve an end-to-end run and hand-made histories in unit tests. Each returns the violations it
found, each naming the event (seq) that broke the rule:

1. `lost_jobs`: every accepted job was submitted, and every submitted job ends Completed.
2. `binding_violations`: a pod (one uid: one PodCreated) is bound at most once, and only while pending.
3. `overcommit_violations`: replaying binds and pod ends per node, no node ever holds more than its
   allocatable on any resource, nor more pods than its pod capacity.
4. `duplicate_facts`: no event id twice, no second PodCreated for a uid, no second JobSubmitted for a job
   already live (the same request or not), no second Completed for one job incarnation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from contracts.codec import decode_object
from contracts.objects import Node, Pod
from contracts.resources import PODS
from shared.runner_types import Event

DEFAULT_MAX_PODS = 110
# a pod's run on its node is over: the node's resources are free again
POD_ENDS = frozenset({"PodSucceeded", "PodFailed", "PodTerminated", "PodLost"})


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: str  # lost-job | double-bind | bind-not-pending | over-commit | duplicate
    seq: int  # the event that broke it (0: the end of the log)
    message: str

    def __str__(self) -> str:
        return f"[{self.invariant}] seq {self.seq}: {self.message}"


def object_key(event: Event) -> str:
    return f"{event.namespace}/{event.name}" if event.namespace else event.name


# --- 1. no accepted job is lost ----------------------------------------------------------------------


@dataclass(slots=True)
class _Incarnation:
    submitted_seq: int
    phase: str = ""  # the last JobStatusChanged phase
    deleted: bool = False


def lost_jobs(events: Sequence[Event], accepted: Iterable[str] = ()) -> list[Violation]:
    """Jobs (namespace/name) accepted by admission without a JobSubmitted, and submitted jobs whose
    latest incarnation, unless deleted, did not end Completed."""
    incarnations: dict[str, _Incarnation] = {}
    for event in events:
        key = object_key(event)
        if event.type == "JobSubmitted":
            incarnations[key] = _Incarnation(event.seq)
        elif key in incarnations and event.type == "JobStatusChanged":
            incarnations[key].phase = event.payload["phase"]
        elif key in incarnations and event.type == "JobDeleted":
            incarnations[key].deleted = True
    found = [
        Violation("lost-job", 0, f"job {key} was accepted but never submitted")
        for key in sorted(set(accepted) - set(incarnations))
    ]
    for key, job in sorted(incarnations.items()):
        if not job.deleted and job.phase != "Completed":
            phase = job.phase or "no status at all"
            found.append(
                Violation("lost-job", job.submitted_seq, f"job {key} did not complete: last phase {phase}")
            )
    return found


# --- 2. and 3. pods and nodes --------------------------------------------------------------------------


@dataclass(slots=True)
class _Bind:
    """One PodBound: the pod instance (uid) it placed, where, and whether that run is over."""

    id: str
    seq: int
    key: str
    uid: str
    node: str
    requests: Mapping[str, int]
    ended: bool = False


@dataclass(slots=True)
class _Pods:
    """The pods as the log tells them: each key's latest instance (PodCreated) and every bind."""

    uids: dict[str, str] = field(default_factory=dict)  # pod key -> uid of its latest PodCreated
    requests: dict[str, Mapping[str, int]] = field(default_factory=dict)  # uid -> its requests
    binds: dict[str, _Bind] = field(default_factory=dict)  # PodBound id -> the bind

    def created(self, event: Event) -> None:
        pod = decode_object(event.payload["object"])
        if not isinstance(pod, Pod):
            raise ValueError(f"seq {event.seq}: PodCreated {object_key(event)} holds a {type(pod).__name__}")
        self.uids[object_key(event)] = pod.meta.uid
        self.requests.setdefault(pod.meta.uid, dict(pod.spec.effective_requests()))

    def bound(self, event: Event) -> _Bind | None:
        """The bind, None for a pod never created."""
        key = object_key(event)
        uid = self.uids.get(key)
        if uid is None:
            return None
        bind = _Bind(event.id, event.seq, key, uid, event.payload["node"], self.requests[uid])
        self.binds[event.id] = bind
        return bind

    def ended(self, event: Event) -> list[_Bind]:
        """The runs a pod end closes: a node agent's report names its run (its causation is the bind);
        PodLost names the pod and the node."""
        bind = self.binds.get(event.causation_id or "")
        if bind is not None:
            found = [bind]
        else:
            key, node = object_key(event), event.payload.get("node")
            found = [b for b in self.binds.values() if b.key == key and b.node == node]
        found = [b for b in found if not b.ended]
        for b in found:
            b.ended = True
        return found


def binding_violations(events: Sequence[Event]) -> list[Violation]:
    """A PodBound for a pod never created, for a uid bound before, or for an instance that was not
    pending any more: its deletion or eviction requested, or its run over."""
    pods = _Pods()
    first_bind: dict[str, _Bind] = {}  # uid -> its first bind
    gone: dict[str, str] = {}  # uid -> why it is not pending (besides being bound)
    found: list[Violation] = []
    for event in events:
        key = object_key(event)
        if event.type == "PodCreated":
            pods.created(event)
        elif event.type == "PodBound":
            bind = pods.bound(event)
            node = event.payload["node"]
            if bind is None:
                found.append(
                    Violation("bind-not-pending", event.seq, f"{key} bound to {node}, never created")
                )
                continue
            first = first_bind.setdefault(bind.uid, bind)
            if first is not bind:
                earlier = f"already bound to {first.node} at seq {first.seq}"
                message = f"{key} (uid {bind.uid}) bound to {node}, {earlier}"
                found.append(Violation("double-bind", event.seq, message))
            elif bind.uid in gone:
                message = f"{key} (uid {bind.uid}) bound to {node} after {gone[bind.uid]}"
                found.append(Violation("bind-not-pending", event.seq, message))
        elif event.type in ("PodDeletionRequested", "PodEvicting") and key in pods.uids:
            gone.setdefault(pods.uids[key], f"{event.type} at seq {event.seq}")
        elif event.type in POD_ENDS:
            for bind in pods.ended(event):
                gone.setdefault(bind.uid, f"{event.type} at seq {event.seq}")
    return found


@dataclass(slots=True)
class _NodeLoad:
    allocatable: Mapping[str, int]
    max_pods: int
    runs: dict[str, _Bind] = field(default_factory=dict)  # the binds holding resources here, by id

    def used(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for bind in self.runs.values():
            total.update(bind.requests)
        return total


def _node_registered(event: Event) -> _NodeLoad:
    node = decode_object(event.payload["object"])
    if not isinstance(node, Node):
        raise ValueError(f"seq {event.seq}: NodeRegistered {event.name} holds a {type(node).__name__}")
    allocatable = dict(node.allocatable or node.capacity)
    return _NodeLoad(allocatable, allocatable.get(PODS, DEFAULT_MAX_PODS * 1000) // 1000)


def overcommit_violations(events: Sequence[Event]) -> list[Violation]:
    """Every bind adds its pod's requests (and one pod) to its node, the end of that run removes them;
    after each bind the node must still fit. A bind to an unregistered node fits nowhere."""
    nodes: dict[str, _NodeLoad] = {}
    pods = _Pods()
    found: list[Violation] = []
    for event in events:
        if event.type == "NodeRegistered":
            registered = _node_registered(event)
            if event.name in nodes:  # a re-registration keeps the pods already there
                registered.runs = nodes[event.name].runs
            nodes[event.name] = registered
        elif event.type == "PodCreated":
            pods.created(event)
        elif event.type == "PodBound":
            bind = pods.bound(event)
            if bind is None:
                continue  # binding_violations reports it
            node = nodes.get(bind.node)
            if node is None:
                message = f"{bind.key} bound to unknown node {bind.node}"
                found.append(Violation("over-commit", event.seq, message))
                continue
            node.runs[bind.id] = bind
            found.extend(_overflow(bind, node))
        elif event.type in POD_ENDS:
            for bind in pods.ended(event):
                if bind.node in nodes:
                    nodes[bind.node].runs.pop(bind.id, None)
    return found


def _overflow(bind: _Bind, node: _NodeLoad) -> list[Violation]:
    found = []
    over = [
        f"{dim} {value} > {node.allocatable.get(dim, 0)}"
        for dim, value in sorted(node.used().items())
        if value > node.allocatable.get(dim, 0)
    ]
    where = f"binding {bind.key} to {bind.node}"
    if over:
        found.append(
            Violation("over-commit", bind.seq, f"{where} over-commits it (milli-units: {', '.join(over)})")
        )
    if len(node.runs) > node.max_pods:
        found.append(
            Violation(
                "over-commit", bind.seq, f"{where} puts {len(node.runs)} pods there (max {node.max_pods})"
            )
        )
    return found


# --- 4. no fact twice ------------------------------------------------------------------------------


def duplicate_facts(events: Sequence[Event]) -> list[Violation]:
    seen_ids: dict[str, int] = {}
    pod_uids: dict[str, int] = {}
    live_jobs: dict[str, Event] = {}  # job key -> the JobSubmitted of its live incarnation
    completed: dict[str, int] = {}  # job key -> seq of its incarnation's Completed
    found: list[Violation] = []

    def dup(event: Event, what: str, first: int) -> None:
        found.append(Violation("duplicate", event.seq, f"{what} (first at seq {first})"))

    for event in events:
        key = object_key(event)
        if event.id in seen_ids:
            dup(event, f"event id {event.id} ({event.type} {key}) stored twice", seen_ids[event.id])
        seen_ids.setdefault(event.id, event.seq)
        if event.type == "PodCreated":
            uid = decode_object(event.payload["object"]).meta.uid
            if uid in pod_uids:
                dup(event, f"PodCreated {key} for uid {uid} again", pod_uids[uid])
            pod_uids.setdefault(uid, event.seq)
        elif event.type == "JobSubmitted":
            live = live_jobs.get(key)
            if live is not None:
                same = " of the same request" if live.causation_id == event.causation_id else ""
                dup(event, f"JobSubmitted{same} for live job {key}", live.seq)
            live_jobs[key] = event
            completed.pop(key, None)
        elif event.type == "JobDeleted":
            live_jobs.pop(key, None)
        elif event.type == "JobStatusChanged" and event.payload["phase"] == "Completed":
            if key in completed:
                dup(event, f"job {key} Completed again in one incarnation", completed[key])
            completed.setdefault(key, event.seq)
    return found


# --- all of them, and a summary for failure messages --------------------------------------------------


def check_log(events: Sequence[Event], accepted: Iterable[str] = ()) -> list[Violation]:
    return [
        *lost_jobs(events, accepted),
        *binding_violations(events),
        *overcommit_violations(events),
        *duplicate_facts(events),
    ]


def summary(events: Sequence[Event]) -> str:
    """Counts that tell what a run did: events by type, pods, jobs by their last phase."""
    types = Counter(event.type for event in events)
    phases: dict[str, str] = {}
    for event in events:
        if event.type == "JobStatusChanged":
            phases[object_key(event)] = event.payload["phase"]
    lost = Counter(
        event.payload.get("reason", "") for event in events if event.type in ("PodFailed", "PodLost")
    )
    return (
        f"{len(events)} events; {types['PodCreated']} pods created, {types['PodBound']} bound, "
        f"{types['PodSucceeded']} succeeded, {types['PodFailed']} failed, {types['PodLost']} lost "
        f"(reasons {dict(lost)}); {types['JobSubmitted']} jobs, "
        f"by last phase {dict(Counter(phases.values()))}; "
        f"{types['PlanRejected']} plans rejected"
    )
