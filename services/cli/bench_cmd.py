"""`lahar bench core`: the scheduling core's throughput on a synthetic cluster."""

from __future__ import annotations

import argparse
import sys

import orjson

from services.scheduler.bench.core_bench import run_bench


def register(sub: argparse._SubParsersAction) -> None:
    bench = sub.add_parser("bench", help="benchmarks")
    kinds = bench.add_subparsers(dest="bench", required=True, metavar="BENCH")
    core = kinds.add_parser("core", help="placements/s of the scheduling core on a synthetic cluster")
    core.add_argument("--nodes", type=int, default=5000)
    core.add_argument("--pods", type=int, default=50000)
    core.add_argument("--queues", type=int, default=20)
    core.add_argument("--seed", type=int, default=0)
    core.add_argument("-o", "--output", choices=("json", "table"), default="table")
    core.set_defaults(handler=run_core)


def run_core(args: argparse.Namespace) -> int:
    def progress(sessions: int, placed: int, seconds: float) -> None:
        print(f"session {sessions}: {placed} placed in {seconds:.1f}s", file=sys.stderr, flush=True)

    result = run_bench(args.nodes, args.pods, queues=args.queues, seed=args.seed, progress=progress)
    if args.output == "json":
        print(orjson.dumps(result).decode())
    else:
        for key, value in result.items():
            print(f"{key:18} {value}")
    return 0
