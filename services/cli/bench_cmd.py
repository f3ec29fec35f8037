"""`lahar bench core`: the scheduling core's throughput on a synthetic cluster; `lahar bench e2e`: the whole
stack's, on hollow nodes; `lahar bench codec`: the cost of turning API objects into plain data and back."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import orjson

from services.cli import bench_codec, bench_fold, bench_payloads, bench_sessions
from services.cli.bench_e2e.figures import medians
from services.cli.bench_e2e.run import BenchSpec
from services.cli.bench_e2e.run import run_bench as run_e2e_bench
from services.cli.bench_failover import FailoverSpec, run_failover_bench
from services.scheduler.bench.core_bench import run_bench
from services.scheduler.core.conf import ConfError, parse_conf


def register(sub: argparse._SubParsersAction) -> None:
    bench = sub.add_parser("bench", help="benchmarks")
    kinds = bench.add_subparsers(dest="bench", required=True, metavar="BENCH")
    core = kinds.add_parser("core", help="placements/s of the scheduling core on a synthetic cluster")
    core.add_argument("--nodes", type=int, default=5000)
    core.add_argument("--pods", type=int, default=50000)
    core.add_argument("--queues", type=int, default=20)
    core.add_argument("--seed", type=int, default=0)
    core.add_argument(
        "--replicas", type=int, default=1, help="scheduler replicas sharing the work on a ring (default 1)"
    )
    core.add_argument(
        "--finished", type=int, default=0, metavar="PODS", help="pods of finished gangs already in the view"
    )
    core.add_argument(
        "--conf",
        metavar="SCHEDULER_CONF",
        help="volcano-scheduler.conf (default: Volcano's default); with the usage plugin every node gets a "
        "synthetic usage sample",
    )
    core.add_argument("-o", "--output", choices=("json", "table"), default="table")
    core.set_defaults(handler=run_core)
    e2e = kinds.add_parser("e2e", help="pods/s and latencies of a whole local stack on hollow nodes")
    e2e.add_argument("--nodes", type=int, default=1000, help="hollow nodes (default 1000)")
    e2e.add_argument("--replicas", type=int, default=1, help="scheduler replicas (default 1)")
    e2e.add_argument("--jobs", type=int, default=200, help="gang jobs per round (default 200)")
    e2e.add_argument("--rounds", type=int, default=1, help="rounds of --jobs jobs, one after the other")
    e2e.add_argument("--min-pods", type=int, default=1)
    e2e.add_argument("--max-pods", type=int, default=8)
    e2e.add_argument("--duration", default="2s", help="how long each pod runs (default 2s)")
    e2e.add_argument(
        "--arrival-rate",
        type=float,
        default=None,
        metavar="PODS_PER_S",
        help="steady arrival (default: a burst)",
    )
    e2e.add_argument("--seed", type=int, default=0)
    e2e.add_argument(
        "--replay", action="store_true", help="afterwards, time each service replaying the whole log"
    )
    e2e.add_argument("--keep-home", action="store_true", help="keep the stack's directory (logs) afterwards")
    e2e.add_argument(
        "--no-auth",
        action="store_true",
        help="the bus and etcd without authentication and without TLS (what security costs)",
    )
    e2e.add_argument(
        "--no-tls", action="store_true", help="NATS and etcd without TLS, authentication on (what TLS costs)"
    )
    e2e.add_argument("--repeat", type=int, default=1, help="run N times, each on a new stack; print medians")
    e2e.add_argument("-o", "--output", choices=("json", "table"), default="table")
    e2e.set_defaults(handler=run_e2e)
    codec = kinds.add_parser("codec", help="µs per encode and decode of a Pod, PodGroup, Job and Node")
    codec.add_argument("-n", "--iterations", type=int, default=20000, help="calls per kind (default 20000)")
    codec.add_argument("-o", "--output", choices=("json", "table"), default="table")
    codec.set_defaults(handler=run_codec)
    fold = kinds.add_parser("fold", help="events/s each core folds from a kept stack's log, in process")
    fold.add_argument(
        "--home", type=Path, required=True, help="a stopped stack's home (bench e2e --keep-home)"
    )
    fold.add_argument("--services", default=",".join(bench_fold.SERVICES), help="comma-separated")
    fold.add_argument("--events", type=int, default=60000, help="the first N events each core reads")
    fold.add_argument("--passes", type=int, default=5)
    fold.add_argument("--agent-nodes", type=int, default=1000, help="the stack's hollow nodes")
    fold.add_argument(
        "--loop",
        action="store_true",
        help="also each core's loop: reconcile every --batch events, render every --flush events",
    )
    fold.add_argument("--batch", type=int, default=30, help="events per reconcile with --loop")
    fold.add_argument("--flush", type=int, default=600, help="events per read-model render with --loop")
    fold.add_argument("-o", "--output", choices=("json", "table"), default="table")
    fold.set_defaults(handler=run_fold)
    sessions = kinds.add_parser(
        "sessions", help="CPU of a scheduler's sessions over the states of a kept stack's log, in process"
    )
    sessions.add_argument(
        "--home", type=Path, required=True, help="a stopped stack's home (bench e2e --keep-home --no-auth)"
    )
    sessions.add_argument("--every", type=int, default=1500, help="a session every N events the view folds")
    sessions.add_argument("--passes", type=int, default=3)
    sessions.add_argument("-o", "--output", choices=("json", "table"), default="table")
    sessions.set_defaults(handler=run_sessions)
    typed = kinds.add_parser(
        "payloads", help="µs to decode an event payload: msgspec Struct, dataclass, unchecked"
    )
    typed.add_argument(
        "-n", "--iterations", type=int, default=50000, help="calls per type and way (default 50000)"
    )
    typed.add_argument("-o", "--output", choices=("json", "table"), default="table")
    typed.set_defaults(handler=run_payloads)
    failover = kinds.add_parser(
        "failover", help="how long binding stops when the leading binder is SIGKILLed (stack with standbys)"
    )
    failover.add_argument("--nodes", type=int, default=8, help="hollow nodes (default 8)")
    failover.add_argument("--kills", type=int, default=5, help="leading binders killed, one after the other")
    failover.add_argument(
        "--arrival-rate", type=float, default=8.0, metavar="PODS_PER_S", help="steady arrival (default 8)"
    )
    failover.add_argument("-o", "--output", choices=("json", "table"), default="table")
    failover.set_defaults(handler=run_failover)


def run_core(args: argparse.Namespace) -> int:
    problems = [
        f"{name}: expected an integer >= {low}, got {getattr(args, name)}"
        for name, low in (("nodes", 1), ("pods", 1), ("queues", 1), ("replicas", 1), ("finished", 0))
        if getattr(args, name) < low
    ]
    conf = None
    if args.conf:
        try:
            conf = parse_conf(Path(args.conf).read_text(), args.conf)
        except (OSError, ConfError) as exc:
            problems.append(str(exc))
    if problems:
        for problem in problems:
            print(f"lahar bench core: {problem}", file=sys.stderr)
        return 2

    def progress(sessions: int, placed: int, seconds: float) -> None:
        print(f"session {sessions}: {placed} placed in {seconds:.1f}s", file=sys.stderr, flush=True)

    result = run_bench(
        args.nodes,
        args.pods,
        queues=args.queues,
        seed=args.seed,
        replicas=args.replicas,
        finished=args.finished,
        conf=conf,
        progress=progress,
    )
    if args.output == "json":
        print(orjson.dumps(result).decode())
    else:
        for key, value in result.items():
            print(f"{key:18} {value}")
    return 0


def run_e2e(args: argparse.Namespace) -> int:
    problems = [
        f"{name}: expected an integer >= 1, got {getattr(args, name)}"
        for name in ("nodes", "replicas", "jobs", "rounds", "min_pods", "max_pods", "repeat")
        if getattr(args, name) < 1
    ]
    if args.max_pods < args.min_pods:
        problems.append(f"max_pods: expected at least min_pods ({args.min_pods}), got {args.max_pods}")
    if args.arrival_rate is not None and args.arrival_rate <= 0:
        problems.append(f"arrival_rate: expected a positive number of pods/s, got {args.arrival_rate}")
    if problems:
        for problem in problems:
            print(f"lahar bench e2e: {problem}", file=sys.stderr)
        return 2
    spec = BenchSpec(
        nodes=args.nodes,
        replicas=args.replicas,
        jobs=args.jobs,
        rounds=args.rounds,
        min_pods=args.min_pods,
        max_pods=args.max_pods,
        duration=args.duration,
        arrival_rate=args.arrival_rate,
        seed=args.seed,
        replay=args.replay,
        keep_home=args.keep_home,
        no_auth=args.no_auth,
        no_tls=args.no_tls,
    )
    started = time.monotonic()

    def say(message: str) -> None:
        print(f"[{time.monotonic() - started:7.1f}s] {message}", file=sys.stderr, flush=True)

    runs = []
    for run in range(args.repeat):
        if args.repeat > 1:
            say(f"run {run + 1} of {args.repeat}")
        try:
            runs.append(run_e2e_bench(spec, say))
        except RuntimeError as exc:
            print(f"lahar bench e2e: {exc}", file=sys.stderr)
            return 1
    result = runs[0] if len(runs) == 1 else {"median": medians(runs), "runs": runs}
    if args.output == "json":
        print(orjson.dumps(result).decode())
    else:
        for key, value in result.items():
            print(f"{key:26} {value}")
    return 0


def run_codec(args: argparse.Namespace) -> int:
    if args.iterations < 1:
        print(
            f"lahar bench codec: iterations: expected an integer >= 1, got {args.iterations}", file=sys.stderr
        )
        return 2
    result = bench_codec.run_bench(args.iterations)
    if args.output == "json":
        print(orjson.dumps(result).decode())
        return 0
    print(f"{'kind':10} {'encode µs':>10} {'decode µs':>10}   ({args.iterations} calls each)")
    for kind, times in result["us_per_call"].items():
        print(f"{kind:10} {times['encode']:>10.2f} {times['decode']:>10.2f}")
    return 0


def run_payloads(args: argparse.Namespace) -> int:
    if args.iterations < 1:
        print(
            f"lahar bench payloads: iterations: expected an integer >= 1, got {args.iterations}",
            file=sys.stderr,
        )
        return 2
    result = bench_payloads.run_bench(args.iterations)
    if args.output == "json":
        print(orjson.dumps(result).decode())
        return 0
    ways = bench_payloads.WAYS
    print(
        f"{'event type':24}"
        + "".join(f"{way + ' µs':>14}" for way in ways)
        + f"   ({args.iterations} calls each)"
    )
    for name, times in result["us_per_call"].items():
        print(f"{name:24}" + "".join(f"{times[way]:>14.3f}" for way in ways))
    relative = result["relative_to_struct"]
    print(f"{'total / struct':24}" + "".join(f"{relative[way]:>14.2f}" for way in ways))
    return 0


def run_fold(args: argparse.Namespace) -> int:
    services = [name for name in args.services.split(",") if name]
    problems = [f"services: unknown {name!r}" for name in services if name not in bench_fold.SERVICES]
    if args.events < 1 or args.passes < 1 or args.batch < 1 or args.flush < 1:
        problems.append("events, passes, batch and flush: expected integers >= 1")
    if not (args.home / "nats").is_dir():
        problems.append(f"home: {args.home} holds no nats directory (a stopped stack's home)")
    if problems:
        print("lahar bench fold: " + "; ".join(problems), file=sys.stderr)
        return 2
    loop = (args.batch, args.flush) if args.loop else None
    result = bench_fold.run(
        args.home, services, events=args.events, passes=args.passes, nodes=args.agent_nodes, loop=loop
    )
    if args.output == "json":
        print(orjson.dumps(result).decode())
        return 0
    print(f"{'service':18} {'events':>8} {'best/s':>9} {'median/s':>9}   ({args.passes} passes, CPU time)")
    for name, figures in result["services"].items():
        print(f"{name:18} {figures['events']:>8} {figures['best_per_s']:>9} {figures['median_per_s']:>9}")
    for name, figures in result["services"].items():
        if "loop" in figures:
            f = figures["loop"]
            print(
                f"{name:18} loop: {f['cpu_s']} s (fold {f['fold_s']}, reconcile {f['reconcile_s']}, "
                f"render {f['render_s']}), {f['us_per_event']} µs/event, {f['rendered']} rendered"
            )
    return 0


def run_sessions(args: argparse.Namespace) -> int:
    problems = []
    if args.every < 1 or args.passes < 1:
        problems.append("every and passes: expected integers >= 1")
    if not (args.home / "nats").is_dir():
        problems.append(f"home: {args.home} holds no nats directory (a stopped stack's home)")
    if problems:
        print("lahar bench sessions: " + "; ".join(problems), file=sys.stderr)
        return 2
    result = bench_sessions.run(args.home, every=args.every, passes=args.passes)
    if args.output == "json":
        print(orjson.dumps(result).decode())
    else:
        for key, value in result.items():
            print(f"{key:16} {value}")
    return 0


def run_failover(args: argparse.Namespace) -> int:
    if args.nodes < 1 or args.kills < 1 or args.arrival_rate <= 0:
        print("lahar bench failover: nodes and kills: integers >= 1; arrival rate: > 0", file=sys.stderr)
        return 2
    started = time.monotonic()

    def say(message: str) -> None:
        print(f"[{time.monotonic() - started:7.1f}s] {message}", file=sys.stderr, flush=True)

    spec = FailoverSpec(nodes=args.nodes, kills=args.kills, pods_per_s=args.arrival_rate)
    try:
        result = run_failover_bench(spec, say)
    except RuntimeError as exc:
        print(f"lahar bench failover: {exc}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(orjson.dumps(result).decode())
    else:
        for key, value in result.items():
            print(f"{key:18} {value}")
    return 0
