"""gang: all-or-nothing scheduling of a PodGroup's minMember (Volcano's gang plugin).

Counts follow Volcano's JobInfo: ready = Bound/Binding/Running/Allocated/Succeeded, waiting = Pipelined,
valid = ready + Pipelined + Pending; pending best-effort tasks (no request) count as placed because they
never wait for resources. Per-role minimums (minTaskMember) apply only when minMember covers their sum.

Deviations from Volcano, on purpose:
- The Unschedulable message names the real reasons with node counts ("3 nodes: insufficient
  nvidia.com/gpu; queue q1 over capability cpu") instead of Volcano's status histogram, which tells a user
  nothing actionable. Likewise the NotEnoughPodsOfTask message names the short role and its counts.
- Its reason says why the gang waits (framework/pending.py, contracts/pending.py) instead of Volcano's
  NotEnoughResources for everything: the cluster's room (with what it lacks, which an autoscaler may add),
  a queue's quota (which it must not), a job that can never fit, a fifo queue's line, room reserved for a
  starving job, placement constraints.
- A job that failed job_valid keeps the condition carrying that reason (NotEnoughTasks, ...) instead of
  having it overwritten by a generic NotEnoughResources one.
- Sub-groups (a Job's partitions, model/subgroups.py) as Volcano's sub-jobs: a job is valid only with
  minSubGroups sub-groups of each policy, ready (pipelined) only with minSubGroups ready (pipelined) ones;
  the Unschedulable message names the policy that is short, the Scheduled one where partitions went.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from contracts.objects import PodGroupCondition
from services.scheduler.core.framework.pending import pending_verdict
from services.scheduler.core.framework.placement import format_reasons
from services.scheduler.core.framework.plugin import Event, Plugin, ValidateResult, Vote
from services.scheduler.core.model.pending import Verdict
from services.scheduler.core.model.subgroups import sub_groups_of
from services.scheduler.core.model.task import ALLOCATED_STATUSES, SCHEDULED_STATUSES, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.job import JobInfo

NOT_ENOUGH_TASKS = "NotEnoughTasks"
NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
SCHEDULED_REASON = "tasks in gang are ready to be scheduled"

_READY_ROLE = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}
_PIPELINED_ROLE = _READY_ROLE | {TaskStatus.PIPELINED}
_VALID_ROLE = _PIPELINED_ROLE | {TaskStatus.PENDING}


class GangPlugin(Plugin):
    name = "gang"

    def on_session_open(self, ssn: Session) -> None:
        # status of each task's last placement (Volcano's LastTransaction): a pending task whose last,
        # discarded placement was an allocation could have been scheduled, had the gang fit
        self._last_placement: dict[str, TaskStatus] = {}

    # --- counters ---------------------------------------------------------------------------------
    def _pending_best_effort(self, job: JobInfo, role: str | None = None) -> int:
        # the job keeps its best-effort tasks apart: counting them is O(#best-effort tasks), not a scan
        # of all pending tasks per placement
        tasks = job.best_effort
        if not tasks:
            return 0
        return sum(1 for t in tasks if t.status == TaskStatus.PENDING and (role is None or t.role == role))

    def _is_ready(self, job: JobInfo) -> bool:
        return job.ready_task_num() + self._pending_best_effort(job) >= job.min_available

    def _roles_apply(self, job: JobInfo) -> bool:
        return bool(job.task_min_available) and job.min_available >= sum(job.task_min_available.values())

    def _roles_satisfied(self, job: JobInfo, statuses: frozenset[TaskStatus], best_effort: bool) -> bool:
        """Volcano's CheckTaskReady / CheckTaskPipelined: every role reaches its minTaskMember."""
        if not self._roles_apply(job):
            return True
        for role, minimum in job.task_min_available.items():
            placed = job.role_count(role, statuses)
            if best_effort:
                placed += self._pending_best_effort(job, role)
            if placed < minimum:
                return False
        return True

    # --- job gates ---------------------------------------------------------------------------------
    def job_valid(self, ssn: Session, job: JobInfo) -> ValidateResult | None:
        if self._roles_apply(job):
            for role, minimum in job.task_min_available.items():
                valid = job.role_count(role, _VALID_ROLE)
                if minimum and valid < minimum:
                    return ValidateResult(
                        False,
                        NOT_ENOUGH_PODS_OF_TASK,
                        "Not enough valid pods of each task for gang-scheduling"
                        f" (task {role or '<none>'}: valid {valid}, min {minimum})",
                    )
        if job.podgroup.sub_group_policy:
            invalid = _sub_groups_invalid(job)
            if invalid is not None:
                return invalid
        valid = job.valid_task_num()
        if valid < job.min_available:
            return ValidateResult(
                False,
                NOT_ENOUGH_TASKS,
                f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_available}",
            )
        return None

    def job_ready(self, ssn: Session, job: JobInfo) -> bool:
        return (
            self._is_ready(job)
            and self._roles_satisfied(job, _READY_ROLE, best_effort=True)
            and (not job.podgroup.sub_group_policy or _sub_groups_short(job, pipelined=False) is None)
        )

    def job_pipelined(self, ssn: Session, job: JobInfo) -> Vote:
        placed = job.waiting_task_num() + job.ready_task_num() + self._pending_best_effort(job)
        if (
            placed >= job.min_available
            and self._roles_satisfied(job, _PIPELINED_ROLE, best_effort=True)
            and (not job.podgroup.sub_group_policy or _sub_groups_short(job, pipelined=True) is None)
        ):
            return Vote.PERMIT
        return Vote.REJECT

    def job_starving(self, ssn: Session, job: JobInfo) -> bool:
        # preemption looks at minMember only, not at per-role minimums (as Volcano)
        return job.waiting_task_num() + job.ready_task_num() < job.min_available

    def job_order(self, ssn: Session, left: JobInfo, right: JobInfo) -> int:
        left_ready, right_ready = self._is_ready(left), self._is_ready(right)
        if left_ready == right_ready:
            return 0
        return 1 if left_ready else -1

    # --- eviction -----------------------------------------------------------------------------------
    def preemptable(
        self, ssn: Session, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> list[TaskInfo]:
        """Never take a victim job below minMember: each victim costs its job one ready task."""
        occupied: dict[str, int] = {}
        victims = []
        for task in preemptees:
            job = ssn.jobs.get(task.job)
            if job is None:
                continue
            ready = occupied.get(job.uid)
            if ready is None:
                ready = job.ready_task_num()
            if ready > job.min_available:
                ready -= 1
                victims.append(task)
            occupied[job.uid] = ready
        return victims

    def reclaimable(
        self, ssn: Session, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]
    ) -> list[TaskInfo]:
        return self.preemptable(ssn, reclaimer, reclaimees)

    # --- bookkeeping ----------------------------------------------------------------------------------
    def on_allocate(self, ssn: Session, event: Event) -> None:
        self._last_placement[event.task.uid] = event.task.status

    # --- close ------------------------------------------------------------------------------------------
    def on_session_close(self, ssn: Session) -> None:
        for job in ssn.owned_jobs.values():  # conditions are written for the PodGroups this replica owns
            # a job without pods is reported only when enqueue rejected it (its PodGroup stays Pending)
            if not job.tasks and not job.job_fit_error:
                continue
            if self._is_ready(job) and (
                not job.podgroup.sub_group_policy or _sub_groups_short(job, pipelined=False) is None
            ):
                job.new_conditions["Scheduled"] = PodGroupCondition(
                    type="Scheduled",
                    status="True",
                    transition_id=ssn.uid,
                    last_transition_time=ssn.now,
                    reason=SCHEDULED_REASON,
                    message=_partitions_message(job) if job.podgroup.sub_group_policy else "",
                )
            elif not _only_releasing(job):
                # a condition job_valid left this session (NotEnoughTasks, ...) says more than ours
                earlier = job.new_conditions.get("Unschedulable")
                if earlier is None or earlier.transition_id != ssn.uid:
                    job.verdict, message = self._verdict(ssn, job)
                    job.new_conditions["Unschedulable"] = PodGroupCondition(
                        type="Unschedulable",
                        status="True",
                        transition_id=ssn.uid,
                        last_transition_time=ssn.now,
                        reason=job.verdict.reason,
                        message=message,
                    )
                else:
                    job.verdict = Verdict(earlier.reason)
                # the phase logic (Unknown for a running gang that is short) follows gang's verdict
                job.unschedulable_this_session = True

    def unready_tasks(self, job: JobInfo) -> int:
        """How many tasks the gang lacks: minAvailable minus its ready tasks and the pending ones this
        session could allocate (in a statement then discarded). Also Volcano's unschedule_task_count."""
        schedulable = job.ready_task_num() + sum(
            1 for task in job.tasks_by_status[TaskStatus.PENDING].values() if self._placed(task)
        )
        return job.min_available - schedulable

    def _verdict(self, ssn: Session, job: JobInfo) -> tuple[Verdict, str]:
        """Why the gang waits, and the condition's message: the per-reason node counts, then what the
        verdict adds (what the cluster lacks, that it can never fit)."""
        unready = self.unready_tasks(job)
        verdict = pending_verdict(ssn, job, unready, self._placed)
        message = f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {_reasons(ssn, job)}"
        short = _sub_groups_short(job, pipelined=False) if job.podgroup.sub_group_policy else None
        if short is not None:
            policy, have, need = short
            message = f"{message}; {have} of the {need} partitions of {policy} it needs are placed"
        return verdict, f"{message}; {verdict.detail}" if verdict.detail else message

    def _placed(self, task: TaskInfo) -> bool:
        """The task found room in an allocation this session that was undone with its gang."""
        return self._last_placement.get(task.uid) == TaskStatus.ALLOCATED


