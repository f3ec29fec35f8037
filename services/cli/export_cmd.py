"""`lahar export workload`: a running stack's nodes and jobs, with their arrival and run times, read from
its event log and written as manifests that `lahar simulate` and `lahar advise -f` replay
(services/advisor/recorded.py says what is written)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from contracts.parse import duration_seconds
from services.advisor.recorded import EVENT_TYPES, recorded_workload
from services.cli import output
from services.cli.cluster_cmd import add_connection, run
from shared.bus.subjects import event_filter
from shared.client import LaharClient
from shared.client_events import read_events
from shared.client_reads import RawEvent

HEADER = (
    "# A lahar workload recorded from a stack's event log (`lahar export workload`): its nodes, then the\n"
    "# jobs in arrival order (lahar.dev/sim-arrival) with their observed run times\n"
    "# (lahar.dev/sim-duration).\n"
    "# Replay it with `lahar simulate --until-idle -f FILE` or `lahar advise -f FILE`.\n"
)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "export",
        help="write what a running stack recorded as manifests (`export workload`)",
        description="Write what a running stack recorded as manifests.",
        epilog=output.EXIT_CODES_HELP,
    )
    what = parser.add_subparsers(dest="what", required=True, metavar="WHAT")
    workload = what.add_parser(
        "workload",
        help="the nodes and the jobs with their arrival and run times, for lahar simulate / advise",
        description="The stack's nodes, queues and priority classes, and every job, plain pod and "
        "PodGroup it accepted, in arrival order with lahar.dev/sim-arrival and the observed "
        "lahar.dev/sim-duration, from its event log.",
        epilog=output.EXIT_CODES_HELP,
    )
    add_since(workload)
    workload.add_argument(
        "-o", "--output", metavar="FILE", default="-", help="the YAML file to write (default: stdout)"
    )
    add_connection(workload)
    workload.set_defaults(handler=run_export)


def add_since(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--since",
        type=since_seconds,
        metavar="DURATION",
        help="only the workload accepted in the last DURATION (30m, 2h); default: all of it",
    )


def since_seconds(text: str) -> float:
    try:
        value = duration_seconds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive duration, got {text!r}")
    return value


async def read_workload(client: LaharClient, since_s: float | None) -> list[dict[str, Any]]:
    """The recorded workload's manifests, from the event log of the stack the client is connected to."""
    since = None if since_s is None else time.time() - since_s
    events: list[RawEvent] = []
    for event_type in EVENT_TYPES:
        events += await read_events(client.bus, event_filter(event_type=event_type))
    return recorded_workload(events, since)


def workload_yaml(docs: list[dict[str, Any]]) -> str:
    return HEADER + yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False)


def run_export(args: argparse.Namespace) -> int:
    async def body(client: LaharClient) -> int:
        docs = await read_workload(client, args.since)
        text = workload_yaml(docs)
        if args.output == "-":
            sys.stdout.write(text)
        else:
            Path(args.output).write_text(text)
            jobs = sum(1 for d in docs if d["kind"] in ("Job", "Pod", "PodGroup"))
            nodes = sum(1 for d in docs if d["kind"] == "Node")
            print(f"wrote {args.output}: {nodes} nodes, {jobs} jobs, pods and podgroups", file=sys.stderr)
        return output.EXIT_OK

    return run(args, body)
