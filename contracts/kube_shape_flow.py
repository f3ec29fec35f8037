"""Volcano's job-making kinds in the Kubernetes shape (contracts/kube_shape.py): CronJob
(batch.volcano.sh), JobTemplate and JobFlow (flow.volcano.sh), with Volcano's field names. The specs read
back through contracts/parse_flow.py unchanged; the statuses are the job-controller's and, as for every
kind, an `apply` ignores them. lahar's own JobFlow `message` (why a flow waits) has no Volcano field and
is shown by `lahar get jf -o wide` instead."""

from __future__ import annotations

from contracts.kube_shape_core import Doc, kube_meta
from contracts.kube_shape_volcano import kube_job
from contracts.kube_values import go_duration, optional_rfc3339, put, thaw
from contracts.objects import Job
from contracts.objects_flow import (
    CronJob,
    Flow,
    FlowCondition,
    FlowJobStatus,
    FlowProbe,
    JobFlow,
    JobTemplate,
)


def _job_spec(job: Job) -> Doc:
    spec: Doc = kube_job(job)["spec"]
    return spec


def kube_cronjob(cronjob: CronJob) -> Doc:
    template = cronjob.job_template
    template_meta: Doc = {}
    put(template_meta, "labels", dict(template.meta.labels))
    put(template_meta, "annotations", dict(template.meta.annotations))
    job_template: Doc = {}
    put(job_template, "metadata", template_meta)
    job_template["spec"] = _job_spec(template)
    spec: Doc = {"schedule": cronjob.schedule}
    put(spec, "timeZone", cronjob.time_zone)
    put(spec, "startingDeadlineSeconds", cronjob.starting_deadline_seconds)
    spec["concurrencyPolicy"] = cronjob.concurrency_policy
    put(spec, "suspend", cronjob.suspend, False)
    spec["successfulJobsHistoryLimit"] = cronjob.successful_jobs_history_limit
    spec["failedJobsHistoryLimit"] = cronjob.failed_jobs_history_limit
    spec["jobTemplate"] = job_template
    status: Doc = {}
    namespace = cronjob.meta.namespace
    active = [
        {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "namespace": namespace, "name": name}
        for name in cronjob.status.active
    ]
    put(status, "active", active)
    put(status, "lastScheduleTime", optional_rfc3339(cronjob.status.last_schedule_time))
    put(status, "lastSuccessfulTime", optional_rfc3339(cronjob.status.last_successful_time))
    return {"metadata": kube_meta(cronjob.meta, namespaced=True), "spec": spec, "status": status}


def kube_jobtemplate(template: JobTemplate) -> Doc:
    status: Doc = {}
    put(status, "jobDependsOnList", list(template.status.job_depends_on_list))
    return {
        "metadata": kube_meta(template.meta, namespaced=True),
        "spec": _job_spec(template.spec),
        "status": status,
    }


def _probe(probe: FlowProbe) -> Doc:
    out: Doc = {}
    http = []
    for get in probe.http_get_list:
        entry: Doc = {}
        put(entry, "taskName", get.task_name)
        put(entry, "path", get.path)
        put(entry, "port", get.port)
        header: Doc = {}
        put(header, "name", get.header_name)
        put(header, "value", get.header_value)
        put(entry, "httpHeader", header)
        http.append(entry)
    put(out, "httpGetList", http)
    tcp = []
    for socket in probe.tcp_socket_list:
        entry = {"port": socket.port}
        put(entry, "taskName", socket.task_name)
        tcp.append(entry)
    put(out, "tcpSocketList", tcp)
    tasks = []
    for task in probe.task_status_list:
        entry = {}
        put(entry, "taskName", task.task_name)
        put(entry, "phase", task.phase)
        tasks.append(entry)
    put(out, "taskStatusList", tasks)
    return out


def _flow(flow: Flow) -> Doc:
    out: Doc = {"name": flow.name}
    if flow.depends_on is not None:
        depends_on: Doc = {"targets": list(flow.depends_on.targets)}
        if flow.depends_on.probe is not None:
            depends_on["probe"] = _probe(flow.depends_on.probe)
        out["dependsOn"] = depends_on
    if flow.patch is not None:
        out["patch"] = thaw(flow.patch)
    return out


def _job_status(job: FlowJobStatus) -> Doc:
    out: Doc = {"name": job.name}
    put(out, "state", job.state)
    put(out, "startTimestamp", optional_rfc3339(job.start_timestamp))
    put(out, "endTimestamp", optional_rfc3339(job.end_timestamp))
    put(out, "restartCount", job.restart_count)
    runs = []
    for run in job.running_histories:
        entry: Doc = {"state": run.state}
        put(entry, "startTimestamp", optional_rfc3339(run.start_timestamp))
        put(entry, "endTimestamp", optional_rfc3339(run.end_timestamp))
        runs.append(entry)
    put(out, "runningHistories", runs)
    return out


def _condition(condition: FlowCondition) -> Doc:
    out: Doc = {}
    put(out, "phase", condition.phase)
    put(out, "createTime", optional_rfc3339(condition.create_time))
    if condition.running_duration is not None:
        out["runningDuration"] = go_duration(condition.running_duration)
    counts = {task: {"phase": dict(phases)} for task, phases in condition.task_status_count.items()}
    put(out, "taskStatusCount", counts)
    return out


def kube_jobflow(flow: JobFlow) -> Doc:
    spec: Doc = {"flows": [_flow(f) for f in flow.flows], "jobRetainPolicy": flow.job_retain_policy}
    s = flow.status
    status: Doc = {}
    for key, names in (
        ("pendingJobs", s.pending_jobs),
        ("runningJobs", s.running_jobs),
        ("failedJobs", s.failed_jobs),
        ("completedJobs", s.completed_jobs),
        ("terminatedJobs", s.terminated_jobs),
        ("unKnowJobs", s.un_know_jobs),  # Volcano's spelling
    ):
        put(status, key, list(names))
    put(status, "jobStatusList", [_job_status(job) for job in s.job_status_list])
    put(status, "conditions", {name: _condition(c) for name, c in s.conditions.items()})
    status["state"] = {"phase": s.phase}
    return {"metadata": kube_meta(flow.meta, namespaced=True), "spec": spec, "status": status}
