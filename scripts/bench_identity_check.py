"""What the read side of contracts/identity.py costs per event, against the decode every event pays
(docs/benchmarks.md, "The subject/payload identity check").

    PYTHONPATH=. python scripts/bench_identity_check.py

For a PodCreated (an object-carrying payload) and a PodBound (none): the check as shared/runner/events.py
runs it, less an empty call, and Envelope.decode + to_event; medians of 9 rounds, best of 3 each.
"""

from __future__ import annotations

import statistics
import timeit
from collections.abc import Callable
from typing import Any

from contracts import codec
from contracts.identity import OBJECT_EVENT_TYPES, identity_problem
from contracts.objects import ObjectMeta, Pod
from shared.bus.envelope import Envelope
from shared.bus.subjects import event_subject, parse_event_subject
from shared.runner.events import to_event

ROUNDS = 9


def best(fn: Callable[[], None], number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=3)) / number * 1e6


def measure(event_type: str, payload: dict[str, Any]) -> tuple[float, float]:
    """(the check, decode + to_event), microseconds, medians."""
    env = Envelope.create(event_type, time=1.0, producer="x", correlation_id="default/j", payload=payload)
    ref = parse_event_subject(event_subject("pod", "default", "w-0", event_type, "x"))
    event, data = to_event(1, ref, env), env.encode()

    def check() -> None:
        if event.type in OBJECT_EVENT_TYPES:
            identity_problem(event.type, event.data, ref.namespace, ref.name)

    def empty() -> None:
        pass

    def loop() -> None:
        to_event(1, ref, Envelope.decode(data))

    checks, loops = [], []
    for _ in range(ROUNDS):
        checks.append(best(check, 200_000) - best(empty, 200_000))
        loops.append(best(loop, 20_000))
    return statistics.median(checks), statistics.median(loops)


def main() -> None:
    pod = {"object": codec.encode_object(Pod(meta=ObjectMeta(name="w-0", namespace="default")))}
    for event_type, payload in (("PodCreated", pod), ("PodBound", {"node": "n1", "plan": "p"})):
        c, loop = measure(event_type, payload)
        print(f"{event_type}: check {c:.3f} us, decode + to_event {loop:.2f} us ({c / loop:.1%})")


if __name__ == "__main__":
    main()
