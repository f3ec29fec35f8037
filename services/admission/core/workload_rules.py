"""Volcano's admission rules for its job-making kinds, every problem with its field path.

- CronJob (Volcano's cronjob webhook): a schedule that parses, with no TZ=/CRON_TZ= in it (the time zone
  belongs in spec.timeZone), a time zone the database knows (not "Local"), a name short enough for the
  jobs' names (`<name>-<scheduled minute>`, at most 63 characters: 52 for the name); and, as lahar adds,
  its job template checked as the Job each run submits would be (a template that could never make a
  job is refused now rather than at every run).
- JobTemplate: its spec checked as a Job's.
- JobFlow (Volcano's jobflow webhook): the flows form a DAG — every target names a flow of the same
  JobFlow, none depends on itself, no cycle; flow names are unique (the job `<jobflow>-<flow>` is one
  job) and make a valid job name. Probes: taskStatusList is checked by the controller; httpGetList and
  tcpSocketList are refused, since lahar does not probe a task's network endpoints (docs/deviations.md).
  A flow may name a JobTemplate that does not exist yet: the controller waits for it, as Volcano's does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from contracts.cron import ScheduleError, load_zone, parse_schedule
from contracts.errors import FieldError
from contracts.names import LABEL_MAX, metadata_problems, qualified_name_problem
from contracts.objects import Job
from contracts.objects_flow import CronJob, JobFlow, JobTemplate
from services.admission.core.context import ClusterContext
from services.admission.core.job_rules import validate_job
from services.admission.core.mutate import mutate_job

# a job of a CronJob is named `<cronjob>-<minutes since the epoch>`: Volcano keeps 11 characters for that
CRON_SUFFIX_MAX = 11
CRON_NAME_MAX = LABEL_MAX - CRON_SUFFIX_MAX
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_ZONE_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


def validate_cronjob(cron: CronJob, context: ClusterContext, document: str) -> list[FieldError]:
    errors: list[FieldError] = []

    def error(path: str, message: str) -> None:
        errors.append(FieldError(document, path, message))

    if len(cron.meta.name) > CRON_NAME_MAX:
        error(
            "metadata.name",
            f"a CronJob's name must be no more than {CRON_NAME_MAX} characters to leave room for its jobs' "
            f"name suffix (at most {LABEL_MAX} in all), got {len(cron.meta.name)}",
        )
    elif problem := qualified_name_problem(cron.meta.name):
        error("metadata.name", f"invalid CronJob name: {problem}")
    if "TZ" in cron.schedule:
        error(
            "spec.schedule",
            "the schedule must not name a time zone (TZ= or CRON_TZ=): set spec.timeZone instead",
        )
    elif cron.schedule.strip():
        try:
            parse_schedule(cron.schedule)
        except ScheduleError as exc:
            error("spec.schedule", f"not a valid cron schedule: {exc}")
    else:
        error("spec.schedule", "a schedule is required, got an empty one")
    errors.extend(FieldError(document, "spec.timeZone", m) for m in time_zone_problems(cron.time_zone))
    template = cron.job_template
    job = replace(template, meta=replace(template.meta, name=cron.meta.name))
    errors.extend(nested(template_errors(job, context, document), "spec.jobTemplate"))
    errors.extend(
        FieldError(document, f"spec.jobTemplate.{path}", problem)
        for path, problem in metadata_problems(template.meta.labels, template.meta.annotations)
    )
    return errors


def time_zone_problems(zone: str) -> list[str]:
    """What is wrong with a spec.timeZone ("" is none given: UTC)."""
    if not zone:
        return []
    if zone.lower() == "local":
        return [
            "the time zone cannot be Local: name one of the IANA database (https://www.iana.org/time-zones)"
        ]
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _ZONE_PART.match(part):
            return [f"unknown time zone {zone!r}"]
    try:
        load_zone(zone)
    except ScheduleError as exc:
        return [str(exc)]
    return []


def validate_jobtemplate(template: JobTemplate, context: ClusterContext, document: str) -> list[FieldError]:
    return template_errors(template.spec, context, document)


def template_errors(job: Job, context: ClusterContext, document: str) -> list[FieldError]:
    """A job spec's problems as the Job made of it would have them on submission (the job's name is
    checked by its maker's rules, not here)."""
    found = validate_job(mutate_job(job, context.scheduler_names), context, document)
    return [e for e in found if e.path != "metadata.name"]


def nested(errors: Iterable[FieldError], prefix: str) -> list[FieldError]:
    """A Job's errors at their place in a document that holds the Job under `prefix` ({metadata, spec})."""
    return [replace(e, path=f"{prefix}.{e.path}" if e.path else prefix) for e in errors]


def validate_jobflow(flow: JobFlow, document: str) -> list[FieldError]:
    errors: list[FieldError] = []

    def error(path: str, message: str) -> None:
        errors.append(FieldError(document, path, message))

    names = [f.name for f in flow.flows]
    first: dict[str, int] = {}
    for index, item in enumerate(flow.flows):
        at = f"spec.flows[{index}]"
        if item.name in first:
            error(f"{at}.name", f"flow {item.name!r} is listed twice (also spec.flows[{first[item.name]}])")
        elif item.name:
            first[item.name] = index
            job_name = f"{flow.meta.name}-{item.name}"
            if problem := qualified_name_problem(job_name):
                error(f"{at}.name", f"the flow's job would be named {job_name!r}: {problem}")
        depends_on = item.depends_on
        if depends_on is None:
            continue
        for target_index, target in enumerate(depends_on.targets):
            where = f"{at}.dependsOn.targets[{target_index}]"
            if target == item.name:
                error(where, f"jobflow Flow is not DAG: flow {item.name!r} depends on itself")
            elif target not in names:
                error(where, f"jobflow Flow is not DAG: vertex is not defined: {target!r} is not a flow")
        probe = depends_on.probe
        if probe is None:
            continue
        for kind, probes in (("httpGetList", probe.http_get_list), ("tcpSocketList", probe.tcp_socket_list)):
            if probes:
                error(
                    f"{at}.dependsOn.probe.{kind}",
                    f"{kind} probes are not supported: lahar does not probe a task's endpoints (a flow "
                    "starts once its targets completed; taskStatusList checks how their tasks ended)",
                )
        for probe_index, task_status in enumerate(probe.task_status_list):
            where = f"{at}.dependsOn.probe.taskStatusList[{probe_index}]"
            if not task_status.task_name:
                error(f"{where}.taskName", "the task whose status to check is required")
            if task_status.phase not in POD_PHASES:
                error(f"{where}.phase", f"expected one of {', '.join(POD_PHASES)}, got {task_status.phase!r}")
    cycle = _cycle(flow)
    if cycle:
        error("spec.flows", f"jobflow Flow is not DAG: {' -> '.join(cycle)}")
    return errors


def _cycle(flow: JobFlow) -> Sequence[str]:
    """A dependency cycle among the flows (a -> b: a depends on b), longer than a self-dependency, or ()."""
    edges = {
        f.name: [t for t in (f.depends_on.targets if f.depends_on else ()) if t != f.name] for f in flow.flows
    }
    done: set[str] = set()
    for start in sorted(edges):
        path: list[str] = []
        on_path: set[str] = set()
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            node, index = stack.pop()
            if index == 0:
                if node in on_path:
                    return [*path[path.index(node) :], node]
                if node in done:
                    continue
                path.append(node)
                on_path.add(node)
            targets = edges.get(node, [])
            if index < len(targets):
                stack.append((node, index + 1))
                stack.append((targets[index], 0))
            else:
                done.add(node)
                on_path.discard(node)
                path.pop()
    return ()
