"""Which of Volcano's per-queue and per-job gauges a scheduler replica exports, and their values (pure).

With several replicas every one of them sees the whole cluster, so each fact is exported by one replica
only, the one owning it on the ring (docs/metrics.md): a job's series by the owner of its PodGroup, a
queue's by the owner of the ring key `queue:<name>`. The series are read at scrape time from what the
replica holds: its view (a PodGroup's creation, queue and Scheduled condition, each queue's spec) and
its last session's figures (a queue's allocated, deserved, ...; a job's unready tasks and DRF share,
counted retries). A deleted job or queue therefore leaves with its object, and a job whose owner changes
is exported by its new owner from then on.

Finished jobs stay readable in the view until their PodGroup is deleted. Their series are kept for
`FINISHED_TTL_S` after they were scheduled, and for the `MAX_FINISHED` most recently scheduled only, so
that a cluster nobody cleans up does not grow its series without bound; live jobs are always exported.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field

from contracts.objects import PodGroup, Queue
from contracts.resources import CPU, MEMORY, MILLI, PODS
from services.scheduler.core.framework.plan import JobFigures, QueueUpdate

FINISHED_TTL_S = 3600.0
MAX_FINISHED = 1000
QUEUE_KEY_PREFIX = "queue:"  # a queue's key on the ring (a PodGroup's is namespace/name: no ':' in either)

Row = tuple[tuple[str, ...], float]
Series = dict[str, list[Row]]
# the six figures Volcano exports as milli_cpu / memory_bytes / scalar_resources triplets
QUEUE_FIGURES = ("allocated", "request", "deserved", "capacity", "real_capacity", "inqueue")


def queue_key(name: str) -> str:
    return QUEUE_KEY_PREFIX + name


def _triplet(figure: str, queue: str, resources: Mapping[str, int], out: Series) -> None:
    """Volcano's three series of one figure: cpu in millicores, memory in bytes, and every other resource
    (pods aside) in milli-units, as Volcano's scalar resources are."""
    out[f"volcano_queue_{figure}_milli_cpu"].append(((queue,), resources.get(CPU, 0)))
    out[f"volcano_queue_{figure}_memory_bytes"].append(((queue,), resources.get(MEMORY, 0) / MILLI))
    for name, value in sorted(resources.items()):
        if name not in (CPU, MEMORY, PODS):
            out[f"volcano_queue_{figure}_scalar_resources"].append(((queue, name), value))


def empty_queue_series() -> Series:
    names = [f"volcano_queue_{f}_{unit}" for f in QUEUE_FIGURES for unit in ("milli_cpu", "memory_bytes")]
    names += [f"volcano_queue_{f}_scalar_resources" for f in QUEUE_FIGURES]
    names += ["volcano_queue_share", "volcano_queue_weight", "volcano_queue_overused"]
    return {name: [] for name in names}


def queue_series(
    queues: Iterable[Queue], figures: Mapping[str, QueueUpdate], owns: Callable[[str], bool]
) -> Series:
    """Every queue of the view this replica owns (every queue of a hierarchy, parents and root too): its
    spec's capacity and weight, and what the last session figured for it."""
    out = empty_queue_series()
    for queue in queues:
        name = queue.meta.name
        if not owns(queue_key(name)):
            continue
        out["volcano_queue_weight"].append(((name,), max(queue.weight, 1)))
        if queue.capability:
            _triplet("capacity", name, queue.capability, out)
        known = figures.get(name)
        if known is None:
            continue
        _triplet("allocated", name, known.allocated, out)
        out["volcano_queue_share"].append(((name,), known.share))
        if known.real_capability is None:
            continue  # no fairness plugin: nothing is known of deserved, request, inqueue, overused
        for figure, resources in (
            ("request", known.request),
            ("deserved", known.deserved),
            ("real_capacity", known.real_capability),
            ("inqueue", known.inqueue),
        ):
            _triplet(figure, name, resources, out)
        if known.overused is not None:
            out["volcano_queue_overused"].append(((name,), float(known.overused)))
    return out


@dataclass(slots=True)
class JobRecord:
    """What this replica's sessions found about one job (the view has the rest)."""

    unready_tasks: int = 0
    share: float | None = None
    retries: int = 0  # sessions that left the gang unschedulable (Volcano's job_retry_counts)


@dataclass(slots=True)
class JobBook:
    """Per owned job, the session figures its series need; forgotten with the job (`prune`)."""

    jobs: dict[str, JobRecord] = field(default_factory=dict)

    def record(self, figures: Mapping[str, JobFigures]) -> None:
        for key, found in figures.items():
            record = self.jobs.get(key)
            if record is None:
                record = self.jobs[key] = JobRecord()
            record.unready_tasks = found.unready_tasks
            record.share = found.share
            record.retries += found.unschedulable

    def prune(self, known: Container[str]) -> None:
        """Forget the jobs whose PodGroup is gone."""
        self.jobs = {key: record for key, record in self.jobs.items() if key in known}


def scheduled_at(pg: PodGroup) -> float | None:
    """When the gang last became Scheduled (its condition's transition time), if it is."""
    for condition in pg.status.conditions:
        if condition.type == "Scheduled" and condition.status == "True":
            return condition.last_transition_time
    return None


def exported_jobs(
    podgroups: Iterable[PodGroup],
    finished: Callable[[str], bool],
    owns: Callable[[str], bool],
    now: float,
    *,
    ttl_s: float = FINISHED_TTL_S,
    max_finished: int = MAX_FINISHED,
) -> list[PodGroup]:
    """The PodGroups whose series this replica exports: those it owns, live ones always, finished ones
    within the TTL of their scheduling and at most max_finished of them (the latest scheduled)."""
    chosen, done = [], []
    for pg in podgroups:
        key = pg.meta.key
        if not finished(key):
            if owns(key):
                chosen.append(pg)
            continue
        at = scheduled_at(pg)  # (the cheap test first: asking the ring hashes the key)
        if at is not None and now - at <= ttl_s and owns(key):
            done.append((at, pg))
    done.sort(key=lambda item: item[0], reverse=True)
    chosen.extend(pg for _, pg in done[:max_finished])
    return chosen


def job_series(jobs: Iterable[PodGroup], book: JobBook) -> Series:
    """Volcano's per-job series of the exported jobs. job_id is the PodGroup's namespace/name (unique;
    Volcano's bare name is not across namespaces)."""
    out: Series = {
        "volcano_e2e_job_scheduling_start_time": [],
        "volcano_e2e_job_scheduling_last_time": [],
        "volcano_e2e_job_scheduling_duration": [],
        "volcano_unschedule_task_count": [],
        "volcano_job_share": [],
        "volcano_job_retry_counts": [],
    }
    for pg in jobs:
        meta = pg.meta
        labels = (meta.name, pg.queue, meta.namespace)
        out["volcano_e2e_job_scheduling_start_time"].append((labels, meta.creation_timestamp))
        at = scheduled_at(pg)
        if at is not None:
            out["volcano_e2e_job_scheduling_last_time"].append((labels, at))
            duration_ms = max(at - meta.creation_timestamp, 0.0) * 1000
            out["volcano_e2e_job_scheduling_duration"].append((labels, duration_ms))
        record = book.jobs.get(meta.key)
        if record is None:
            continue
        out["volcano_unschedule_task_count"].append(((meta.key,), record.unready_tasks))
        if record.share is not None:
            out["volcano_job_share"].append(((meta.namespace, meta.key), record.share))
        if record.retries:
            out["volcano_job_retry_counts"].append(((meta.key,), record.retries))
    return out
