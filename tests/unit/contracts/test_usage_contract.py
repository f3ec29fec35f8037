"""Usage reports (contracts/usage.py, shared/usage/wire.py): what an agent writes fits the checked-in
schema and decodes; what breaks a bound is refused with the offending field's path; reports are split so
that none exceeds its bounds; the sim-usage annotation's format."""

from __future__ import annotations

import json

import msgspec
import pytest
from support.schemas import problems

from contracts.resources import Resources
from contracts.schema_gen import message_path
from contracts.usage import (
    MAX_NODES_PER_REPORT,
    MAX_PODS_PER_NODE,
    MAX_REPORT_BYTES,
    NodeUsage,
    PodUsage,
    UsageReport,
    UsageReportError,
    decode_report,
    encode_report,
    parse_sim_usage,
    sim_usage_problem,
    simulated_usage,
)
from shared.usage.wire import USAGE_FILTER, encoded_reports, usage_subject


def pod_usage(name: str, cpu: int = 100) -> PodUsage:
    return PodUsage(pod=name, cpu_milli=cpu, memory_bytes=2048, cpu_avg_milli=cpu, memory_avg_bytes=1024)


def node_usage(name: str, pods: int = 2) -> NodeUsage:
    return NodeUsage(
        node=name,
        time=1_700_000_000.5,
        cpu_milli=1500,
        memory_bytes=1 << 30,
        cpu_avg_milli=1200,
        memory_avg_bytes=(1 << 30) - 1,
        window_s=120.0,
        pods=tuple(pod_usage(f"default/{name}-p{i}") for i in range(pods)),
    )


def test_a_report_fits_the_schema_and_reads_back_equal() -> None:
    report = UsageReport(agent="sim", period_s=10.0, nodes=(node_usage("sim-0"), node_usage("sim-1", 0)))
    data = encode_report(report)
    assert problems(message_path("UsageReport"), json.loads(data)) == []
    assert decode_report(data) == report


def test_the_joined_reports_an_agent_sends_fit_the_schema_and_hold_every_node_in_order() -> None:
    nodes = [node_usage(f"sim-{i}") for i in range(5)]
    (message,) = encoded_reports("sim", 10.0, nodes)
    assert problems(message_path("UsageReport"), json.loads(message)) == []
    assert decode_report(message) == UsageReport(agent="sim", period_s=10.0, nodes=tuple(nodes))


BROKEN = [
    pytest.param({"cpu_milli": -1}, "$.nodes[0].cpu_milli", id="negative-cpu"),
    pytest.param({"memory_avg_bytes": 1.5}, "$.nodes[0].memory_avg_bytes", id="fractional-bytes"),
    pytest.param({"time": 1e300}, "$.nodes[0].time", id="absurd-time"),
    pytest.param({"node": ""}, "$.nodes[0].node", id="empty-node"),
    pytest.param({"pods": [{"pod": "default/p"}]}, "$.nodes[0].pods[0]", id="pod-without-figures"),
]


@pytest.mark.parametrize(("change", "path"), BROKEN)
def test_a_broken_node_entry_is_refused_naming_its_field(change: dict, path: str) -> None:
    plain = json.loads(encode_report(UsageReport(agent="sim", period_s=10.0, nodes=(node_usage("n"),))))
    plain["nodes"][0].update(change)
    assert problems(message_path("UsageReport"), plain) != []
    with pytest.raises(UsageReportError, match=path.replace("$", r"\$").replace("[", r"\[")):
        decode_report(json.dumps(plain).encode())


