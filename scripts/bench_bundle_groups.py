"""What deciding a publish operation's bundles costs per output, and how many messages it makes
(docs/benchmarks.md, "Bundles per namespace"): a binder's commit of 64 plans, each its pods' PodBound
(1-8) and then its PodGroup's PodGroupStatusChanged, grouped by `group_for_bundles`.

    PYTHONPATH=. python scripts/bench_bundle_groups.py

Medians of 7 rounds of 200 groupings each.
"""

from __future__ import annotations

import random
import statistics
import time

from contracts import payloads
from shared.bus.bundles import group_for_bundles
from shared.runner_types import Output, deterministic_id

PLANS = 64
ROUNDS = 7
REPEATS = 200


def commit_outputs(seed: int = 1) -> list[Output]:
    rng = random.Random(seed)
    outputs = []
    for plan in range(PLANS):
        job = f"default/job-{plan}"
        for index in range(rng.randint(1, 8)):
            outputs.append(
                Output(
                    "PodBound",
                    "pod",
                    "default",
                    f"job-{plan}-{index}",
                    deterministic_id("bench", "PodBound", str(plan), str(index)),
                    job,
                    payloads.PodBound(node="node-1", plan=f"plan-{plan}"),
                    causation_id=f"plan-{plan}",
                    batch="commit",
                )
            )
        outputs.append(
            Output(
                "PodGroupStatusChanged",
                "podgroup",
                "default",
                f"job-{plan}",
                deterministic_id("bench", "PodGroupStatusChanged", str(plan)),
                job,
                payloads.PodGroupStatusChanged(phase="Running", conditions=(), plan=f"plan-{plan}"),
                causation_id=f"plan-{plan}",
                batch="commit",
            )
        )
    return outputs


def main() -> None:
    outputs = commit_outputs()
    per_output_us = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        for _ in range(REPEATS):
            messages = group_for_bundles(outputs)
        per_output_us.append((time.perf_counter() - started) / REPEATS / len(outputs) * 1e6)
    print(
        f"outputs {len(outputs)}, messages {len(messages)}, "
        f"grouping {statistics.median(per_output_us):.2f} us per output (median of {ROUNDS})"
    )


if __name__ == "__main__":
    main()
