"""`lahar job run|list|view|suspend|resume|delete`, with vcctl's flags (reference: vcctl job).

`job run` builds vcctl's one-task Job from flags (or takes -f FILE) and applies it; anything after `--` is
the container's command, which the process runtime of a local stack needs (vcctl has no such argument).
Suspend and resume are Commands (AbortJob, ResumeJob), as in Volcano.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from contracts.objects import API_VERSIONS, Job
from services.cli import output, selection
from services.cli.cluster_cmd import command, run
from services.cli.describe_cmd import recent_events
from services.cli.describe_text import TASK_COLUMNS, task_rows
from services.cli.event_rows import events_section
from shared.client import LaharClient

JOB_TYPE_LABEL = "volcano.sh/job-type"
LIST_COLUMNS = (
    "Name",
    "Creation",
    "Phase",
    "JobType",
    "Replicas",
    "Min",
    "Pending",
    "Running",
    "Succeeded",
    "Failed",
    "Unknown",
    "RetryCount",
)


def register(sub: argparse._SubParsersAction) -> None:
    job = sub.add_parser("job", help="vcctl's job commands: run, list, view, suspend, resume, delete")
    verbs = job.add_subparsers(dest="verb", required=True, metavar="VERB")

    run_p = command(verbs, "run", "run a job built from flags (or from -f FILE)")
    run_p.add_argument("-N", "--name", help="the job's name (required without -f)")
    run_p.add_argument("-n", "--namespace", default="default")
    run_p.add_argument("-i", "--image", default="busybox")
    run_p.add_argument("-m", "--min", type=int, default=1, help="minAvailable (default 1)")
    run_p.add_argument("-r", "--replicas", type=int, default=1)
    run_p.add_argument("-R", "--requests", default="cpu=1000m,memory=100Mi", metavar="NAME=QTY,...")
    run_p.add_argument("-L", "--limits", default="cpu=1000m,memory=100Mi", metavar="NAME=QTY,...")
    run_p.add_argument("-S", "--scheduler", default="volcano")
    run_p.add_argument("-f", "--filename", help="a Job manifest (YAML or JSON) instead of the flags")
    run_p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the container's command")
    run_p.add_argument("--dry-run", action="store_true")
    run_p.set_defaults(handler=run_job)

    list_p = command(verbs, "list", "list jobs with their phase and pod counts")
    list_p.add_argument("-n", "--namespace", default="default")
    list_p.add_argument("-A", "--all-namespaces", action="store_true")
    list_p.add_argument("-q", "--queue", help="only jobs of this queue")
    list_p.add_argument("-S", "--scheduler", help="only jobs of this scheduler")
    list_p.add_argument(
        "--name-contains", metavar="TEXT", help="only jobs whose name contains this (vcctl's --selector)"
    )
    selection.add_selector(list_p)
    list_p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    list_p.set_defaults(handler=list_jobs)

    view = command(verbs, "view", "show one job in detail, with its recent events")
    _name_flags(view)
    view.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    view.set_defaults(handler=view_job)

    for verb, action, what in (
        ("suspend", "suspend", "suspend a job (Command AbortJob)"),
        ("resume", "resume", "resume a suspended job (Command ResumeJob)"),
        ("delete", "", "delete a job"),
    ):
        p = command(verbs, verb, what)
        _name_flags(p)
        p.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
        p.set_defaults(handler=operate_job, action=action)


def _name_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-N", "--name", required=True)
    parser.add_argument("-n", "--namespace", default="default")


def resources(text: str) -> dict[str, str]:
    """vcctl's "cpu=1000m,memory=100Mi"."""
    pairs = [part.split("=", 1) for part in text.split(",") if part.strip()]
    if any(len(pair) != 2 or not pair[0].strip() for pair in pairs):
        raise ValueError(f"expected NAME=QUANTITY,..., got {text!r}")
    return {name.strip(): value.strip() for name, value in pairs}


def job_manifest(args: argparse.Namespace) -> dict[str, Any]:
    """The Job vcctl's `job run` builds: one task, restartPolicy Never, the image and resources given."""
    container: dict[str, Any] = {
        "name": args.name,
        "image": args.image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {"requests": resources(args.requests), "limits": resources(args.limits)},
    }
    command_line = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if command_line:
        container["command"] = command_line
    return {
        "apiVersion": API_VERSIONS["Job"],
        "kind": "Job",
        "metadata": {"name": args.name, "namespace": args.namespace},
        "spec": {
            "minAvailable": args.min,
            "schedulerName": args.scheduler,
            "tasks": [
                {
                    "name": args.name,
                    "replicas": args.replicas,
                    "template": {
                        "metadata": {"name": args.name},
                        "spec": {"restartPolicy": "Never", "containers": [container]},
                    },
                }
            ],
        },
    }


