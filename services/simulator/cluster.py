"""The simulated stack around one simulated event log: admission (defaulting), the job- and queue-
controllers' cores, the scheduling session with the binder's plan events, and the nodes.

Everything that happens is an event of the log (log.py), written by the service that would write it in
the stack, folded into the controllers' cores and applied to the world (world.py) as it is written:
- a Job arriving is JobSubmitted (defaulted as admission's mutate_job does); a Queue, PriorityClass,
  Command, CronJob, JobTemplate or JobFlow arriving is QueueApplied, PriorityClassApplied, CommandIssued,
  CronJobApplied, JobTemplateApplied or JobFlowApplied;
- the jobs a CronJob or JobFlow makes and deletes are asked of admission by the job-controller (its
  workloads core's JobSubmitted and JobDeleted outputs): admission's answer is written as it would be,
  under the id the request asked for, and a CronJob stops firing at the horizon (every CronJob is
  suspended then, as `kubectl patch cronjob --suspend` would), so a simulation with CronJobs ends;
- the controllers' outputs (PodGroupCreated, PodCreated, PodDeletionRequested, JobStatusChanged,
  JobCleanedUp, QueueStateChanged, ...) are written until they have nothing more to say (`settle`);
- a session's decisions become the binder's events: PodBound, PodEvicting, PodNominated (the room a
  preemption reserves) and PodGroupStatusChanged for the PodGroups whose phase or conditions changed
  (scheduler.plans.build_plans + binder's plan_outputs);
- the nodes answer (nodes.py): PodRunning, PodTerminated, and PodSucceeded / PodFailed when runs end.
A batch is written whole before the nodes answer it, as the binder commits a plan before agents see it.

A scheduling cycle may run the session twice at the same simulated time: the session that moves a
PodGroup out of Pending (enqueue) cannot place its pods, which the job-controller creates only then; the
second session places them. The two count as one cycle (their results merged), so a job's pods are placed
in the cycle its PodGroup is enqueued in and a one-session simulation still shows where they would go (the
stack's scheduler would place them one schedule period later).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from contracts import codec, payloads
from contracts.events import ADMISSION, BINDER, JOB_CONTROLLER, writer_of
from contracts.objects import ApiObject, Command, Job, PriorityClass, Queue
from contracts.objects_flow import CronJob, JobFlow, JobTemplate
from contracts.payloads import decode_as
from contracts.usage import NodeUsage
from services.admission.core.command_rules import target_key
from services.admission.core.mutate import mutate_job, mutate_queue
from services.binder.core.core import plan_outputs
from services.scheduler.core.conf import SchedulerConf
from services.scheduler.core.framework.plan import SessionResult
from services.scheduler.core.framework.session import run_session
from services.scheduler.core.snapshot import ClusterSnapshot
from services.scheduler.plans import build_plans
from services.simulator import nodes
from services.simulator.controllers import Controllers
from services.simulator.log import SimLog
from services.simulator.world import World, arrival_time
from shared.runner_types import Event, Output, deterministic_id

DEFAULT_HORIZON_S = 3600.0  # how long CronJobs fire in a simulation unless told
_APPLIED = {"CronJob": "CronJobApplied", "JobTemplate": "JobTemplateApplied", "JobFlow": "JobFlowApplied"}

SIM_REPLICA = "simulator"  # the scheduler replica the plans are attributed to
SETTLE_ROUNDS = 50
# events that by themselves do not move the simulation on (a session restamps PodGroup conditions)
QUIET = frozenset({"PodGroupStatusChanged"})


def _object(obj: ApiObject) -> dict[str, Any]:
    return {"object": codec.encode_object(obj)}


class _Everything:
    """The one simulated scheduler replica owns every PodGroup."""

    def __contains__(self, item: object) -> bool:
        return True


class SimCluster:
    def __init__(self, objects: Iterable[object] = (), *, horizon_s: float = DEFAULT_HORIZON_S) -> None:
        self.log = SimLog()
        self.world = World()
        self.controllers = Controllers()
        self.arrivals: list[tuple[float, object]] = []
        self._unanswered: list[Event] = []  # written, not yet answered by the nodes
        self._refused: set[str] = set()  # requests of the job-controller admission refused
        for obj in objects:
            meta = getattr(obj, "meta", None)
            arrives = arrival_time(meta) if meta is not None else 0.0
            if arrives > 0:
                self.arrivals.append((arrives, obj))
            else:
                self.admit(obj, 0.0)
            if isinstance(obj, CronJob):
                self.arrivals.append((max(horizon_s, arrives), replace(obj, suspend=True)))

    # --- writing ------------------------------------------------------------------------------------
    def write(self, outputs: Iterable[tuple[str, Output]], now: float) -> None:
        """Write a batch (each output with its producer), then let the nodes answer it."""
        for producer, output in outputs:
            if producer == JOB_CONTROLLER and writer_of(output.type) == ADMISSION:
                answer = self._answer(output, now)
                if answer is None:
                    continue
                output, producer = answer, ADMISSION
            event = self.log.append(producer, output, now)
            if event is None:
                continue
            self.controllers.fold(event)
            self.world.observe(event)
            self._unanswered.append(event)
        while self._unanswered:
            answers = nodes.reactions(self.world, self._unanswered.pop(0))
            if answers:
                self.write(answers, now)

    # --- admission ----------------------------------------------------------------------------------
    def _answer(self, request: Output, now: float) -> Output | None:
        """Admission's event for a request of the job-controller, under the id the request asked for;
        None for a refused one (its job exists already, or is gone), remembered so it is not asked again."""
        key = f"{request.namespace}/{request.name}"
        job = self.world.jobs.get(key)
        exists = job is not None and job.deleted_time is None
        payload: dict[str, Any] = {}
        if request.type == "JobSubmitted" and isinstance(request.payload, payloads.JobSubmitted):
            made = mutate_job(decode_as(request.payload.object, Job))
            payload = _object(replace(made, meta=replace(made.meta, uid=request.id, creation_timestamp=now)))
            refused = exists
        else:
            refused = not exists
        if refused:
            self._refused.add(request.id)
            return None
        return replace(request, payload=payload)

    def admit(self, obj: object, now: float) -> None:
        """What admission writes for an accepted object (the simulator does not validate: `lahar validate`
        does). Nodes, hypernodes and the pods and PodGroups of plain manifests go to the world as they are."""
        if isinstance(obj, Job):
            job = mutate_job(obj)
            self._admitted("JobSubmitted", "job", job.meta.namespace, job.meta.name, _object(job), now)
        elif isinstance(obj, Command):
            if obj.target is None:
                return  # admission rejects a command without a target
            # named as vcctl and admission name an unnamed command
            name = obj.meta.name or f"{obj.target.name}-{obj.action.lower()}"
            payload = {"action": obj.action, "target_kind": obj.target.kind, "target": target_key(obj)}
            self._admitted(
                "CommandIssued", "command", obj.meta.namespace, name, payload, now, target_key(obj)
            )
        else:
            self.world.add(obj, now)
            name = getattr(getattr(obj, "meta", None), "name", "")
            if isinstance(obj, Queue):
                self._admitted("QueueApplied", "queue", None, name, _object(mutate_queue(obj)), now)
            elif isinstance(obj, PriorityClass):
                self._admitted("PriorityClassApplied", "priorityclass", None, name, _object(obj), now)
            elif isinstance(obj, CronJob | JobTemplate | JobFlow):
                # created when it arrives (the loaded order stands in for a time when it arrives at once),
                # with an identity if the manifest has none (its jobs name their maker by it)
                stamp = now if now > 0 else obj.meta.creation_timestamp
                uid = obj.meta.uid or f"{obj.meta.namespace}-{obj.meta.name}"
                stored = replace(obj, meta=replace(obj.meta, uid=uid, creation_timestamp=stamp))
                namespace = obj.meta.namespace
                self._admitted(_APPLIED[obj.kind], obj.kind.lower(), namespace, name, _object(stored), now)

    def _admitted(
        self,
        event_type: str,
        kind: str,
        namespace: str | None,
        name: str,
        payload: dict[str, Any],
        now: float,
        correlation: str = "",
    ) -> None:
        key = f"{namespace}/{name}" if namespace else name
        output = Output(
            type=event_type,
            kind=kind,
            namespace=namespace,
            name=name,
            payload=payload,
            id=deterministic_id(ADMISSION, event_type, key, len(self.log) + 1),
            correlation_id=correlation or key,
        )
        self.write([(ADMISSION, output)], now)

    def arrive(self, now: float) -> None:
        """Admit the objects due by `now`, in the order they were given."""
        due = [obj for t, obj in self.arrivals if t <= now]
        self.arrivals = [(t, obj) for t, obj in self.arrivals if t > now]
        for obj in due:
            self.admit(obj, now)

    # --- the controllers, the scheduler, the nodes --------------------------------------------------
    def settle(self, now: float) -> None:
        """Reconcile the controllers and write what they say until they have nothing more to write."""
        for _ in range(SETTLE_ROUNDS):
            outputs = [
                (p, o)
                for p, o in self.controllers.reconcile(now)
                if o.id not in self.log and o.id not in self._refused
            ]
            if not outputs:
                return
            self.write(outputs, now)
        raise RuntimeError(f"the controllers do not settle at t={now}")

    def complete(self, now: float) -> None:
        self.write(nodes.completions(self.world, now), now)

    def schedule(
        self,
        conf: SchedulerConf,
        *,
        seed: int,
        session_id: str,
        now: float,
        usage: Mapping[str, NodeUsage] | None = None,
    ) -> SessionResult:
        """One scheduling cycle (see the module docstring); the controllers settle after each session.
        `usage`: the nodes' fresh usage samples (usage.py), when the conf's usage plugin reads them."""
        snapshot = self._snapshot(usage)
        first = run_session(snapshot, conf, seed=seed, session_id=session_id, now=now)
        mark = len(self.log)
        self._commit(first, snapshot, now)
        # pods the session could not see: their PodGroup was still Pending when it started
        pending = {pg.meta.key for pg in snapshot.podgroups if pg.status.phase == "Pending"}
        created = any(
            e.type == "PodCreated" and self.world.pod_job.get(f"{e.namespace}/{e.name}") in pending
            for e in self.log.events[mark:]
        )
        if not created:
            return first
        snapshot = self._snapshot(usage)
        second = run_session(snapshot, conf, seed=seed, session_id=session_id, now=now)
        self._commit(second, snapshot, now)
        return SessionResult(
            first.session_id,
            plans=first.plans + second.plans,
            pipelined=second.pipelined,
            podgroups={**first.podgroups, **second.podgroups},
            queues=second.queues or first.queues,
        )

    def _snapshot(self, usage: Mapping[str, NodeUsage] | None) -> ClusterSnapshot:
        snapshot = self.world.snapshot()
        return snapshot if usage is None else replace(snapshot, usage=usage)

    def _commit(self, result: SessionResult, snapshot: ClusterSnapshot, now: float) -> None:
        for message in build_plans(result, snapshot, SIM_REPLICA, _Everything()):
            self.write([(BINDER, o) for o in plan_outputs(message)], now)
        self.world.refresh_podgroups(result)
        self.settle(now)

    # --- progress -----------------------------------------------------------------------------------
    def changed_since(self, mark: int) -> bool:
        return any(e.type not in QUIET for e in self.log.events[mark:])

    def idle(self, now: float) -> bool:
        """Nothing is left to happen: every job finished, no pod runs or waits outside a job, nothing is
        still to arrive and no controller waits for a timeout or a TTL."""
        world = self.world
        return (
            not world.unfinished_jobs()
            and not world.finish_at
            and not self.arrivals
            and not world.pending_pods_without_job()
            and self.controllers.next_deadline(now) is None
        )

    def next_moment(self, now: float) -> float | None:
        """When something happens next without a session deciding it: a run ends, an object arrives, a
        controller's timeout or TTL falls due, or a running pod's cool-down ends (it may be a victim then)."""
        arrival = min((t for t, _ in self.arrivals), default=None)
        world = self.world
        moments = (
            world.next_completion(),
            arrival,
            self.controllers.next_deadline(now),
            world.next_cooldown_end(now),
        )
        return min((t for t in moments if t is not None), default=None)
