"""How a job says which CronJob or JobFlow made it, and the names such jobs get.

Kubernetes records the maker in an ownerReference; lahar's objects have none, so the job carries it in
an annotation: `owner.lahar.dev/controller: <Kind>/<name>/<uid>` (outside `lahar.dev/`, whose
annotations a Job passes to its PodGroup). The uid tells a CronJob or JobFlow apart from an earlier one
of the same name, as an ownerReference's does. Volcano's own annotations are set too: the scheduled time
of a CronJob's job, the JobTemplate and JobFlow of a flow's job ("<namespace>.<name>").
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from contracts.objects import Job

OWNER = "owner.lahar.dev/controller"
SCHEDULED_TIMESTAMP = "volcano.sh/cronjob-scheduled-timestamp"
CREATED_BY_TEMPLATE = "volcano.sh/createdByJobTemplate"
CREATED_BY_FLOW = "volcano.sh/createdByJobFlow"
CRONJOB, JOBFLOW = "CronJob", "JobFlow"


@dataclass(frozen=True, slots=True)
class Owner:
    kind: str  # CronJob | JobFlow
    name: str
    uid: str

    def annotation(self) -> str:
        return f"{self.kind}/{self.name}/{self.uid}"


def owner_of(job: Job) -> Owner | None:
    """The CronJob or JobFlow that made the job, None for any other job."""
    parts = job.meta.annotations.get(OWNER, "").split("/")
    if len(parts) != 3 or parts[0] not in (CRONJOB, JOBFLOW) or not all(parts):
        return None
    return Owner(*parts)


def cron_job_name(cronjob: str, scheduled: float) -> str:
    """`<cronjob>-<scheduled time in minutes since the epoch>`: one name per scheduled time, so a run
    asked for twice is one job (Kubernetes' and Volcano's rule)."""
    return f"{cronjob}-{int(scheduled) // 60}"


def flow_job_name(jobflow: str, flow: str) -> str:
    return f"{jobflow}-{flow}"


def object_string(namespace: str, name: str) -> str:
    """Volcano's "<namespace>.<name>" of its createdBy annotations."""
    return f"{namespace}.{name}"


def rfc3339(seconds: float, zone: datetime.tzinfo) -> str:
    """A time as Volcano writes the scheduled timestamp (RFC 3339 in the schedule's time zone)."""
    moment = datetime.datetime.fromtimestamp(int(seconds), zone)
    return moment.isoformat().replace("+00:00", "Z")


def scheduled_time(job: Job) -> float | None:
    """The scheduled time a CronJob's job records, None if it records none readable."""
    text = job.meta.annotations.get(SCHEDULED_TIMESTAMP, "")
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return None if moment.tzinfo is None else moment.timestamp()  # a local time says no instant
