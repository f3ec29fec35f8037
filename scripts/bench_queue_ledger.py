"""What opening a session costs per job in the queues' figures (docs/benchmarks.md, "A queue's figures at
session open"): `QueueLedger.add_job` over every job of a snapshot from the middle of a kept burst, as
proportion and capacity call it once per job of the cluster in every session.

    PYTHONPATH=. python scripts/bench_queue_ledger.py --home H   (H: a `bench e2e --keep-home --no-auth`)

CPU microseconds per job, the best of 20 passes, with a service's collector settings.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from services.cli.bench_sessions import snapshots
from services.scheduler.core.framework.build import build_model
from services.scheduler.core.plugins.fairness import QueueLedger
from shared.service import tune_gc

PASSES = 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True)
    args = parser.parse_args()
    states = snapshots(args.home, 4000)
    snapshot = states[len(states) // 2][0]
    jobs = list(build_model(snapshot, lambda key: True, victims=False).jobs.values())
    tune_gc()
    best = float("inf")
    for _ in range(PASSES):
        started = time.process_time()
        ledger = QueueLedger("default", None)
        for job in jobs:
            ledger.add_job(job)
        best = min(best, time.process_time() - started)
    print(f"{len(jobs)} jobs: {best * 1e3:.2f} ms, {best / len(jobs) * 1e6:.2f} µs a job")


if __name__ == "__main__":
    main()
