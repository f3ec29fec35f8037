"""A PodGroup and its tasks as one schedulable unit (Volcano's JobInfo)."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from contracts.objects import NetworkTopologySpec, PodGroup, PodGroupCondition
from contracts.resources import EMPTY, Resources
from services.scheduler.core.model.task import ALLOCATED_STATUSES, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from services.scheduler.core.model.pending import Refusal, Verdict
    from services.scheduler.core.model.subgroups import SubGroups

_READY = frozenset(
    {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED, TaskStatus.SUCCEEDED}
)
_VALID = frozenset(
    {
        TaskStatus.BOUND,
        TaskStatus.BINDING,
        TaskStatus.RUNNING,
        TaskStatus.ALLOCATED,
        TaskStatus.SUCCEEDED,
        TaskStatus.PIPELINED,
        TaskStatus.PENDING,
    }
)


class JobInfo:
    """Mutable per-session state of one PodGroup. Counters by status are kept incrementally because the
    gang checks run after every placement.

    A job this replica does not own (`owned` False) is never placed by the session, only seen: its pending
    pods with a request are only counted in `unplaced` (request -> pods), which is what queue shares need
    of them. Its other pods are tasks when the session may evict them (preempt or reclaim configured),
    else only counted too (`add_counted`: by status, role and request, what the gang counters, the
    allocated sum and the DRF shares read of a job nobody places here)."""

    __slots__ = (
        "_allocated",
        "_allocated_sum",
        "allocated_hypernode",
        "best_effort",
        "counted",
        "creation_timestamp",
        "fit_errors",
        "hold_note",
        "job_fit_error",
        "min_available",
        "min_resources",
        "name",
        "namespace",
        "network_topology",
        "new_conditions",
        "owned",
        "partition_note",
        "pending_cause",
        "phase",
        "podgroup",
        "preemptable",
        "priority",
        "queue",
        "ready_count",
        "role_status_counts",
        "status_counts",
        "sub_groups",
        "task_min_available",
        "tasks",
        "tasks_by_status",
        "uid",
        "unplaced",
        "unschedulable_this_session",
        "verdict",
    )

    def __init__(self, podgroup: PodGroup, priority: int, *, owned: bool = True) -> None:
        self.podgroup = podgroup
        self.uid = podgroup.meta.key
        self.name = podgroup.meta.name
        self.namespace = podgroup.meta.namespace
        self.queue = podgroup.queue or "default"
        self.priority = priority
        self.min_available = podgroup.min_member
        self.task_min_available: dict[str, int] = dict(podgroup.min_task_member)
        self.min_resources: Resources | None = podgroup.min_resources
        self.network_topology: NetworkTopologySpec | None = podgroup.network_topology
        self.creation_timestamp = podgroup.meta.creation_timestamp
        self.phase = podgroup.status.phase or "Pending"
        self.preemptable = podgroup.meta.annotations.get("volcano.sh/preemptable", "").lower() == "true"
        self.allocated_hypernode: str = podgroup.meta.annotations.get("volcano.sh/allocated-hypernode", "")
        self.owned = owned
        self.tasks: dict[str, TaskInfo] = {}
        self.best_effort: list[TaskInfo] = []  # tasks without a request; their set never changes
        self.unplaced: dict[Resources, int] = {}
        self.counted: dict[Resources, int] = {}  # pods neither tasks nor unplaced, by request
        self.tasks_by_status: dict[TaskStatus, dict[str, TaskInfo]] = defaultdict(dict)
        self.status_counts: dict[TaskStatus, int] = defaultdict(int)
        self.role_status_counts: dict[str, dict[TaskStatus, int]] = defaultdict(lambda: defaultdict(int))
        # tasks and counted pods in a ready status (_READY), kept as they change: the gang plugin orders
        # jobs by readiness, so a session asks it at every comparison of its job queue
        self.ready_count = 0
        # allocated tasks by request (pods of one template share one request object): cheaper to keep
        # than a running Resources sum, which opening a session would rebuild once per task
        self._allocated: dict[Resources, int] = {}
        self._allocated_sum: Resources | None = None  # its sum, until it changes
        # per task uid: the reasons nodes rejected it this session, for the Unschedulable condition
        self.fit_errors: dict[str, dict[str, int]] = {}
        self.job_fit_error = ""
        # what refused it this session beyond the nodes (a queue's quota, the cluster at enqueue, its fifo
        # queue's head): the strongest one, for the pending reason (framework/pending.py)
        self.pending_cause: Refusal | None = None
        # set on the job the starvation plugin holds room for, for its condition
        self.hold_note = ""
        # why it waits, once the gang plugin wrote its Unschedulable condition this session
        self.verdict: Verdict | None = None
        self.unschedulable_this_session = False
        # its partitions (model/subgroups.py), built on first use and only for a PodGroup with a
        # subGroupPolicy; and where allocate placed them this session, for the Scheduled condition
        self.sub_groups: SubGroups | None = None
        self.partition_note = ""
        # conditions plugins set at session close, by type (replacing the PodGroup's current one)
        self.new_conditions: dict[str, PodGroupCondition] = {}

    # --- membership -----------------------------------------------------------------------------
    def add_task(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        if task.best_effort:
            self.best_effort.append(task)
        self._index(task)

    def add_unplaced(self, requests: Resources) -> None:
        """A pending pod of a job another replica places: counted, not modelled."""
        self.unplaced[requests] = self.unplaced.get(requests, 0) + 1

    def add_counted(self, requests: Resources, role: str, status: TaskStatus) -> None:
        """A pod of a job another replica places, not modelled as a task: counted by status and role
        (the gang counters), and by request (allocated, total request)."""
        self.counted[requests] = self.counted.get(requests, 0) + 1
        self.status_counts[status] += 1
        self.role_status_counts[role][status] += 1
        if status in _READY:
            self.ready_count += 1
        if status in ALLOCATED_STATUSES:
            self._allocated[requests] = self._allocated.get(requests, 0) + 1
            self._allocated_sum = None

    @property
    def allocated(self) -> Resources:
        """The sum of the requests of the job's allocated tasks (plugins read it several times per job
        at session open: it is summed again only after it changed)."""
        total = self._allocated_sum
        if total is None:
            total = self._allocated_sum = _sum(self._allocated)
        return total

    def total_request(self) -> Resources:
        """The requests of all the job's pods, modelled or only counted."""
        counts = dict(self.unplaced)
        for requests, count in self.counted.items():
            counts[requests] = counts.get(requests, 0) + count
        for task in self.tasks.values():
            counts[task.resreq] = counts.get(task.resreq, 0) + 1
        return _sum(counts)

    def task_count(self) -> int:
        """Every pod of the job, modelled or only counted."""
        return len(self.tasks) + sum(self.unplaced.values()) + sum(self.counted.values())

    def _index(self, task: TaskInfo) -> None:
        self.tasks_by_status[task.status][task.uid] = task
        self.status_counts[task.status] += 1
        self.role_status_counts[task.role][task.status] += 1
        if task.status in _READY:
            self.ready_count += 1
        if task.status in ALLOCATED_STATUSES:
            self._count_allocated(task, 1)

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        old = task.status
        del self.tasks_by_status[old][task.uid]
        self.status_counts[old] -= 1
        role_counts = self.role_status_counts[task.role]
        role_counts[old] -= 1
        task.status = status
        self.tasks_by_status[status][task.uid] = task
        self.status_counts[status] += 1
        role_counts[status] += 1
        self.ready_count += (status in _READY) - (old in _READY)
        was_allocated = old in ALLOCATED_STATUSES
        if was_allocated != (status in ALLOCATED_STATUSES):
            self._count_allocated(task, -1 if was_allocated else 1)

    def _count_allocated(self, task: TaskInfo, sign: int) -> None:
        # a count that drops to 0 stays: the sum then keeps the dimensions at 0, as a running sum would
        self._allocated[task.resreq] = self._allocated.get(task.resreq, 0) + sign
        self._allocated_sum = None

    # --- gang counters (Volcano's JobInfo helpers) ------------------------------------------------
    def count(self, *statuses: TaskStatus) -> int:
        counts = self.status_counts
        return sum(counts[s] for s in statuses)

    def ready_task_num(self) -> int:
        return self.ready_count

    def waiting_task_num(self) -> int:
        return self.status_counts[TaskStatus.PIPELINED]

    def valid_task_num(self) -> int:
        return self.count(*_VALID)

    def role_count(self, role: str, statuses: frozenset[TaskStatus]) -> int:
        counts = self.role_status_counts.get(role)
        return sum(counts[s] for s in statuses) if counts else 0

    def pending_tasks(self) -> list[TaskInfo]:
        return list(self.tasks_by_status[TaskStatus.PENDING].values())

    def is_pending_phase(self) -> bool:
        return self.phase == "Pending"

    def record_fit_errors(self, task: TaskInfo, reasons: dict[str, int]) -> None:
        self.fit_errors[task.uid] = reasons

    def record_refusal(self, refusal: Refusal) -> None:
        if refusal.outranks(self.pending_cause):
            self.pending_cause = refusal

    def unschedulable_since(self) -> tuple[float, str] | None:
        """Since when the PodGroup has been Unschedulable without a break, and the reason it was given
        last (its condition as the session found it); None if it is not."""
        for condition in self.podgroup.status.conditions:
            if condition.type == "Unschedulable" and condition.status == "True":
                since = condition.last_transition_time
                return (since, condition.reason) if since is not None else None
        return None

    def conditions(self) -> tuple[PodGroupCondition, ...]:
        return self.podgroup.status.conditions

    def __repr__(self) -> str:
        return f"Job({self.uid} q={self.queue} min={self.min_available} phase={self.phase})"


def _sum(counts: dict[Resources, int]) -> Resources:
    total = EMPTY
    for requests, count in counts.items():
        total = total + requests.times(count)
    return total
