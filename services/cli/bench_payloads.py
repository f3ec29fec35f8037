"""`lahar bench payloads`: microseconds to turn an event's plain payload into its typed class, the work
every service does once per event it reads (contracts.typed_events.decode_payload).

Three ways are timed on the same payloads, so the choice of msgspec Structs stays a measured one:

- `struct`: msgspec.convert into the payload's Struct, every field's type checked (what lahar ships);
- `dataclass`: msgspec.convert into a frozen, slotted dataclass with the same fields, checked the same way;
- `unchecked`: the same dataclass built with `cls(**payload)`, no check at all: the floor any checked
  decoding is compared with.

Two more start where a service does, from the payload's MessagePack bytes:

- `via_plain`: the bytes decoded to plain data, then converted into the Struct (how lahar read an event
  until the payload was decoded from bytes: every payload materialised twice);
- `bytes`: the bytes decoded straight into the Struct by its own msgspec Decoder, checked as it goes
  (what lahar ships: contracts.typed_events.RawPayload).

The payloads are the events a busy stack carries most: a bind, a pod's phase reports, a PodGroup's
status, a job's status, and the largest, a pod's creation carrying the whole Pod.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from typing import Any

import msgspec

from contracts import payloads
from contracts.codec import encode_object
from contracts.condition_payload import condition_payload
from contracts.objects import PodGroupCondition
from contracts.typed_events import encode_payload

WAYS = ("struct", "dataclass", "unchecked", "via_plain", "bytes")


def sample_payloads() -> dict[str, payloads.Payload]:
    """One payload of each benchmarked event type, keyed by type."""
    condition = condition_payload(
        PodGroupCondition(type="Scheduled", transition_id="t-1", last_transition_time=1_700_000_000.0)
    )
    return {
        "PodBound": payloads.PodBound(node="node-0417", plan="3f6f1c1e-9a47-4c61-9d0e-6c2f4b8f0a51"),
        "PodRunning": payloads.PodRunning(node="node-0417", started_at=1_700_000_000.25),
        "PodFailed": payloads.PodFailed(
            node="node-0417", exit_code=137, reason="OOMKilled", message="exceeded 32Gi", finished_at=1.7e9
        ),
        "PodGroupStatusChanged": payloads.PodGroupStatusChanged(
            phase="Running", conditions=(condition,), running=8, succeeded=0, failed=0, plan="p-1"
        ),
        "JobStatusChanged": payloads.JobStatusChanged(
            phase="Running",
            counts={"pending": 0, "running": 8, "succeeded": 0, "failed": 0},
            task_status_count={"worker": {"Running": 7}, "ps": {"Running": 1}},
            min_available=8,
            retry_count=0,
            version=1,
            restart=(),
            handled=("e-17/PodFailed",),
            last_transition_time=1_700_000_000.0,
            conditions=(payloads.JobCondition(status="Running", last_transition_time=1_700_000_000.0),),
        ),
        "PodCreated": payloads.PodCreated(object=encode_object(_bench_pod())),
    }


def _bench_pod() -> Any:
    from services.cli.bench_codec import sample_objects  # the worker Pod `lahar bench codec` times

    return sample_objects()["Pod"]


def as_dataclass(struct: type[payloads.Payload]) -> type:
    """A frozen, slotted dataclass with the Struct's fields, types and defaults (nested Structs stay)."""
    fields = []
    for field in msgspec.structs.fields(struct):
        default = field.default if field.default is not msgspec.NODEFAULT else dataclasses.MISSING
        fields.append((field.name, field.type, dataclasses.field(default=default)))
    return dataclasses.make_dataclass(
        f"{struct.__name__}Dataclass", fields, frozen=True, slots=True, kw_only=True
    )


def _via_plain(packed: bytes, struct: type[payloads.Payload]) -> payloads.Payload:
    return msgspec.convert(msgspec.msgpack.decode(packed), struct)


def _microseconds_per_call(call: Callable[[], Any], iterations: int) -> float:
    call()  # warm-up: msgspec compiles a decoder per type on first use
    started = time.perf_counter()
    for _ in range(iterations):
        call()
    return (time.perf_counter() - started) / iterations * 1e6


def run_bench(iterations: int) -> dict[str, Any]:
    """µs per decode, per event type and way, and each way's total over the types relative to `struct`."""
    per_type: dict[str, dict[str, float]] = {}
    for name, payload in sample_payloads().items():
        plain = encode_payload(payload)
        packed = msgspec.msgpack.encode(plain)
        struct = type(payload)
        dataclass = as_dataclass(struct)
        ways: dict[str, Callable[[], Any]] = {
            "struct": functools.partial(msgspec.convert, plain, struct),
            "dataclass": functools.partial(msgspec.convert, plain, dataclass),
            "unchecked": functools.partial(dataclass, **plain),
            "via_plain": functools.partial(_via_plain, packed, struct),
            "bytes": functools.partial(msgspec.msgpack.Decoder(struct).decode, packed),
        }
        per_type[name] = {way: _microseconds_per_call(call, iterations) for way, call in ways.items()}
    totals = {way: sum(times[way] for times in per_type.values()) for way in WAYS}
    return {
        "iterations": iterations,
        "us_per_call": {
            name: {way: round(t, 3) for way, t in times.items()} for name, times in per_type.items()
        },
        "relative_to_struct": {way: round(total / totals["struct"], 2) for way, total in totals.items()},
    }
