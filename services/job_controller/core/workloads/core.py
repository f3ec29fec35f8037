"""The workloads core: Volcano's cronjob, jobflow and jobtemplate controllers as one pure core beside the
job-controller's others (core/controller.py runs them side by side over one log; the simulator runs it
too).

It folds the CronJobs, JobTemplates and JobFlows admission accepted and the Jobs' lifecycles (fold.py),
decides per CronJob or JobFlow which jobs to create and delete (cron.py, flow.py) and returns them as
requests for admission's events (requests.py), and renders their statuses for the read model
(render.py). Time matters to CronJobs only: `due` hands out the CronJobs whose schedule fires
(core/timer_heap.py), and `next_moment` says when the next one will, for a simulated clock.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

from contracts import codec
from services.job_controller.core import timer_heap
from services.job_controller.core.workloads import checkpoint
from services.job_controller.core.workloads.cron import decide_cron, next_fire
from services.job_controller.core.workloads.flow import decide_flow
from services.job_controller.core.workloads.fold import HANDLED_EVENTS, Touched, apply, flow_jobs, made_by
from services.job_controller.core.workloads.render import cronjob_object, jobflow_object, jobtemplate_object
from services.job_controller.core.workloads.requests import create_job, delete_job
from services.job_controller.core.workloads.state import WorkloadKey, WorkloadsState
from shared.projected_core import ObjectKey
from shared.runner_types import Event, Output

KINDS: tuple[str, ...] = ("cronjob", "jobflow", "jobtemplate")
MAX_NOTES = 100  # notes the service has not read yet (a simulation reads none)


class WorkloadsCore:
    reads = HANDLED_EVENTS

    def initial(self) -> WorkloadsState:
        return WorkloadsState()

    def apply(self, state: WorkloadsState, event: Event) -> Touched:
        """Fold one event (in place); returns the read-model objects and the keys it touched."""
        return apply(state, event)

    def due(self, state: WorkloadsState, now: float) -> list[WorkloadKey]:
        """The CronJobs whose schedule fires by `now`, each scheduled again for its next time."""
        keys = []
        for key in timer_heap.due(state.timers, now):
            record = state.cronjobs.get(key)
            if record is not None:
                timer_heap.schedule(state.timers, key, next_fire(record, now))
                keys.append(("cronjob", key))
        return keys

    def next_moment(self, state: WorkloadsState, now: float) -> float | None:
        """When the next CronJob fires after `now` (None: none will)."""
        moments = (next_fire(record, now) for record in state.cronjobs.values())
        return min((moment for moment in moments if moment is not None), default=None)

    def reconcile(
        self, state: WorkloadsState, now: float, keys: Collection[WorkloadKey] | None = None
    ) -> list[Output]:
        if keys is None:
            keys = self.reconcile_keys(state)
        outputs: list[Output] = []
        for key in sorted(set(keys)):
            outputs += self._reconcile_one(state, key, now)
        return outputs

    def reconcile_keys(self, state: WorkloadsState) -> list[WorkloadKey]:
        makers = {("cronjob", key) for key in state.cronjobs} | {("jobflow", key) for key in state.jobflows}
        return sorted(makers | set(state.doomed.values()))

    def _reconcile_one(self, state: WorkloadsState, key: WorkloadKey, now: float) -> list[Output]:
        kind, name = key
        # the jobs of a maker that is gone (or was replaced) go first, as the garbage collector's
        outputs = [
            delete_job(job, state.jobs[job])
            for job, maker in sorted(state.doomed.items())
            if maker == key and job in state.jobs
        ]
        if kind == "cronjob" and name in state.cronjobs:
            record = state.cronjobs[name]
            decision = decide_cron(record, made_by(state, key), state.jobs, now)
            outputs += [delete_job(job, state.jobs[job]) for job in decision.delete if job in state.jobs]
            if decision.create is not None:
                outputs.append(create_job(decision.create, record.cronjob.meta.uid))
            self._note(state, decision.notes)
        elif kind == "jobflow" and name in state.jobflows:
            flow = state.jobflows[name]
            made = decide_flow(flow, flow_jobs(state, name), state.templates, state.jobs)
            outputs += [delete_job(job, state.jobs[job]) for job in made.delete if job in state.jobs]
            for job in made.create:
                template = job.meta.name.removeprefix(f"{flow.jobflow.meta.name}-")
                outputs.append(create_job(job, flow.jobflow.meta.uid, flow.made.get(template, 0)))
        return outputs

    @staticmethod
    def _note(state: WorkloadsState, notes: Collection[str]) -> None:
        for note in notes:
            if note not in state.notes:
                state.notes.append(note)
        del state.notes[:-MAX_NOTES]

    # --- the read model -----------------------------------------------------------------------------

    def render(self, state: WorkloadsState, key: ObjectKey) -> Mapping[str, Any] | None:
        kind, namespace, name = key
        full = f"{namespace}/{name}"
        obj: Any = None
        if kind == "cronjob":
            obj = cronjob_object(state, full)
        elif kind == "jobflow":
            obj = jobflow_object(state, full)
        elif kind == "jobtemplate":
            obj = jobtemplate_object(state, full)
        return None if obj is None else codec.encode_object(obj)

    def keys(self, state: WorkloadsState) -> Iterator[ObjectKey]:
        for kind, table in (("cronjob", state.cronjobs), ("jobflow", state.jobflows)):
            for key in table:
                namespace, _, name = key.partition("/")
                yield (kind, namespace, name)
        for key in state.templates:
            namespace, _, name = key.partition("/")
            yield ("jobtemplate", namespace, name)

    # --- the checkpoint -----------------------------------------------------------------------------

    def dump(self, state: WorkloadsState) -> dict[str, Any]:
        return checkpoint.to_plain(state)

    def load(self, data: dict[str, Any]) -> WorkloadsState:
        return checkpoint.from_plain(data)
