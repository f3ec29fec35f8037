"""The simulated cluster: every object, its status, and the simulated clock's pending pod completions.

Pure state plus transition methods; the engine decides when they run. Jobs are expanded into their
PodGroup and pods on arrival. (Volcano's controller creates pods only once the PodGroup is Inqueue; the
scheduler never places pods of a Pending PodGroup, so materialising them early changes no decision and
lets a one-session simulation show where a job's pods would go.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from contracts.errors import FieldError
from contracts.objects import Job, ObjectMeta, Pod, PodGroup, PodGroupStatus, PodStatus
from contracts.parse import duration_seconds
from services.job_controller.core.expand import default_job, podgroup_for, pods_for
from services.job_controller.core.phase import FINISHED_PHASES, TaskCounts, settle_phase
from services.scheduler.core.framework.plan import SessionResult
from services.scheduler.core.snapshot import ClusterSnapshot

SIM_DURATION = "lahar.dev/sim-duration"
SIM_EXIT_CODE = "lahar.dev/sim-exit-code"
SIM_ARRIVAL = "lahar.dev/sim-arrival"
SIM_BARRIER = "lahar.dev/sim-barrier"
DEFAULT_DURATION_S = 60.0
_SLEEP = re.compile(r"\bsleep\s+(\d+(?:\.\d+)?)")


def pod_duration(pod: Pod) -> float:
    """How long a bound pod runs: the sim-duration annotation, else a `sleep N` in its command, else 60 s."""
    annotated = pod.meta.annotations.get(SIM_DURATION)
    if annotated:
        return duration_seconds(annotated)
    for container in pod.spec.containers:
        match = _SLEEP.search(" ".join(container.command + container.args))
        if match:
            return float(match.group(1))
    return DEFAULT_DURATION_S


def arrival_time(meta: ObjectMeta) -> float:
    value = meta.annotations.get(SIM_ARRIVAL)
    return duration_seconds(value) if value else 0.0


def _annotation_problems(annotations: Mapping[str, str]) -> list[tuple[str, str]]:
    problems = []
    for key in (SIM_DURATION, SIM_ARRIVAL):
        value = annotations.get(key)
        if value:
            try:
                if duration_seconds(value) < 0:
                    problems.append((key, f"expected a duration of 0 or more, got {value!r}"))
            except ValueError as exc:
                problems.append((key, str(exc)))
    code = annotations.get(SIM_EXIT_CODE)
    if code and not code.lstrip("-").isdigit():
        problems.append((SIM_EXIT_CODE, f"expected an integer exit code, got {code!r}"))
    return problems


def annotation_errors(obj: object) -> list[FieldError]:
    """Malformed simulation annotations of a loaded object, on it and on its tasks' pod templates (which its
    pods inherit): checked before a run, so a typo is an input error instead of a crash halfway through."""
    meta = getattr(obj, "meta", None)
    if meta is None:
        return []
    document = f"{getattr(obj, 'kind', type(obj).__name__)} {meta.key}"
    found = [(f"metadata.annotations[{key}]", msg) for key, msg in _annotation_problems(meta.annotations)]
    for i, task in enumerate(getattr(obj, "tasks", ())):
        found += [
            (f"spec.tasks[{i}].template.metadata.annotations[{key}]", msg)
            for key, msg in _annotation_problems(task.template.annotations)
        ]
    return [FieldError(document, path, message) for path, message in found]


@dataclass(slots=True)
class JobRecord:
    job: Job
    phase: str = "Pending"
    submit_time: float = 0.0
    start_time: float | None = None
    finish_time: float | None = None


@dataclass(slots=True)
class World:
    static: list = field(default_factory=list)  # nodes, queues, priority classes, hypernodes
    pods: dict[str, Pod] = field(default_factory=dict)
    podgroups: dict[str, PodGroup] = field(default_factory=dict)
    jobs: dict[str, JobRecord] = field(default_factory=dict)
    pod_job: dict[str, str] = field(default_factory=dict)  # pod key -> podgroup key
    finish_at: dict[str, float] = field(default_factory=dict)  # running pod key -> completion time
    waiting_barrier: set[str] = field(default_factory=set)  # running pods waiting for their whole gang
    pending_arrivals: list[tuple[float, object]] = field(default_factory=list)
    sequence: int = 0

    # --- arrivals -----------------------------------------------------------------------------------
    def add(self, obj: object, now: float) -> None:
        if isinstance(obj, Job):
            self._add_job(obj, now)
        elif isinstance(obj, PodGroup):
            self.podgroups[obj.meta.key] = obj
        elif isinstance(obj, Pod):
            self.pods[obj.meta.key] = obj
            group = obj.meta.annotations.get("scheduling.k8s.io/group-name")
            if group:
                self.pod_job[obj.meta.key] = f"{obj.meta.namespace}/{group}"
            if obj.status.phase == "Running" and obj.spec.node_name:
                self._start(obj, now)
        else:
            self.static.append(obj)

    def _add_job(self, job: Job, now: float) -> None:
        job = default_job(job)
        classes = {o.meta.name: o for o in self.static if getattr(o, "kind", "") == "PriorityClass"}
        pg = podgroup_for(job, classes)
        self.podgroups[pg.meta.key] = pg
        self.jobs[pg.meta.key] = JobRecord(job, submit_time=now)
        for pod in pods_for(job, created_at=now + job.meta.creation_timestamp * 1e-6):
            self.pods[pod.meta.key] = pod
            self.pod_job[pod.meta.key] = pg.meta.key

    def admit_arrivals(self, now: float) -> bool:
        due = [item for item in self.pending_arrivals if item[0] <= now]
        if not due:
            return False
        self.pending_arrivals = [item for item in self.pending_arrivals if item[0] > now]
        for _, obj in due:
            self.add(obj, now)
        return True

    def next_arrival(self) -> float | None:
        return min((t for t, _ in self.pending_arrivals), default=None)

    # --- scheduler view -----------------------------------------------------------------------------
    def snapshot(self) -> ClusterSnapshot:
        self.sequence += 1
        live_pods = [p for p in self.pods.values() if p.status.phase not in ("Succeeded", "Failed")]
        done = [p for p in self.pods.values() if p.status.phase in ("Succeeded", "Failed")]
        return ClusterSnapshot.from_objects(
            [*self.static, *self.podgroups.values(), *live_pods, *done], sequence=self.sequence
        )

    # --- applying a session's decisions -------------------------------------------------------------
    def apply(self, result: SessionResult, now: float) -> int:
        """Bind, evict and update PodGroups; returns how many pods changed."""
        changed = 0
        for key in result.evictions:
            pod = self.pods[key]
            self.finish_at.pop(key, None)
            self.waiting_barrier.discard(key)
            self.pods[key] = replace(
                pod, spec=replace(pod.spec, node_name=""), status=PodStatus(phase="Pending")
            )
            changed += 1
        for key, node in result.binds.items():
            pod = self.pods[key]
            bound = replace(
                pod, spec=replace(pod.spec, node_name=node), status=PodStatus(phase="Running", start_time=now)
            )
            self.pods[key] = bound
            self._start(bound, now)
            changed += 1
        for key, update in result.podgroups.items():
            pg = self.podgroups.get(key)
            if pg is not None:
                status = PodGroupStatus(
                    update.phase, update.conditions, update.running, update.succeeded, update.failed
                )
                self.podgroups[key] = replace(pg, status=status)
        self._release_barriers(now)
        return changed

    def _start(self, pod: Pod, now: float) -> None:
        if pod.meta.annotations.get(SIM_BARRIER, "").lower() == "true":
            self.waiting_barrier.add(pod.meta.key)
        else:
            self.finish_at[pod.meta.key] = now + pod_duration(pod)

    def _release_barriers(self, now: float) -> None:
        """A barrier pod (e.g. a distributed-training worker) makes progress only once every pod of its
        gang runs at the same time, like a rendezvous."""
        by_group: dict[str, list[str]] = {}
        for key in self.waiting_barrier:
            by_group.setdefault(self.pod_job.get(key, key), []).append(key)
        for group, waiting in by_group.items():
            members = [k for k, g in self.pod_job.items() if g == group]
            if all(self.pods[k].status.phase in ("Running", "Succeeded") for k in members):
                for key in waiting:
                    self.finish_at[key] = now + pod_duration(self.pods[key])
                    self.waiting_barrier.discard(key)

    # --- the passage of time --------------------------------------------------------------------------
    def complete_due(self, now: float) -> int:
        due = [k for k, t in self.finish_at.items() if t <= now + 1e-9]
        for key in due:
            del self.finish_at[key]
            pod = self.pods[key]
            code = int(pod.meta.annotations.get(SIM_EXIT_CODE, "0") or 0)
            phase = "Succeeded" if code == 0 else "Failed"
            self.pods[key] = replace(pod, status=replace(pod.status, phase=phase, exit_code=code))
        return len(due)

    def next_completion(self) -> float | None:
        return min(self.finish_at.values(), default=None)

    def sync_jobs(self, now: float) -> int:
        """The job-controller's plain path: job phases from pod counts. Returns phase changes."""
        counts: dict[str, dict[str, TaskCounts]] = {key: {} for key in self.jobs}
        for pod_key, group in self.pod_job.items():
            if group not in counts:
                continue
            pod = self.pods[pod_key]
            task = pod.meta.annotations.get("volcano.sh/task-spec", "")
            c = counts[group].get(task, TaskCounts())
            phase = pod.status.phase
            counts[group][task] = TaskCounts(
                pending=c.pending + (phase == "Pending"),
                running=c.running + (phase == "Running"),
                succeeded=c.succeeded + (phase == "Succeeded"),
                failed=c.failed + (phase == "Failed"),
            )
        changes = 0
        for key, record in self.jobs.items():
            phase = settle_phase(record.job, record.phase, counts[key])
            if phase != record.phase:
                changes += 1
                if phase == "Running" and record.start_time is None:
                    record.start_time = now
                if phase in FINISHED_PHASES:
                    record.finish_time = now
                record.phase = phase
        return changes

    def unfinished_jobs(self) -> list[str]:
        return [k for k, r in self.jobs.items() if r.phase not in FINISHED_PHASES]

    def pending_pods(self) -> list[str]:
        return [k for k, p in self.pods.items() if p.status.phase == "Pending"]

    def pending_pods_without_job(self) -> list[str]:
        """Pending pods no Job owns (pods of a PodGroup manifest): work no job phase accounts for."""
        return [k for k in self.pending_pods() if self.pod_job.get(k) not in self.jobs]