def _reasons(ssn: Session, job: JobInfo) -> str:
    """The job's fit errors, worst count per reason over its tasks (count 0: a reason not about nodes)."""
    worst: dict[str, int] = {}
    for uid, reasons in job.fit_errors.items():
        if uid in job.tasks:
            for reason, count in reasons.items():
                worst[reason] = max(worst.get(reason, 0), count)
    parts = [format_reasons(worst)] if worst else []
    if job.job_fit_error:
        parts.append(job.job_fit_error)
    if parts:
        return "; ".join(parts)
    waiting = job.waiting_task_num()
    if waiting:
        return f"{waiting} pipelined task(s) waiting for resources to be released"
    if job.is_pending_phase() and ssn.enqueue_enabled:
        return "podgroup not admitted by enqueue yet"
    return "not attempted this session"


def _sub_groups_invalid(job: JobInfo) -> ValidateResult | None:
    """Volcano's CheckSubJobValid: each policy has at least minSubGroups sub-groups."""
    groups = sub_groups_of(job)
    assert groups is not None
    for policy, need in groups.minimum.items():
        have = groups.count(policy)
        if have < need:
            return ValidateResult(
                False,
                NOT_ENOUGH_PODS_OF_TASK,
                f"Not enough valid subGroups for gang-scheduling (policy {policy}: {have} subGroups, "
                f"minSubGroups {need})",
            )
    return None


