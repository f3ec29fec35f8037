"""The simulated cluster: the objects the scheduler sees, as the simulated event log leaves them, and the
simulated nodes' clocks (when each running pod will exit).

`observe` applies one event of the log: a Job's PodGroup and pods exist from the job-controller's
PodGroupCreated and PodCreated on (Volcano's controller creates pods once the PodGroup left Pending), a pod
is bound by PodBound, runs from PodRunning, ends with PodSucceeded / PodFailed, and is gone once it is
stopped (PodTerminated) or deleted before it ran; a pending pod holds the room a preemption reserved for it
from PodNominated until it is bound. Nodes, queues, priority classes, hypernodes and the pods
and PodGroups of plain manifests (no Job) are added as they are (`add`): no controller owns those pods, so a
stopped one goes back to Pending, as if its owner created it again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from contracts import payloads
from contracts.condition_payload import podgroup_condition
from contracts.errors import FieldError
from contracts.job_shape import GROUP_NAME, POD_GENERATION
from contracts.objects import Node, ObjectMeta, Pod, PodGroup, PodStatus, Queue, frozen_map
from contracts.parse import duration_seconds
from contracts.payloads import named_node
from contracts.sim_annotations import (
    SIM_DURATION,
    SIM_EXIT_CODE,
    arrival_seconds,
    exit_codes,
    is_barrier,
    object_errors,
    run_problem,
)
from services.node_agent.node_labels import well_known_labels
from services.scheduler.core.framework.plan import SessionResult
from services.scheduler.core.model.task import pod_cooldown_s
from services.scheduler.core.snapshot import ClusterSnapshot
from services.simulator.jobs import SimJob
from shared.runner_types import Event

SIMULATED_ARCH = "x86_64"  # the machine of a simulated node, as platform.machine() names it: amd64

DEFAULT_DURATION_S = 60.0
FINISHED_POD_PHASES = ("Succeeded", "Failed")
_SLEEP = re.compile(r"\bsleep\s+(\d+(?:\.\d+)?)")


def pod_duration(pod: Pod) -> float:
    """How long a bound pod runs: the sim-duration annotation, else a `sleep N` in its command, else 60 s. A
    malformed or negative sim-duration (admission refuses one; an old log may hold it) counts as none."""
    annotated = pod.meta.annotations.get(SIM_DURATION)
    if annotated:
        try:
            seconds = duration_seconds(annotated)
        except ValueError:
            seconds = -1.0
        if seconds >= 0:
            return seconds
    for container in pod.spec.containers:
        match = _SLEEP.search(" ".join(container.command + container.args))
        if match:
            return float(match.group(1))
    return DEFAULT_DURATION_S


def pod_exit_code(pod: Pod) -> int:
    """The code a pod exits with: sim-exit-code (default 0), either one integer or a comma-separated list
    indexed by the pod's generation (its name's Nth pod), the last entry repeating: "1,0" fails the first
    pod and lets the one created after it succeed. A malformed value counts as none (the nodes fail such a
    pod at start: start_problem)."""
    try:
        codes = exit_codes(pod.meta.annotations.get(SIM_EXIT_CODE, "") or "0")
    except ValueError:
        codes = [0]
    generation = int(pod.meta.annotations.get(POD_GENERATION, "0") or 0)
    return codes[min(generation, len(codes) - 1)]


def start_problem(pod: Pod) -> str | None:
    """Why a node cannot start `pod` (a malformed run knob that got past admission), as the node agent's
    sim runtime reports it: the pod fails at start, reason StartError."""
    problem = run_problem(pod.meta.annotations)
    return f"simulation annotations: {problem}" if problem else None


def arrival_time(meta: ObjectMeta) -> float:
    return arrival_seconds(meta.annotations)


def annotation_errors(obj: object) -> list[FieldError]:
    """Malformed or unknown simulation annotations of a loaded object, on it and on the pod templates its
    pods inherit, as admission reports them: checked before a run, so a typo is an input error."""
    meta = getattr(obj, "meta", None)
    if meta is None:
        return []
    return object_errors(obj, f"{getattr(obj, 'kind', type(obj).__name__)} {meta.key}")


def with_well_known_labels(node: Node) -> Node:
    """A Node manifest as its kubelet would register it: with Kubernetes' well-known labels (hostname,
    os, arch), which Volcano's examples select on, under those the manifest gives. The architecture is
    amd64 unless the manifest says otherwise: a simulation must not depend on the machine it runs on."""
    labels = {**well_known_labels(node.meta.name, SIMULATED_ARCH), **node.meta.labels}
    return replace(node, meta=replace(node.meta, labels=frozen_map(labels)))


@dataclass(slots=True)
class World:
    static: list = field(default_factory=list)  # nodes, queues, priority classes, hypernodes
    pods: dict[str, Pod] = field(default_factory=dict)
    podgroups: dict[str, PodGroup] = field(default_factory=dict)
    jobs: dict[str, SimJob] = field(default_factory=dict)
    pod_job: dict[str, str] = field(default_factory=dict)  # pod key -> podgroup key
    finish_at: dict[str, float] = field(default_factory=dict)  # running pod key -> when it exits
    waiting_barrier: set[str] = field(default_factory=set)  # running pods waiting for their whole gang
    sequence: int = 0

    # --- objects no controller writes ---------------------------------------------------------------
    def add(self, obj: object, now: float) -> None:
        if isinstance(obj, PodGroup):
            self.podgroups[obj.meta.key] = obj
        elif isinstance(obj, Pod):
            self._put_pod(obj)
            if obj.status.phase == "Running" and obj.spec.node_name:
                self._start(obj, now)
        elif isinstance(obj, Node):
            self.static.append(with_well_known_labels(obj))
        else:
            self.static.append(obj)

    def _put_pod(self, pod: Pod) -> None:
        self.pods[pod.meta.key] = pod
        group = pod.meta.annotations.get(GROUP_NAME)
        if group:
            self.pod_job[pod.meta.key] = f"{pod.meta.namespace}/{group}"

    # --- the log ------------------------------------------------------------------------------------
    def observe(self, event: Event) -> None:
        """Apply one event of the simulated log (types that change nothing here are ignored)."""
        key = f"{event.namespace}/{event.name}"
        etype = event.type
        if etype == "JobSubmitted":
            self.jobs[key] = SimJob(event.payload_as(payloads.JobSubmitted).decoded(), submit_time=event.time)
        elif etype in ("JobStatusChanged", "JobCleanedUp", "JobDeleted") and key in self.jobs:
            self.jobs[key].observe(event)
        elif etype == "PodGroupCreated":
            self.podgroups[key] = event.payload_as(payloads.PodGroupCreated).decoded()
        elif etype == "PodGroupStatusChanged" and key in self.podgroups:
            status = event.payload_as(payloads.PodGroupStatusChanged)
            conditions = tuple(podgroup_condition(c) for c in status.conditions)
            pg = self.podgroups[key]
            self.podgroups[key] = replace(
                pg, status=replace(pg.status, phase=status.phase, conditions=conditions)
            )
        elif etype == "PodGroupDeleted":
            self.podgroups.pop(key, None)
            # the job's pods that are left (finished ones) go with it, as Kubernetes collects them
            for pod in [k for k, g in self.pod_job.items() if g == key]:
                self._remove(pod)
        elif etype == "PodCreated":
            self._put_pod(event.payload_as(payloads.PodCreated).decoded())
        elif etype == "QueueStateChanged":
            self._queue_state(event.name, event.payload_as(payloads.QueueStateChanged).state)
        elif key in self.pods:
            self._pod_event(key, event)

    def _pod_event(self, key: str, event: Event) -> None:
        pod = self.pods[key]
        etype, node = event.type, named_node(event.data)
        if etype == "PodBound" and not pod.spec.node_name:
            status = replace(pod.status, nominated_node_name="")  # its reserved room is used
            self.pods[key] = replace(pod, spec=replace(pod.spec, node_name=node), status=status)
        elif etype == "PodNominated" and not pod.spec.node_name:
            self.pods[key] = replace(pod, status=replace(pod.status, nominated_node_name=node))
        elif etype == "PodRunning" and pod.status.phase == "Pending":
            running = replace(pod, status=PodStatus(phase="Running", start_time=event.time))
            self.pods[key] = running
            self._start(running, event.time)
            self._release_barriers(key, event.time)
        elif etype in ("PodSucceeded", "PodFailed"):
            phase = "Succeeded" if etype == "PodSucceeded" else "Failed"
            report = event.data
            assert isinstance(report, payloads.PodSucceeded | payloads.PodFailed)
            exit_code = report.exit_code
            self.pods[key] = replace(pod, status=replace(pod.status, phase=phase, exit_code=exit_code))
            self._stop(key)
        elif etype == "PodTerminated":
            self._stop(key)
            if key in self.pod_job and self.pod_job[key] in self.jobs:
                self._remove(key)
            else:
                self.pods[key] = replace(pod, spec=replace(pod.spec, node_name=""), status=PodStatus())
        elif etype == "PodDeletionRequested" and (
            not pod.spec.node_name or pod.status.phase in FINISHED_POD_PHASES
        ):
            self._remove(key)  # nothing runs it: gone at once (a running pod goes once its node stopped it)

    def _remove(self, key: str) -> None:
        self._stop(key)
        self.pods.pop(key, None)
        self.pod_job.pop(key, None)

    def _queue_state(self, name: str, state: str) -> None:
        for i, obj in enumerate(self.static):
            if isinstance(obj, Queue) and obj.meta.name == name:
                self.static[i] = replace(obj, status=replace(obj.status, state=state))

    # --- scheduler view -----------------------------------------------------------------------------
    def snapshot(self) -> ClusterSnapshot:
        self.sequence += 1
        live_pods = [p for p in self.pods.values() if p.status.phase not in FINISHED_POD_PHASES]
        done = [p for p in self.pods.values() if p.status.phase in FINISHED_POD_PHASES]
        return ClusterSnapshot.from_objects(
            [*self.static, *self.podgroups.values(), *live_pods, *done], sequence=self.sequence
        )

    def refresh_podgroups(self, result: SessionResult) -> None:
        """The session's status projection of every PodGroup it saw. The log records only changes (the
        binder's rule); the world keeps each session's stamp, so a report shows the latest session."""
        for key, update in result.podgroups.items():
            pg = self.podgroups.get(key)
            if pg is not None:
                status = replace(
                    pg.status,
                    phase=update.phase,
                    conditions=update.conditions,
                    running=update.running,
                    succeeded=update.succeeded,
                    failed=update.failed,
                )
                self.podgroups[key] = replace(pg, status=status)

    # --- the simulated nodes' clocks ----------------------------------------------------------------
    def _start(self, pod: Pod, now: float) -> None:
        if is_barrier(pod.meta.annotations):
            self.waiting_barrier.add(pod.meta.key)
        else:
            self.finish_at[pod.meta.key] = now + pod_duration(pod)

    def _stop(self, key: str) -> None:
        self.finish_at.pop(key, None)
        self.waiting_barrier.discard(key)

    def _release_barriers(self, started: str, now: float) -> None:
        """A barrier pod (e.g. a distributed-training worker) makes progress only once every pod of its
        gang runs at the same time, like a rendezvous; `started` just started running."""
        group = self.pod_job.get(started)
        members = [k for k, g in self.pod_job.items() if g == group] if group else [started]
        waiting = [k for k in members if k in self.waiting_barrier]
        if waiting and all(self.pods[k].status.phase in ("Running", "Succeeded") for k in members):
            for key in waiting:
                self.finish_at[key] = now + pod_duration(self.pods[key])
                self.waiting_barrier.discard(key)

    def due(self, now: float) -> list[str]:
        """The running pods whose run is over by `now`, in the order they end."""
        return sorted(
            (k for k, t in self.finish_at.items() if t <= now + 1e-9), key=lambda k: (self.finish_at[k], k)
        )

    def next_completion(self) -> float | None:
        return min(self.finish_at.values(), default=None)

    def next_cooldown_end(self, now: float) -> float | None:
        """When the next running pod's cool-down (volcano.sh/cooldown-time) ends after `now`: from then on
        it may be preempted or reclaimed, so a session may decide what it could not before."""
        ends = []
        for key in (*self.finish_at, *self.waiting_barrier):
            pod = self.pods[key]
            cooldown, started = pod_cooldown_s(pod), pod.status.start_time
            if cooldown is not None and started is not None and started + cooldown > now:
                ends.append(started + cooldown)
        return min(ends, default=None)

    # --- progress -----------------------------------------------------------------------------------
    def unfinished_jobs(self) -> list[str]:
        return [k for k, j in self.jobs.items() if not j.finished]

    def pending_pods(self) -> list[str]:
        return [k for k, p in self.pods.items() if p.status.phase == "Pending"]

    def pending_pods_without_job(self) -> list[str]:
        """Pending pods no Job owns (pods of a PodGroup manifest): work no job phase accounts for."""
        return [k for k in self.pending_pods() if self.pod_job.get(k) not in self.jobs]
