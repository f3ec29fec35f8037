"""Usage reports on core NATS (not in the log): their subject and how an agent's nodes are split into
reports.

Subject `lahar.usage.<agent>` (the agent id escaped as one subject token, shared.bus.subjects.encode_token),
so the broker lets an agent publish only its own nodes' usage; readers subscribe to `lahar.usage.*`.
Payload: contracts.usage.UsageReport as JSON. An agent with many nodes sends several reports, each of at
most MAX_NODES_PER_REPORT nodes and MAX_REPORT_BYTES (a node entry larger than that, which the per-node
pod bound rules out, would travel alone).

Why core NATS and not a stream that keeps the last message per subject: a sample is worth something for
one period; the next one replaces it. Storing every sample (and replicating it, R3) would cost the
JetStream write path that the event log needs, per node agent per period, to spare a reader that joins
at most one period (10 s by default) without data, during which the usage plugin treats the nodes as
unknown, as Volcano does without metrics. docs/usage.md.
"""

from __future__ import annotations

from collections.abc import Iterable

from contracts.usage import (
    MAX_NODES_PER_REPORT,
    MAX_REPORT_BYTES,
    NodeUsage,
    UsageReport,
    encode_node,
    encode_report,
)
from shared.bus.subjects import encode_token

USAGE_ROOT = "lahar.usage"
USAGE_FILTER = f"{USAGE_ROOT}.*"


def usage_subject(agent: str) -> str:
    return f"{USAGE_ROOT}.{encode_token(agent)}"


def encoded_reports(agent: str, period_s: float, nodes: Iterable[NodeUsage]) -> list[bytes]:
    """The JSON messages that carry every node's sample: each node entry is encoded once and the entries
    are joined into reports of at most MAX_NODES_PER_REPORT nodes and MAX_REPORT_BYTES."""
    head = encode_report(UsageReport(agent=agent, period_s=period_s, nodes=()))
    # `{"agent":...,"period_s":...,"nodes":[]}` -> the part before the entries and the part after
    opening, closing = head[: head.rindex(b"[") + 1], head[head.rindex(b"]") :]
    messages: list[bytes] = []
    batch: list[bytes] = []
    size = len(opening) + len(closing)
    for node in nodes:
        entry = encode_node(node)
        if batch and (len(batch) == MAX_NODES_PER_REPORT or size + len(entry) + 1 > MAX_REPORT_BYTES):
            messages.append(opening + b",".join(batch) + closing)
            batch, size = [], len(opening) + len(closing)
        batch.append(entry)
        size += len(entry) + 1
    if batch:
        messages.append(opening + b",".join(batch) + closing)
    return messages
