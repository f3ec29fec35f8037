"""The `lahar` command line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from services.admission import validate_cmd
from services.cli import (
    advise_cmd,
    bench_cmd,
    cluster_cmd,
    deploy_cmd,
    describe_cmd,
    export_cmd,
    job_cmd,
    pod_cmd,
    poison_cmd,
    queue_cmd,
    simulate_cmd,
    stack_cmd,
    tenant_cmd,
    version_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lahar", description="Volcano-style batch scheduling, event-sourced."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    simulate_cmd.register(sub)
    advise_cmd.register(sub)
    export_cmd.register(sub)
    bench_cmd.register(sub)
    validate_cmd.register(sub)
    stack_cmd.register(sub)
    cluster_cmd.register(sub)
    describe_cmd.register(sub)
    job_cmd.register(sub)
    pod_cmd.register(sub)
    queue_cmd.register(sub)
    poison_cmd.register(sub)
    tenant_cmd.register(sub)
    deploy_cmd.register(sub)
    version_cmd.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except BrokenPipeError:
        # the reader went away (`lahar events JOB | head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
