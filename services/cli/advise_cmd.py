"""`lahar advise`: replay one workload under several volcano-scheduler.conf candidates in the simulator and
recommend the one that suits an objective (services/advisor/; docs/advise.md)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import orjson

from contracts.errors import ManifestError
from contracts.parse import duration_seconds, load_files
from services.advisor.candidates import BUILT_IN, Candidate, built_in, built_in_candidates
from services.advisor.figures import Figures
from services.advisor.objectives import BALANCED, OBJECTIVES
from services.advisor.ranking import advice_report, rank
from services.advisor.replay import replay
from services.advisor.table import render_advice
from services.cli import output
from services.cli.cluster_cmd import add_connection
from services.cli.cluster_cmd import run as run_on_cluster
from services.cli.export_cmd import add_since, read_workload, workload_yaml
from services.scheduler.core.conf import ConfError, parse_conf
from services.simulator.world import annotation_errors
from shared.client import LaharClient

EXIT_NONE_FINISHES = 3  # as `lahar simulate`: no candidate can finish the workload
# what makes work for the scheduler; nodes, queues and classes alone give the candidates nothing to show
WORKLOAD_KINDS = ("Job", "Pod", "PodGroup", "CronJob", "JobFlow")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "advise",
        help="replay a workload under several scheduler confs in the simulator and recommend one",
        description="Replay one workload (manifests, or what a running stack recorded) under each candidate "
        "volcano-scheduler.conf in the simulator, rank the candidates by an objective and recommend one.",
        epilog="Built-in candidates (without --conf): "
        + "; ".join(f"{name}: {about}" for name, (about, _) in BUILT_IN.items())
        + ". Exit codes: 0 a candidate finishes the workload, 2 bad input, 3 none does.",
    )
    p.add_argument(
        "-f", "--filename", action="append", default=[], metavar="FILE", help="manifest (repeatable)"
    )
    p.add_argument(
        "--from-log",
        action="store_true",
        help="add the workload a running stack recorded (as `lahar export workload` writes it)",
    )
    add_since(p)
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="CONF",
        help="a candidate: a volcano-scheduler.conf file, or a built-in candidate's name (repeatable; "
        "default: every built-in candidate)",
    )
    p.add_argument(
        "--objective", choices=OBJECTIVES, default=BALANCED, help="what to optimise (default balanced)"
    )
    p.add_argument("-o", "--output", choices=("table", "json"), default="table")
    p.add_argument("--plot", metavar="FILE.png", help="also draw the candidates side by side into a PNG")
    p.add_argument(
        "--print-conf", metavar="NAME", choices=sorted(BUILT_IN), help="print a built-in candidate's conf"
    )
    p.add_argument("--seed", type=int, default=0, help="seed for the simulator's tie-breaking (default 0)")
    p.add_argument(
        "--horizon",
        default="1h",
        metavar="DURATION",
        help="simulated time after which CronJobs stop (default 1h)",
    )
    add_connection(p)
    p.set_defaults(handler=run)


def candidates_from(args: list[str]) -> list[Candidate]:
    """--conf values: a file when one exists at that path, else a built-in name; ConfError naming each
    one that is neither, or whose conf is invalid."""
    if not args:
        return built_in_candidates()
    found: list[Candidate] = []
    errors: list[str] = []
    for value in args:
        path = Path(value)
        if path.is_file():
            try:
                text = path.read_text()
                conf = parse_conf(text, value)
            except ConfError as exc:
                errors += [f"--conf {value}: {e}" for e in exc.errors]
                continue
            except (OSError, UnicodeDecodeError) as exc:
                errors.append(f"--conf {value}: cannot read the file: {exc}")
                continue
            found.append(Candidate(path.stem if path.suffix == ".conf" else path.name, conf, value, text))
        elif value in BUILT_IN:
            found.append(built_in(value))
        else:
            errors.append(f"--conf {value}: no such file, nor a built-in candidate ({', '.join(BUILT_IN)})")
    if errors:
        raise ConfError(errors)
    return _unique_names(found)


def _unique_names(candidates: list[Candidate]) -> list[Candidate]:
    """Two files of one name (a/x.conf, b/x.conf) are told apart by their paths."""
    counts: dict[str, int] = {}
    for c in candidates:
        counts[c.name] = counts.get(c.name, 0) + 1
    return [
        Candidate(c.source, c.conf, c.source, c.text) if counts[c.name] > 1 and c.source != "built-in" else c
        for c in candidates
    ]


def _recorded(args: argparse.Namespace) -> tuple[int, str]:
    """The running stack's recorded workload as YAML, read like `lahar export workload`."""
    text: list[str] = []

    async def body(client: LaharClient) -> int:
        text.append(workload_yaml(await read_workload(client, args.since)))
        return output.EXIT_OK

    code = run_on_cluster(args, body)
    return code, "".join(text)


def _show_progress(name: str, figures: Figures) -> None:
    if sys.stderr.isatty():
        print(f"  {name}: {figures.outcome}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.print_conf:
        sys.stdout.write(built_in(args.print_conf).text)
        return output.EXIT_OK
    if not args.filename and not args.from_log:
        print("lahar advise: give the workload with -f FILE and/or --from-log", file=sys.stderr)
        return output.EXIT_USAGE
    if args.since is not None and not args.from_log:
        print("lahar advise: --since goes with --from-log", file=sys.stderr)
        return output.EXIT_USAGE
    try:
        horizon = duration_seconds(args.horizon)
    except ValueError as exc:
        print(f"lahar advise: --horizon: {exc}", file=sys.stderr)
        return output.EXIT_USAGE
    try:
        candidates = candidates_from(args.conf)
    except ConfError as exc:
        print(f"lahar advise: {exc}", file=sys.stderr)
        return output.EXIT_USAGE
    with tempfile.TemporaryDirectory(prefix="lahar-advise-") as scratch:
        files = list(args.filename)
        if args.from_log:
            code, text = _recorded(args)
            if code != output.EXIT_OK:
                return code
            recorded = Path(scratch) / "recorded-workload.yaml"
            recorded.write_text(text)
            files.append(str(recorded))
        try:
            objects = load_files(files)
            problems = [error for obj in objects for error in annotation_errors(obj)]
            if problems:
                raise ManifestError(problems)
        except ManifestError as exc:
            print(str(exc), file=sys.stderr)
            return output.EXIT_USAGE
    if not any(getattr(obj, "kind", "") in WORKLOAD_KINDS for obj in objects):
        since = f" in the last {args.since:g}s" if args.since is not None else ""
        print(f"lahar advise: no workload to replay{since}: no {', '.join(WORKLOAD_KINDS)}", file=sys.stderr)
        return output.EXIT_USAGE
    results = replay(objects, candidates, seed=args.seed, horizon_s=horizon, progress=_show_progress)
    advice = rank(results, args.objective)
    if args.output == "json":
        sys.stdout.write(orjson.dumps(advice_report(advice), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(render_advice(advice))
    if args.plot:
        from services.advisor.plot import plot_advice

        plot_advice(advice, Path(args.plot))
        print(f"wrote {args.plot}", file=sys.stderr)
    return output.EXIT_OK if advice.recommended.figures.finished else EXIT_NONE_FINISHES
