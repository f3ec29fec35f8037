"""Volcano's job-making kinds from manifests: CronJob (batch.volcano.sh), JobTemplate and JobFlow
(flow.volcano.sh). Field names follow Volcano's CRDs, whose defaults (concurrencyPolicy Allow, history
limits 3 and 1) are applied here as the API server applies a CRD's; the job specs inside are read as a
Job's (contracts/parse_volcano.py), so their errors carry their full paths. Cross-field rules (the
schedule, the DAG) belong to admission (services/admission/core/workload_rules.py).
"""

from __future__ import annotations

from contracts.objects import Job, ObjectMeta
from contracts.objects_flow import (
    CONCURRENCY_POLICIES,
    DEFAULT_FAILED_HISTORY,
    DEFAULT_SUCCESSFUL_HISTORY,
    RETAIN_POLICIES,
    CronJob,
    Flow,
    FlowDependsOn,
    FlowProbe,
    HttpGetProbe,
    JobFlow,
    JobTemplate,
    TaskStatusProbe,
    TcpSocketProbe,
)
from contracts.parse_fields import Fields
from contracts.parse_volcano import parse_job

PORT_MAX = 65535


# --- batch.volcano.sh CronJob --------------------------------------------------------------------


def _template_meta(template: Fields, namespace: str) -> ObjectMeta:
    """The job template's metadata: only its labels and annotations reach the jobs (the jobs' names are
    the controller's), in the CronJob's namespace."""
    meta = template.section("metadata")
    return ObjectMeta(
        name="",
        namespace=namespace,
        labels=meta.string_map("labels"),
        annotations=meta.string_map("annotations"),
    )


def _job_template(spec: Fields, namespace: str) -> Job:
    template = spec.section("jobTemplate", required=True)
    return parse_job(template, _template_meta(template, namespace))


def parse_cronjob(doc: Fields, meta: ObjectMeta) -> CronJob:
    spec = doc.section("spec")
    return CronJob(
        meta=meta,
        schedule=spec.string("schedule", required=True),
        job_template=_job_template(spec, meta.namespace),
        time_zone=spec.string("timeZone"),
        starting_deadline_seconds=spec.optional_integer("startingDeadlineSeconds", minimum=0, bits=64),
        concurrency_policy=spec.string("concurrencyPolicy", "Allow", choices=CONCURRENCY_POLICIES),
        suspend=spec.boolean("suspend"),
        successful_jobs_history_limit=spec.integer(
            "successfulJobsHistoryLimit", DEFAULT_SUCCESSFUL_HISTORY, minimum=0
        ),
        failed_jobs_history_limit=spec.integer("failedJobsHistoryLimit", DEFAULT_FAILED_HISTORY, minimum=0),
    )


# --- flow.volcano.sh JobTemplate and JobFlow -----------------------------------------------------


def parse_jobtemplate(doc: Fields, meta: ObjectMeta) -> JobTemplate:
    # a JobTemplate's spec is a Job's spec, read at the same paths (spec.tasks, spec.queue, ...)
    return JobTemplate(meta=meta, spec=parse_job(doc, meta))


def _http_get(probe: Fields) -> HttpGetProbe:
    header = probe.section("httpHeader")
    return HttpGetProbe(
        task_name=probe.string("taskName"),
        path=probe.string("path"),
        port=probe.integer("port", minimum=0, maximum=PORT_MAX),
        header_name=header.string("name"),
        header_value=header.string("value"),
    )


def _tcp_socket(probe: Fields) -> TcpSocketProbe:
    return TcpSocketProbe(
        port=probe.integer("port", required=True, minimum=0, maximum=PORT_MAX),
        task_name=probe.string("taskName"),
    )


def _task_status(probe: Fields) -> TaskStatusProbe:
    return TaskStatusProbe(task_name=probe.string("taskName"), phase=probe.string("phase"))


def _probe(probe: Fields) -> FlowProbe:
    return FlowProbe(
        http_get_list=probe.each("httpGetList", _http_get),
        tcp_socket_list=probe.each("tcpSocketList", _tcp_socket),
        task_status_list=probe.each("taskStatusList", _task_status),
    )


def _depends_on(depends_on: Fields) -> FlowDependsOn:
    return FlowDependsOn(targets=depends_on.strings("targets"), probe=depends_on.optional("probe", _probe))


def _flow(flow: Fields) -> Flow:
    return Flow(
        name=flow.string("name", required=True),
        depends_on=flow.optional("dependsOn", _depends_on),
        patch=flow.optional("patch", Fields.frozen),
    )


def parse_jobflow(doc: Fields, meta: ObjectMeta) -> JobFlow:
    spec = doc.section("spec")
    return JobFlow(
        meta=meta,
        flows=spec.each("flows", _flow),
        job_retain_policy=spec.string("jobRetainPolicy", "retain", choices=RETAIN_POLICIES),
    )
