"""`lahar describe KIND NAME`: one object in kubectl's describe layout with its recent events, for jobs,
podgroups, pods, queues and nodes. Reads the object and what explains it from the read model (a job's
PodGroup and queue, a pending pod's PodGroup, a node's pods) and its events from the event log; the
layout is services/cli/describe_text.py's and describe_node.py's."""

from __future__ import annotations

import argparse
import sys
import time

import nats.errors

from contracts.objects import Job, Node, Pod, PodGroup, Queue
from services.cli import output
from services.cli.cluster_cmd import command, run
from services.cli.describe_node import describe_node
from services.cli.describe_text import (
    GROUP_NAME,
    describe_job,
    describe_pod,
    describe_podgroup,
    describe_queue,
)
from shared.client import LaharClient, LaharError
from shared.client_reads import HistoryEntry, UnknownKind, resolve_kind

DESCRIBED = ("job", "podgroup", "pod", "queue", "node")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    describe = command(
        sub, "describe", "show one job, podgroup, pod, queue or node in detail, with its recent events"
    )
    describe.add_argument("kind", metavar="KIND", help="job (vcjob), podgroup (pg), pod, queue or node")
    describe.add_argument("name", metavar="NAME")
    describe.add_argument("-n", "--namespace", default="default")
    describe.set_defaults(handler=run_describe)


async def recent_events(
    client: LaharClient, kind: str, name: str, namespace: str, command: str = "lahar describe"
) -> list[HistoryEntry]:
    """The object's events; none (and a word on stderr) when the log cannot be read, since the object's
    description is still worth printing."""
    try:
        return await client.object_events(kind, name, namespace)
    except (LaharError, nats.errors.Error, TimeoutError) as exc:
        print(f"{command}: cannot read the events: {exc or type(exc).__name__}", file=sys.stderr)
        return []


async def _text(client: LaharClient, kind: str, name: str, namespace: str, now: float) -> str | None:
    found = await client.get(kind, name, namespace)
    if isinstance(found, Job):
        podgroup = await client.get("podgroup", name, namespace)
        queue = await client.get("queue", found.queue)
        events = await recent_events(client, kind, name, namespace)
        return describe_job(
            found,
            podgroup if isinstance(podgroup, PodGroup) else None,
            queue if isinstance(queue, Queue) else None,
            events,
            now,
        )
    if isinstance(found, PodGroup):
        queue = await client.get("queue", found.queue)
        events = await recent_events(client, kind, name, namespace)
        return describe_podgroup(found, queue if isinstance(queue, Queue) else None, events, now)
    if isinstance(found, Pod):
        group = found.meta.annotations.get(GROUP_NAME, "")
        podgroup = await client.get("podgroup", group, namespace) if group else None
        events = await recent_events(client, kind, name, namespace)
        return describe_pod(found, podgroup if isinstance(podgroup, PodGroup) else None, events, now)
    if isinstance(found, Queue):
        return describe_queue(found, await recent_events(client, kind, name, namespace), now)
    if isinstance(found, Node):
        pods = [p for p in await client.list("pod", None) if isinstance(p, Pod)]
        return describe_node(found, pods, await recent_events(client, kind, name, namespace), now)
    return None


def run_describe(args: argparse.Namespace) -> int:
    try:
        kind = resolve_kind(args.kind)
    except UnknownKind as exc:
        print(f"lahar describe: {exc}", file=sys.stderr)
        return output.EXIT_USAGE
    if kind not in DESCRIBED:
        print(f"lahar describe: {kind} is not described; use lahar get {kind} -o yaml", file=sys.stderr)
        return output.EXIT_USAGE

    async def body(client: LaharClient) -> int:
        text = await _text(client, kind, args.name, args.namespace, time.time())
        if text is None:
            print(f'Error: {kind} "{args.name}" not found', file=sys.stderr)
            return output.EXIT_REFUSED
        print(text)
        return output.EXIT_OK

    return run(args, body)
