"""`lahar simulate`: run the scheduling core offline over YAML manifests (Volcano's KubeSim idea)."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import orjson
import yaml

from contracts.errors import ManifestError
from contracts.parse import duration_seconds, load_files
from services.cli import simulate_desched
from services.scheduler.core.conf import ConfError, default_conf, parse_conf
from services.simulator.engine import simulate
from services.simulator.report import build_report, render_table
from services.simulator.usage import (
    DEFAULT_PERIOD_S,
    DEFAULT_STALE_AFTER_S,
    DEFAULT_WINDOW_S,
    UsageSimulation,
)
from services.simulator.world import annotation_errors

EXIT_OK = 0
EXIT_STUCK = 3  # the run ended with work that can never finish (deadlock or unschedulable)
EXIT_INPUT = 2


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="simulate scheduling sessions over manifests, offline")
    p.add_argument(
        "-f", "--filename", action="append", required=True, metavar="FILE", help="manifest (repeatable)"
    )
    p.add_argument(
        "--conf", metavar="SCHEDULER_CONF", help="volcano-scheduler.conf (default: Volcano's default)"
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--cycles", type=int, default=None, help="number of sessions (default 1)")
    mode.add_argument("--until-idle", action="store_true", help="closed loop until nothing changes")
    p.add_argument("--seed", type=int, default=0, help="seed for tie-breaking (default 0)")
    p.add_argument(
        "--period", type=float, default=1.0, help="simulated schedule period in seconds (default 1)"
    )
    usage = "with the usage plugin in the conf or a descheduler policy: "
    p.add_argument(
        "--usage-period",
        type=_duration,
        default=DEFAULT_PERIOD_S,
        metavar="DURATION",
        help=f"{usage}how often nodes' usage is sampled, e.g. 30s (default {DEFAULT_PERIOD_S:.0f}s)",
    )
    p.add_argument(
        "--usage-window",
        type=_duration,
        default=DEFAULT_WINDOW_S,
        metavar="DURATION",
        help=f"{usage}the span of the samples' averages (default {DEFAULT_WINDOW_S:.0f}s)",
    )
    p.add_argument(
        "--usage-stale-after",
        type=_duration,
        default=DEFAULT_STALE_AFTER_S,
        metavar="DURATION",
        help=f"{usage}an older sample leaves its node unknown (default {DEFAULT_STALE_AFTER_S:.0f}s)",
    )
    simulate_desched.add_arguments(p, _duration)
    p.add_argument(
        "--horizon",
        default="1h",
        metavar="DURATION",
        help="simulated time after which CronJobs stop firing (every one is suspended), so that a run "
        "with CronJobs ends (default 1h)",
    )
    p.add_argument(
        "--events", action="store_true", help="add the simulated event log to the report, in order"
    )
    p.add_argument("-o", "--output", choices=("json", "yaml", "table"), default="table")
    p.set_defaults(handler=run)


def _duration(text: str) -> float:
    """A positive Go duration (30s, 2m) or a number of seconds."""
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = duration_seconds(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc
    if not (seconds > 0 and math.isfinite(seconds)):
        raise argparse.ArgumentTypeError(f"expected a positive duration, got {text!r}")
    return seconds


def _progress_printer(enabled: bool):
    last = [0.0]

    def show(cycle: int, now: float, unfinished: int, pending: int) -> None:
        wall = time.monotonic()
        if enabled and wall - last[0] >= 1.0:
            last[0] = wall
            print(
                f"\rcycle {cycle}  t={now:.0f}s  unfinished jobs {unfinished}  pending pods {pending}",
                end="",
                file=sys.stderr,
                flush=True,
            )

    return show


def run(args: argparse.Namespace) -> int:
    try:
        horizon = duration_seconds(args.horizon)
    except ValueError as exc:
        print(f"lahar simulate: --horizon: {exc}", file=sys.stderr)
        return EXIT_INPUT
    try:
        objects = load_files([Path(f) for f in args.filename])
        problems = [error for obj in objects for error in annotation_errors(obj)]
        if problems:
            raise ManifestError(problems)
        conf = parse_conf(Path(args.conf).read_text(), args.conf) if args.conf else default_conf()
    except (ManifestError, ConfError) as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:
        print(f"lahar simulate: {exc}", file=sys.stderr)
        return EXIT_INPUT
    try:
        descheduler = simulate_desched.descheduler_from(args, args.usage_stale_after)
    except simulate_desched.OptionError as exc:
        for problem in exc.problems:
            print(f"lahar simulate: {problem}", file=sys.stderr)
        return EXIT_INPUT
    progress = _progress_printer(sys.stderr.isatty())
    outcome = simulate(
        objects,
        conf,
        cycles=args.cycles or 1,
        until_idle=args.until_idle,
        seed=args.seed,
        period_s=args.period,
        progress=progress,
        node_usage=UsageSimulation(args.usage_period, args.usage_window, args.usage_stale_after),
        horizon_s=horizon,
        descheduler=descheduler,
    )
    if sys.stderr.isatty():
        print("\r", end="", file=sys.stderr)
    report = build_report(outcome, args.until_idle, events=args.events)
    if args.output == "json":
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    elif args.output == "yaml":
        sys.stdout.write(yaml.safe_dump(report, sort_keys=False))
    else:
        print(render_table(report))
    return EXIT_STUCK if outcome.outcome in ("deadlock", "unschedulable") else EXIT_OK
