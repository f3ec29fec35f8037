"""What reading a bundle's events costs a service per event (docs/benchmarks.md, "Reading a bundle's
events"): a binder-like bundle of 300 PodBound, each with its own id, job and trace, read as every
service loop reads it, before and after the loop made each event straight from the bundle.

- `envelope_each`: `unpack` (a subject and a checked Envelope per event), then `to_event` of each pair;
  what the loop did before, and what other readers (`lahar events`, the bench's follower) still do.
- `straight`: `read_bundle` (the events' ids and traces checked), then `bundled_event` of each; what
  the loop does now.

    PYTHONPATH=. python scripts/bench_bundle_read.py

Medians of 7 rounds of 200 reads each, in µs per event.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from contracts import payloads
from shared.bus.bundles import bundle_envelope, read_bundle, unpack
from shared.bus.envelope import Envelope
from shared.bus.subjects import EventSubject
from shared.runner.events import bundled_event, to_event
from shared.runner_types import Output, deterministic_id

EVENTS = 300
ROUNDS = 7
REPEATS = 200


def bound_bundle() -> tuple[EventSubject, Envelope]:
    outputs = [
        Output(
            "PodBound",
            "pod",
            "default",
            f"job-{index // 4}-{index % 4}",
            deterministic_id("bench", "PodBound", str(index)),
            f"default/job-{index // 4}",
            payloads.PodBound(node=f"node-{index}", plan=f"plan-{index // 4}"),
        )
        for index in range(EVENTS)
    ]
    traces = [f"00-{index // 4 + 1:032x}-{index + 1:016x}-01" for index in range(EVENTS)]
    env, bundle_type, name = bundle_envelope(outputs, time=1.0, producer="binder", traceparents=traces)
    read = Envelope.decode(env.encode())  # as a reader gets it: the payload left as its bytes
    return EventSubject("pods", "binder", bundle_type, "default", name), read


def envelope_each(ref: EventSubject, env: Envelope) -> None:
    for item_ref, item_env in unpack(ref, env):
        to_event(1, item_ref, item_env)


def straight(ref: EventSubject, env: Envelope) -> None:
    bundle = read_bundle(ref, env)
    for item in bundle.events:
        bundled_event(1, bundle, item)


def per_event_us(read: Callable[[EventSubject, Envelope], None], ref: EventSubject, env: Envelope) -> float:
    rounds = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        for _ in range(REPEATS):
            read(ref, env)
        rounds.append((time.perf_counter() - started) / REPEATS / EVENTS * 1e6)
    return statistics.median(rounds)


def main() -> None:
    ref, env = bound_bundle()
    before = per_event_us(envelope_each, ref, env)
    after = per_event_us(straight, ref, env)
    print(f"envelope_each {before:.2f} µs/event, straight {after:.2f} µs/event, ratio {after / before:.2f}")


if __name__ == "__main__":
    main()