def run_job(args: argparse.Namespace) -> int:
    try:
        if args.filename:
            text, source = Path(args.filename).read_text(), args.filename
        elif args.name:
            text, source = json.dumps(job_manifest(args)), "job run"
        else:
            print("lahar job run: give the job a name (-N NAME) or a manifest (-f FILE)", file=sys.stderr)
            return output.EXIT_USAGE
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        print(f"lahar job run: {exc}", file=sys.stderr)
        return output.EXIT_USAGE

    async def body(client: LaharClient) -> int:
        answer = await client.apply(text, dry_run=args.dry_run, source=source)
        code = output.report([(source, answer)], "quiet")
        if answer.accepted:
            for obj in answer.objects:
                print(f"run job {obj['name']} successfully" + (" (dry run)" if answer.dry_run else ""))
        return code

    return run(args, body)


def counts_row(job: Job, *, namespaced: bool) -> list[Any]:
    s = job.status
    replicas = sum(task.replicas for task in job.tasks)
    job_type = job.meta.labels.get(JOB_TYPE_LABEL, "Batch")
    row = [job.meta.name, output.date(job.meta.creation_timestamp), s.state.phase, job_type, replicas]
    row += [job.min_available, s.pending, s.running, s.succeeded, s.failed, s.unknown, s.retry_count]
    return [job.meta.namespace, *row] if namespaced else row


def list_jobs(args: argparse.Namespace) -> int:
    requirements = selection.read_selector(args, "lahar job list")
    if requirements is None:
        return output.EXIT_USAGE

    async def body(client: LaharClient) -> int:
        listed = await client.list("job", None if args.all_namespaces else args.namespace)
        jobs = [
            job
            for job in selection.selected(listed, requirements)
            if isinstance(job, Job)
            and (not args.queue or job.queue == args.queue)
            and (not args.scheduler or job.scheduler_name == args.scheduler)
            and (not args.name_contains or args.name_contains in job.meta.name)
        ]
        if args.output != "table":
            output.dump(output.listing(jobs), args.output)
        elif jobs:
            cols = (("Namespace",) if args.all_namespaces else ()) + LIST_COLUMNS
            print(output.table(cols, (counts_row(j, namespaced=args.all_namespaces) for j in jobs)))
        else:
            print("No resources found.", file=sys.stderr)
        return output.EXIT_OK

    return run(args, body)


def describe(job: Job, now: float) -> str:
    s = job.status
    created = job.meta.creation_timestamp
    lines = [
        f"Name:           {job.meta.name}",
        f"Namespace:      {job.meta.namespace}",
        f"Queue:          {job.queue}",
        f"Scheduler:      {job.scheduler_name}",
        f"Created:        {output.utc(created)} ({output.age(created, now)} ago)"
        if created > 0
        else "Created:",
        f"Phase:          {s.state.phase}" + (f" ({s.state.reason})" if s.state.reason else ""),
        f"Min Available:  {job.min_available}",
        f"Retries:        {s.retry_count} of {job.max_retry}",
        f"Pods:           pending {s.pending}, running {s.running}, succeeded {s.succeeded}, "
        f"failed {s.failed}, terminating {s.terminating}, unknown {s.unknown}",
        "Tasks:",
    ]
    rows = task_rows(job)
    table = output.table(TASK_COLUMNS, rows)
    return "\n".join(lines + ["  " + line for line in table.splitlines()])


def view_job(args: argparse.Namespace) -> int:
    async def body(client: LaharClient) -> int:
        job = await client.get("job", args.name, args.namespace)
        if not isinstance(job, Job):
            print(f"lahar job view: job {args.namespace}/{args.name} not found", file=sys.stderr)
            return output.EXIT_REFUSED
        if args.output == "text":
            now = time.time()
            events = await recent_events(client, "job", args.name, args.namespace, "lahar job view")
            print(describe(job, now))
            print(
                events_section(events, now, about=f"job/{job.meta.name}", command=f"lahar events {args.name}")
            )
        else:
            output.dump(output.document(job), args.output)
        return output.EXIT_OK

    return run(args, body)


def operate_job(args: argparse.Namespace) -> int:
    async def body(client: LaharClient) -> int:
        if args.action:
            answer = await client.command(args.action, args.name, args.namespace, target_kind="job")
        else:
            answer = await client.delete("job", args.name, args.namespace)
        code = output.report([(args.verb, answer)], "quiet" if args.output == "text" else args.output)
        if answer.accepted and args.output == "text":
            print(f"{args.verb} job {args.namespace}/{args.name} successfully")
        return code

    return run(args, body)
