"""`lahar get` for CronJobs, JobFlows and JobTemplates: the names a user may type (kubectl's and Volcano's
short names) and the columns (kubectl's for a CronJob, vcctl's for the flow kinds)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from contracts.objects import Job, ObjectMeta
from contracts.objects_flow import (
    CronJob,
    CronJobStatus,
    Flow,
    FlowJobStatus,
    JobFlow,
    JobFlowStatus,
    JobTemplate,
    JobTemplateStatus,
)
from services.cli import output
from shared.client_reads import API_KINDS, NAMESPACED, resolve_kind

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("typed", "kind"),
    [
        ("cronjobs", "cronjob"),
        ("cj", "cronjob"),
        ("cronvj", "cronjob"),
        ("CronJob", "cronjob"),
        ("jobflows", "jobflow"),
        ("jf", "jobflow"),
        ("jobtemplates", "jobtemplate"),
        ("jt", "jobtemplate"),
    ],
)
def test_the_kinds_names(typed: str, kind: str) -> None:
    assert (
        resolve_kind(typed) == kind
        and kind in NAMESPACED
        and API_KINDS[kind] in ("CronJob", "JobFlow", "JobTemplate")
    )


def table(obj: object, kind: str, *, wide: bool = False) -> tuple[list[str], list[str]]:
    """The columns and the row's cells as `lahar get` prints them (empty cells as <none>)."""
    cols = output.headers(kind, wide=wide, namespaced=False)
    row = output.row(obj, NOW)
    return list(cols), [output.table(["x"], [[row[c]]]).splitlines()[1] for c in cols]


def test_cronjob_columns_are_kubectls() -> None:
    status = CronJobStatus(active=("tick-1",), last_schedule_time=NOW - 120, last_successful_time=None)
    cron = CronJob(
        meta=ObjectMeta("tick", creation_timestamp=NOW - 3600),
        schedule="*/5 * * * *",
        job_template=Job(meta=ObjectMeta("")),
        status=status,
    )
    assert table(cron, "cronjob") == (
        ["NAME", "SCHEDULE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"],
        ["tick", "*/5 * * * *", "False", "1", "2m", "60m"],
    )
    _, row = table(replace(cron, time_zone="Asia/Tokyo"), "cronjob", wide=True)
    assert row[-3:] == ["Asia/Tokyo", "Allow", "<none>"]


def test_jobflow_and_jobtemplate_columns() -> None:
    status = JobFlowStatus(
        completed_jobs=("f-a",), job_status_list=(FlowJobStatus("f-a"), FlowJobStatus("f-b")), phase="Running"
    )
    flow = JobFlow(
        ObjectMeta("f", creation_timestamp=NOW - 30), flows=(Flow("a"), Flow("b"), Flow("c")), status=status
    )
    assert table(flow, "jobflow", wide=True) == (
        ["NAME", "STATUS", "AGE", "JOBS", "COMPLETED", "FAILED", "MESSAGE"],
        ["f", "Running", "30s", "2/3", "1", "0", "<none>"],
    )
    template = JobTemplate(
        ObjectMeta("a", creation_timestamp=NOW - 30),
        Job(meta=ObjectMeta("a")),
        JobTemplateStatus(("f-a", "g-a")),
    )
    assert table(template, "jobtemplate", wide=True) == (["NAME", "AGE", "JOBS"], ["a", "30s", "f-a,g-a"])
