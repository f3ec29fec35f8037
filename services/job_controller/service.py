"""The job-controller service: its core (services/job_controller/core/controller.py: Jobs, plain Pods
and PodGroups, CronJobs and JobFlows) on the event loop, one leader at a time (standbys follow the log),
writing the read model of Jobs, PodGroups, Pods, CronJobs, JobFlows and JobTemplates. The jobs of
CronJobs and JobFlows it asks admission to create and delete (requests.py).

Run it with `python -m services.job_controller --nats-url URL --etcd-endpoint HOST:PORT`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable

import structlog
from opentelemetry.trace import Tracer

from contracts.events import JOB_CONTROLLER
from contracts.job_shape import JOB_NAME
from services.job_controller.core.controller import ControllerCore, ControllerState
from services.job_controller.core.phase import FINAL_PHASES
from services.job_controller.requests import RequestingPublisher
from shared.bus.jetstream import Bus
from shared.runner import RunnerConfig
from shared.runner.read_model import ReadModelService
from shared.service import connect_bus, connect_etcd
from shared.store.etcd import Etcd
from shared.store.read_model import Write
from shared.telemetry.metrics import Registry, exponential_buckets_range

log = structlog.get_logger(__name__)


@dataclasses.dataclass(frozen=True, kw_only=True)
class JobControllerConfig(RunnerConfig):
    """lahar job-controller: a Job's PodGroup and Pods, its phase and its teardown."""

    leader_election: bool = True  # a single writer; start more instances as hot standbys


class JobControllerService(ReadModelService[ControllerState]):
    def __init__(
        self,
        bus: Bus,
        etcd: Etcd,
        config: JobControllerConfig,
        *,
        registry: Registry | None = None,
        tracer: Tracer | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(ControllerCore(), bus, etcd, config, registry=registry, tracer=tracer, clock=clock)
        self.publisher = RequestingPublisher(
            bus,
            self.name,
            self.tracer,
            self.metrics,
            inflight_timeout_s=config.inflight_timeout_s,
            clock=clock,
        )
        # Volcano's job phase counters (one series per job), counted once per job as this leader sees it
        # reach the phase; a job found finished when a term starts was counted by an earlier leader.
        labels = ("job_name", "queue_name")
        self._phase_counters = {
            "Completed": self.registry.counter("volcano_job_completed_phase_count", "Jobs completed", labels),
            "Failed": self.registry.counter("volcano_job_failed_phase_count", "Jobs failed", labels),
        }
        self._pod_creation_ms = self.registry.histogram(
            "volcano_controller_job_to_pod_creation_latency_milliseconds",
            "From a job's creation to the creation of each of its pods, in milliseconds",
            buckets=exponential_buckets_range(50, 60000, 30),
        )
        self._finished: dict[str, str] = {}  # keys of the jobs known to have finished -> their queue
        self._pods: dict[str, str] = {}  # pod key -> uid written (a pod made again has a new uid)

    async def after_reconcile(self) -> None:
        await super().after_reconcile()
        notes = self.state.workloads.notes
        for note in notes:
            log.warning("cronjob", note=note)
        notes.clear()

    def written(self, write: Write, *, full: bool) -> None:
        if write.kind == "job":
            self._job_written(write, full=full)
        elif write.kind == "pod":
            self._pod_written(write, full=full)

    def _job_written(self, write: Write, *, full: bool) -> None:
        key = f"{write.namespace}/{write.name}"
        if write.object is None:
            queue = self._finished.pop(key, None)
            if queue is not None:  # the job is gone: so are its series (Volcano's DeleteJobMetrics)
                for counter in self._phase_counters.values():
                    with contextlib.suppress(KeyError):
                        counter.remove(key, queue)
            return
        job = write.object["object"]
        phase = job["status"]["state"]["phase"]
        if phase not in FINAL_PHASES or key in self._finished:
            return
        self._finished[key] = job["queue"]
        counted = self._phase_counters.get(phase)
        if counted is not None and not full:
            counted.labels(key, job["queue"]).inc()

    def _pod_written(self, write: Write, *, full: bool) -> None:
        """A job's pod created (a new uid for its key): Volcano's job-to-pod creation latency."""
        key = f"{write.namespace}/{write.name}"
        if write.object is None:
            self._pods.pop(key, None)
            return
        meta = write.object["object"]["meta"]
        uid = meta.get("uid", "")
        if self._pods.get(key) == uid:
            return
        self._pods[key] = uid
        job_name = (meta.get("annotations") or {}).get(JOB_NAME)
        record = self.state.jobs.core.jobs.get(f"{write.namespace}/{job_name}") if job_name else None
        if full or record is None or record.job is None:
            return  # written again on gaining a term: observed by the leader that created it
        created = meta.get("creation_timestamp") or 0.0
        self._pod_creation_ms.observe(max(created - record.job.meta.creation_timestamp, 0.0) * 1000)


async def build(config: JobControllerConfig, stack: contextlib.AsyncExitStack) -> JobControllerService:
    bus = await connect_bus(config, stack, name=JOB_CONTROLLER)
    etcd = await connect_etcd(config, stack)
    return JobControllerService(bus, etcd, config)