def _sub_groups_short(job: JobInfo, *, pipelined: bool) -> tuple[str, int, int] | None:
    groups = sub_groups_of(job)
    return None if groups is None else groups.shortfall(pipelined=pipelined)


def _partitions_message(job: JobInfo) -> str:
    """Where this session placed partitions (else what the Scheduled condition said before), and why
    the partitions still waiting could not be placed."""
    placed = f"partitions placed: {job.partition_note}" if job.partition_note else ""
    if not placed:
        earlier = next((c for c in job.conditions() if c.type == "Scheduled" and c.status == "True"), None)
        placed = earlier.message.split("; waiting: ")[0] if earlier is not None else ""
    waiting = f"waiting: {job.job_fit_error}" if job.job_fit_error else ""
    return "; ".join(part for part in (placed, waiting) if part)


def _only_releasing(job: JobInfo) -> bool:
    """Volcano's shouldSkipUnschedulableForReleasing: the gang is short only because some of its scheduled
    pods are terminating on their nodes, and nothing is left to schedule."""
    releasing = sum(1 for t in job.tasks_by_status[TaskStatus.RELEASING].values() if t.node)
    if not releasing or job.status_counts[TaskStatus.PENDING] or job.status_counts[TaskStatus.PIPELINED]:
        return False
    return job.count(*SCHEDULED_STATUSES) + releasing >= job.min_available