def test_bounds_on_nodes_per_report_and_pods_per_node_are_enforced_on_reading() -> None:
    entry = msgspec.to_builtins(node_usage("n", 0))
    too_many_nodes = {"agent": "a", "period_s": 1, "nodes": [entry] * (MAX_NODES_PER_REPORT + 1)}
    with pytest.raises(UsageReportError, match=r"\$\.nodes"):
        decode_report(json.dumps(too_many_nodes).encode())
    pod = msgspec.to_builtins(pod_usage("default/p"))
    crowded = {**entry, "pods": [pod] * (MAX_PODS_PER_NODE + 1)}
    with pytest.raises(UsageReportError, match=r"\$\.nodes\[0\]\.pods"):
        decode_report(json.dumps({"agent": "a", "period_s": 1, "nodes": [crowded]}).encode())
    with pytest.raises(UsageReportError, match="not a JSON document"):
        decode_report(b"\x00not json")


def test_many_nodes_are_split_by_count() -> None:
    nodes = [node_usage(f"n-{i}", 0) for i in range(MAX_NODES_PER_REPORT * 2 + 1)]
    messages = encoded_reports("sim", 10.0, nodes)
    assert [len(decode_report(m).nodes) for m in messages] == [MAX_NODES_PER_REPORT] * 2 + [1]
    assert [n for m in messages for n in decode_report(m).nodes] == nodes


def test_busy_nodes_are_split_by_size_and_no_message_exceeds_the_byte_bound() -> None:
    # the longest pod keys a manifest can name (63-character namespace, 253-character name)
    long_name = "x" * 63 + "/" + "y" * 253
    full = [
        NodeUsage(
            node=f"n-{i}",
            time=1.0,
            cpu_milli=2**40,
            memory_bytes=2**50,
            cpu_avg_milli=2**40,
            memory_avg_bytes=2**50,
            window_s=120.0,
            pods=tuple(pod_usage(f"{long_name[:-4]}{j:04d}", 2**40) for j in range(MAX_PODS_PER_NODE)),
        )
        for i in range(5)
    ]
    messages = encoded_reports("sim", 10.0, full)
    assert len(messages) == 5  # a full node alone nearly fills a message
    assert all(len(m) <= MAX_REPORT_BYTES for m in messages)
    assert [n for m in messages for n in decode_report(m).nodes] == full


def test_the_subject_names_the_agent_as_one_token() -> None:
    assert usage_subject("sim") == "lahar.usage.sim"
    assert usage_subject("host.b") == "lahar.usage.host%2Eb"
    assert USAGE_FILTER == "lahar.usage.*"


# --- the sim-usage annotation --------------------------------------------------------------------------

SIM_USAGE = [
    pytest.param("cpu=1500m,memory=1Gi", {"cpu": 1500, "memory": 1 << 30}, id="both"),
    pytest.param(" memory = 512Mi ", {"memory": 512 << 20}, id="memory-only-spaces"),
    pytest.param("cpu=2", {"cpu": 2000}, id="whole-cores"),
    pytest.param("memory=1k", {"memory": 1000}, id="decimal-suffix"),
]


@pytest.mark.parametrize(("text", "expected"), SIM_USAGE)
def test_sim_usage_parses(text: str, expected: dict[str, int]) -> None:
    assert parse_sim_usage(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cpu=lots", "cpu: expected a quantity"),
        ("gpu=1", "expected cpu=<quantity> or memory=<quantity>, got 'gpu=1'"),
        ("cpu=1,cpu=2", "cpu given twice"),
        ("cpu", "got 'cpu'"),
    ],
)
def test_a_malformed_sim_usage_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_sim_usage(text)
    assert message in (sim_usage_problem({"lahar.dev/sim-usage": text}) or "")


def test_simulated_usage_falls_back_to_the_request_per_dimension() -> None:
    requests = Resources.parse({"cpu": "500m", "memory": "2Gi"})
    assert simulated_usage({}, requests) == (500, 2 << 30)
    assert simulated_usage({"lahar.dev/sim-usage": "cpu=3"}, requests) == (3000, 2 << 30)
    assert simulated_usage({"lahar.dev/sim-usage": "memory=1Mi"}, Resources()) == (0, 1 << 20)
    assert sim_usage_problem({}) is None
