"""Immutable typed values for Volcano's job-making kinds: CronJob (batch.volcano.sh/v1alpha1, "cron
VolcanoJob"), JobTemplate and JobFlow (flow.volcano.sh/v1alpha1: a DAG of jobs made from templates).

Parsing lives in contracts/parse_flow.py; the job-controller's workloads core (services/job_controller/
core/workloads/) makes Jobs of them and writes their statuses. Like contracts/objects.py, whose ApiObject
union includes these kinds, mappings are read-only and sequences tuples.

This module needs nothing of contracts/objects.py at import time (contracts/objects.py imports it at its
end to complete ApiObject), so either may be imported first; the codec resolves the names in the hints
below in both modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contracts.objects import Job, ObjectMeta

CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")
RETAIN_POLICIES = ("retain", "delete")
FLOW_PHASES = ("Pending", "Running", "Succeed", "Terminating", "Failed")
DEFAULT_SUCCESSFUL_HISTORY = 3
DEFAULT_FAILED_HISTORY = 1


def _no_entries() -> Mapping[str, Any]:
    from contracts.objects import FROZEN_EMPTY  # at call time: see the module docstring

    return FROZEN_EMPTY


# --- batch.volcano.sh/v1alpha1 CronJob -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CronJobStatus:
    """`active`: the names of the CronJob's jobs that have not finished; times in epoch seconds."""

    active: tuple[str, ...] = ()
    last_schedule_time: float | None = None
    last_successful_time: float | None = None


@dataclass(frozen=True, slots=True)
class CronJob:
    """`job_template` is the Job every run starts from: its meta holds the template's labels and
    annotations (its name is empty: each job's is `<cronjob>-<scheduled minute>`), its spec the Job
    spec. `time_zone` "" is UTC (see docs/deviations.md)."""

    meta: ObjectMeta
    schedule: str
    job_template: Job
    time_zone: str = ""
    starting_deadline_seconds: int | None = None
    concurrency_policy: str = "Allow"
    suspend: bool = False
    successful_jobs_history_limit: int = DEFAULT_SUCCESSFUL_HISTORY
    failed_jobs_history_limit: int = DEFAULT_FAILED_HISTORY
    status: CronJobStatus = field(default_factory=CronJobStatus)
    kind = "CronJob"


# --- flow.volcano.sh/v1alpha1 JobTemplate and JobFlow --------------------------------------------


@dataclass(frozen=True, slots=True)
class JobTemplateStatus:
    """The jobs made from the template (Volcano's jobDependsOnList)."""

    job_depends_on_list: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class JobTemplate:
    """A stored Job spec that nothing runs by itself; a JobFlow makes jobs of it. `spec` is that Job (its
    meta is the template's own)."""

    meta: ObjectMeta
    spec: Job
    status: JobTemplateStatus = field(default_factory=JobTemplateStatus)
    kind = "JobTemplate"


@dataclass(frozen=True, slots=True)
class HttpGetProbe:
    task_name: str = ""
    path: str = ""
    port: int = 0
    header_name: str = ""
    header_value: str = ""


@dataclass(frozen=True, slots=True)
class TcpSocketProbe:
    port: int
    task_name: str = ""


@dataclass(frozen=True, slots=True)
class TaskStatusProbe:
    """The target jobs' task `task_name` must have ended with its pods in `phase`."""

    task_name: str = ""
    phase: str = ""


@dataclass(frozen=True, slots=True)
class FlowProbe:
    http_get_list: tuple[HttpGetProbe, ...] = ()
    tcp_socket_list: tuple[TcpSocketProbe, ...] = ()
    task_status_list: tuple[TaskStatusProbe, ...] = ()


@dataclass(frozen=True, slots=True)
class FlowDependsOn:
    targets: tuple[str, ...] = ()  # the flows (templates) whose jobs must complete first
    probe: FlowProbe | None = None


@dataclass(frozen=True, slots=True)
class Flow:
    """One node of the DAG: the JobTemplate `name` names, made into the job `<jobflow>-<name>`.
    `patch` (a JobSpec patch) is read and kept, and not applied, as Volcano's controller does not."""

    name: str
    depends_on: FlowDependsOn | None = None
    patch: Mapping[str, object] | None = None


@dataclass(frozen=True, slots=True)
class FlowJobRun:
    """One phase a flow's job went through (Volcano's JobRunningHistory)."""

    state: str
    start_timestamp: float | None = None
    end_timestamp: float | None = None


@dataclass(frozen=True, slots=True)
class FlowJobStatus:
    """A job of the flow (Volcano's JobStatus of a JobFlow)."""

    name: str
    state: str = ""
    start_timestamp: float | None = None
    end_timestamp: float | None = None
    restart_count: int = 0
    running_histories: tuple[FlowJobRun, ...] = ()


@dataclass(frozen=True, slots=True)
class FlowCondition:
    phase: str = ""
    create_time: float | None = None
    running_duration: float | None = None
    task_status_count: Mapping[str, Mapping[str, int]] = field(default_factory=_no_entries)


@dataclass(frozen=True, slots=True)
class JobFlowStatus:
    pending_jobs: tuple[str, ...] = ()
    running_jobs: tuple[str, ...] = ()
    failed_jobs: tuple[str, ...] = ()
    completed_jobs: tuple[str, ...] = ()
    terminated_jobs: tuple[str, ...] = ()
    un_know_jobs: tuple[str, ...] = ()  # Volcano's spelling (unKnowJobs)
    job_status_list: tuple[FlowJobStatus, ...] = ()
    conditions: Mapping[str, FlowCondition] = field(default_factory=_no_entries)  # by job name
    phase: str = "Pending"  # status.state.phase
    message: str = ""  # why the flow waits or failed (lahar's; Volcano records events instead)


@dataclass(frozen=True, slots=True)
class JobFlow:
    meta: ObjectMeta
    flows: tuple[Flow, ...] = ()
    job_retain_policy: str = "retain"
    status: JobFlowStatus = field(default_factory=JobFlowStatus)
    kind = "JobFlow"
