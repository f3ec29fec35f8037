"""`lahar pod list`, vcctl's (reference: vcctl pod list): the pods Volcano Jobs created, or a job's
(-j), or a queue's (-q, a plain pod's queue annotation included), with kubectl's Ready, Status, Restart
and Age columns, and kubectl's -l selector on top.

The columns follow kubectl's pod printer where lahar knows the facts: Status is the pod's reason or
phase (Completed for a pod that succeeded, Error for one that failed without a reason, Terminating while
a stop is pending); Ready counts a running pod's containers (sidecars included) as ready; Restart is 0,
because lahar restarts a pod by creating it again (its generation, `lahar.dev/pod-generation`), never a
container in place.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

from contracts.objects import Pod
from services.cli import output, selection
from services.cli.cluster_cmd import command, run
from shared.client import LaharClient

JOB_NAME = "volcano.sh/job-name"
QUEUE_LABEL = "volcano.sh/queue-name"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"  # a plain pod's queue
COLUMNS = ("Name", "Ready", "Status", "Restart", "Age")


class QueueMismatch(ValueError):
    """-j and -q name a job and a queue that does not hold it (vcctl refuses the pair)."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pod = sub.add_parser("pod", help="vcctl's pod commands: list")
    verbs = pod.add_subparsers(dest="verb", required=True, metavar="VERB")
    list_p = command(
        verbs, "list", "list the pods Volcano Jobs created (of one job with -j, one queue with -q)"
    )
    list_p.add_argument("-j", "--job", default="", help="only this job's pods")
    list_p.add_argument("-q", "--queue", default="", help="only pods of this queue (plain pods included)")
    list_p.add_argument("-n", "--namespace", default="default")
    list_p.add_argument("-A", "--all-namespaces", action="store_true", help="pods in every namespace")
    selection.add_selector(list_p)
    list_p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    list_p.set_defaults(handler=list_pods)


def chosen(pods: Iterable[Pod], *, job: str, queue: str) -> list[Pod]:
    """vcctl's choice: a job's pods (QueueMismatch if -q names another queue), else a queue's (its job
    pods by label, plain pods by annotation), else every pod a Job created; by namespace and name."""
    pods = list(pods)
    if job:
        found = [p for p in pods if p.meta.labels.get(JOB_NAME) == job]
        if queue and any(p.meta.labels.get(QUEUE_LABEL, queue) != queue for p in found):
            raise QueueMismatch(f"job {job} is not in queue {queue}")
    elif queue:
        found = [
            p
            for p in pods
            if p.meta.labels.get(QUEUE_LABEL) == queue
            or (JOB_NAME not in p.meta.labels and p.meta.annotations.get(QUEUE_ANNOTATION) == queue)
        ]
    else:
        found = [p for p in pods if JOB_NAME in p.meta.labels]
    return sorted(found, key=lambda p: (p.meta.namespace, p.meta.name))


def status(pod: Pod) -> str:
    """kubectl's STATUS column, from what lahar knows of a pod."""
    phase = pod.status.phase
    if pod.meta.deletion_timestamp is not None and phase not in ("Succeeded", "Failed"):
        return "Terminating"
    if phase == "Succeeded":
        return "Completed"
    if phase == "Failed":
        return pod.status.reason or "Error"
    return pod.status.reason or phase


def ready(pod: Pod) -> str:
    containers = len(pod.spec.containers)
    containers += sum(1 for c in pod.spec.init_containers if c.restart_policy == "Always")
    running = containers if pod.status.phase == "Running" and pod.meta.deletion_timestamp is None else 0
    return f"{running}/{containers}"


def rows(pods: Sequence[Pod], now: float, *, namespaced: bool) -> list[list[Any]]:
    out = []
    for pod in pods:
        row: list[Any] = [
            pod.meta.name,
            ready(pod),
            status(pod),
            0,
            output.age(pod.meta.creation_timestamp, now),
        ]
        out.append([pod.meta.namespace, *row] if namespaced else row)
    return out


def list_pods(args: argparse.Namespace) -> int:
    requirements = selection.read_selector(args, "lahar pod list")
    if requirements is None:
        return output.EXIT_USAGE

    async def body(client: LaharClient) -> int:
        listed = await client.list("pod", None if args.all_namespaces else args.namespace)
        try:
            pods = chosen(
                (p for p in selection.selected(listed, requirements) if isinstance(p, Pod)),
                job=args.job,
                queue=args.queue,
            )
        except QueueMismatch as exc:
            print(f"lahar pod list: {exc}", file=sys.stderr)
            return output.EXIT_REFUSED
        if args.output != "table":
            output.dump(output.listing(pods), args.output)
        elif pods:
            cols = (("Namespace",) if args.all_namespaces else ()) + COLUMNS
            print(output.table(cols, rows(pods, time.time(), namespaced=args.all_namespaces)))
        else:
            print("No resources found.", file=sys.stderr)
        return output.EXIT_OK

    return run(args, body)
