"""Node usage samples: what node agents measure and publish off the event log, and the simulated usage of a
pod (the `lahar.dev/sim-usage` annotation).

A node agent publishes, every period, one `UsageReport` per batch of its nodes on core NATS (subject and
batching: shared/usage/wire.py). Each node's entry holds its sample time, the latest cpu (milli-cores)
and memory (bytes) and their averages over the agent's window, and the same figures per pod running on
it. The types below are the contract (their JSON Schema: schema/messages/UsageReport.json) and the codec
itself: readers decode with them, so every bound here is enforced on reading.

Bounds keep every message far below NATS's default 1 MiB payload: at most MAX_NODES_PER_REPORT nodes and
MAX_REPORT_BYTES per message (the writer splits by each node's encoded size) and at most
MAX_PODS_PER_NODE pods per node (a node running more lists the MAX_PODS_PER_NODE busiest; readers
then count the others as not yet measured, an overestimate).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import msgspec

from contracts.resources import CPU, MEMORY, QuantityError, parse_quantity

MAX_NODES_PER_REPORT = 2000
MAX_PODS_PER_NODE = 1000
MAX_REPORT_BYTES = 512 * 1024
MAX_EPOCH_S = 1e11  # sample times are epoch seconds (or simulated seconds from 0): finite, not absurd
SIM_USAGE = "lahar.dev/sim-usage"

MilliCores = Annotated[int, msgspec.Meta(ge=0, description="cpu in milli-cores (1000 = one core)")]
Bytes = Annotated[int, msgspec.Meta(ge=0, description="memory in bytes")]
Seconds = Annotated[float, msgspec.Meta(ge=0, le=MAX_EPOCH_S)]


class PodUsage(msgspec.Struct, frozen=True, kw_only=True):
    """One pod's usage on its node: the latest sample and the average over the window, counted over the
    samples in the window that saw the pod (a pod that started a moment ago averages its own samples)."""

    pod: Annotated[str, msgspec.Meta(min_length=3, description="the pod's namespace/name")]
    cpu_milli: MilliCores
    memory_bytes: Bytes
    cpu_avg_milli: MilliCores
    memory_avg_bytes: Bytes


class NodeUsage(msgspec.Struct, frozen=True, kw_only=True):
    """One node's sample. `pods` lists the pods the sample measured, so a reader knows which pods bound to
    the node are in it and which are not yet (the scheduler's shadow estimate)."""

    node: Annotated[str, msgspec.Meta(min_length=1, description="the node's name")]
    time: Annotated[Seconds, msgspec.Meta(description="when it was sampled: epoch seconds at the agent")]
    cpu_milli: MilliCores
    memory_bytes: Bytes
    cpu_avg_milli: MilliCores
    memory_avg_bytes: Bytes
    window_s: Annotated[Seconds, msgspec.Meta(description="the span the averages cover")]
    pods: Annotated[tuple[PodUsage, ...], msgspec.Meta(max_length=MAX_PODS_PER_NODE)] = ()


class UsageReport(msgspec.Struct, frozen=True, kw_only=True):
    """JSON on lahar.usage.<agent>: the latest samples of some of an agent's nodes."""

    agent: Annotated[str, msgspec.Meta(min_length=1, description="the node agent's id")]
    period_s: Annotated[Seconds, msgspec.Meta(description="how often the agent samples")]
    nodes: Annotated[tuple[NodeUsage, ...], msgspec.Meta(max_length=MAX_NODES_PER_REPORT)]


class UsageReportError(ValueError):
    """A usage report that does not decode; the message names the offending field's path."""


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(UsageReport)


def encode_report(report: UsageReport) -> bytes:
    return _ENCODER.encode(report)


def encode_node(node: NodeUsage) -> bytes:
    """One node's entry as it appears in a report's `nodes` (shared/usage/wire.py joins them)."""
    return _ENCODER.encode(node)


def decode_report(data: bytes) -> UsageReport:
    try:
        return _DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise UsageReportError(f"invalid usage report: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise UsageReportError(f"usage report: not a JSON document ({exc})") from exc


# --- simulated usage ----------------------------------------------------------------------------------


def parse_sim_usage(text: str) -> dict[str, int]:
    """`lahar.dev/sim-usage`: comma-separated `cpu=<quantity>` and `memory=<quantity>`, each at most once
    ("cpu=1500m,memory=1Gi"); as {"cpu": milli-cores, "memory": bytes} with the dimensions it names.
    ValueError naming every problem."""
    found: dict[str, int] = {}
    problems = []
    for part in (p.strip() for p in text.split(",")):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or name not in (CPU, MEMORY):
            problems.append(f"expected cpu=<quantity> or memory=<quantity>, got {part!r}")
            continue
        if name in found:
            problems.append(f"{name} given twice")
            continue
        try:
            milli = parse_quantity(value.strip())
        except QuantityError as exc:
            problems.append(f"{name}: {exc}")
            continue
        found[name] = milli if name == CPU else -(-milli // 1000)
    if problems:
        raise ValueError("; ".join(problems))
    return found


def simulated_usage(annotations: Mapping[str, str], requests: Mapping[str, int]) -> tuple[int, int]:
    """What a simulated pod uses, (cpu milli-cores, memory bytes): its sim-usage annotation, and for a
    dimension the annotation leaves out (or every one, without it) its request. `requests` in milli-units,
    as contracts.resources keeps them. A malformed annotation raises ValueError (callers check first)."""
    text = annotations.get(SIM_USAGE, "")
    given = parse_sim_usage(text) if text else {}
    cpu = given.get(CPU, requests.get(CPU, 0))
    memory = given.get(MEMORY, -(-requests.get(MEMORY, 0) // 1000))
    return cpu, memory


def sim_usage_problem(annotations: Mapping[str, str]) -> str | None:
    """What is wrong with a sim-usage annotation, or None (also when there is none)."""
    text = annotations.get(SIM_USAGE)
    if not text:
        return None
    try:
        parse_sim_usage(text)
    except ValueError as exc:
        return str(exc)
    return None


def usage_channel() -> dict[str, Any]:
    """The usage subjects' AsyncAPI channel (contracts/asyncapi_doc.py)."""
    return {
        "address": "lahar.usage.{agent}",
        "title": "Node usage samples",
        "description": (
            "Core NATS, every usage period (10 s by default) from each node agent: the latest sample and "
            f"the window averages of up to {MAX_NODES_PER_REPORT:,} of its nodes per message (at most "
            f"{MAX_REPORT_BYTES // 1024} KiB), each with its pods' usage. Not stored: a reader that joins "
            "has every node's sample one period later. The scheduler's usage plugin reads them."
        ),
        "parameters": {"agent": {"description": "the node agent's id, escaped as one subject token"}},
        "messages": {
            "UsageReport": {
                "name": "UsageReport",
                "summary": "the latest usage samples of some of an agent's nodes",
                "contentType": "application/json",
                "payload": {"$ref": "schema/messages/UsageReport.json"},
            }
        },
    }
