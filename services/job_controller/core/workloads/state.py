"""The workloads core's state: the CronJobs, JobTemplates and JobFlows of the log, the jobs they made (as
much of each as their statuses and decisions read), and the names of every job that exists (a maker
never creates a job whose name is taken). Mutable containers the fold updates in place, like the job-
controller's own state; plain data for the checkpoint (checkpoint.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from contracts.objects_flow import CronJob, FlowJobRun, JobFlow, JobTemplate
from services.job_controller.core.timer_heap import TimerHeap
from services.job_controller.core.workloads.owners import Owner

# what the core reconciles one at a time: ("cronjob" | "jobflow", "namespace/name")
WorkloadKey = tuple[str, str]


@dataclass(slots=True)
class MadeJob:
    """A job a CronJob or JobFlow made, as its maker reads it."""

    key: str  # namespace/name
    uid: str
    owner: Owner
    created: float  # creationTimestamp
    template: str = ""  # the JobTemplate of a flow's job
    scheduled: float | None = None  # the scheduled time of a CronJob's job
    phase: str = "Pending"
    finished_at: float | None = None  # when it reached its last phase (lastTransitionTime)
    retry_count: int = 0
    task_status_count: dict[str, dict[str, int]] = field(default_factory=dict)
    runs: list[FlowJobRun] = field(default_factory=list)  # its phases, with when each began and ended
    orphaned: bool = False  # its JobFlow was deleted and retained it: nobody's now

    @property
    def name(self) -> str:
        return self.key.partition("/")[2]


@dataclass(slots=True)
class CronRecord:
    cronjob: CronJob
    # the latest scheduled time it made a job for (Kubernetes' status.lastScheduleTime), and the latest
    # time one of its jobs completed; both outlive the jobs (history limits delete those)
    last_schedule_time: float | None = None
    last_successful_time: float | None = None


@dataclass(slots=True)
class FlowRecord:
    jobflow: JobFlow
    phase: str = "Pending"  # Volcano's state machine: Pending -> Running -> Succeed | Failed
    message: str = ""  # why it failed
    made: dict[str, int] = field(default_factory=dict)  # flow name -> how many times its job was made
    statuses: dict[str, FlowRunStatus] = field(default_factory=dict)  # job name -> what the status keeps


@dataclass(slots=True)
class FlowRunStatus:
    """A flow job's entry of status.jobStatusList, kept after the job is gone (as Volcano's status)."""

    state: str
    started: float
    ended: float | None = None
    restart_count: int = 0
    runs: tuple[FlowJobRun, ...] = ()


@dataclass(slots=True)
class WorkloadsState:
    cronjobs: dict[str, CronRecord] = field(default_factory=dict)
    jobflows: dict[str, FlowRecord] = field(default_factory=dict)
    templates: dict[str, JobTemplate] = field(default_factory=dict)
    made: dict[str, MadeJob] = field(default_factory=dict)  # job key -> the job, while it exists
    owned: dict[WorkloadKey, set[str]] = field(default_factory=dict)  # maker -> its jobs' keys (derived)
    jobs: dict[str, str] = field(default_factory=dict)  # every existing job's key -> its uid
    # jobs whose maker is gone and took them along (Kubernetes' garbage collection): key -> maker key
    doomed: dict[str, WorkloadKey] = field(default_factory=dict)
    # derived from the CronJobs, and moved on by the loop's timer (not compared: a loaded state's timers
    # are rebuilt from its CronJobs, which fire no later for it)
    timers: TimerHeap = field(default_factory=TimerHeap, compare=False)  # when each CronJob next fires
    # what the last reconcile noticed (too many missed schedules, ...): read and cleared by the service;
    # not checkpointed
    notes: list[str] = field(default_factory=list, compare=False)
