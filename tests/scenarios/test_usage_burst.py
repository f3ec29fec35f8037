"""The herd effect and the shadow estimate (issue 13): a burst of 200 pods arrives on 20 nodes over 20
seconds, between two usage samples 30 s apart, so every session sees samples that predate the pods
placed before it. Node-19 looks idle; the others run a pod each that uses 2 cpus and 8Gi.

With the usage plugin's estimate (the sample corrected by the log: pods bound since it) the burst fills
node-19 up to the others' load and then spreads over all twenty. Without an estimate (Volcano's
estimator with request_ratio 0: what the samples say, nothing more) every pod goes to the node that
looked idle. Run through `lahar simulate`, as a user would."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.cli.main import main
from services.scheduler.core.conf import default_conf, parse_conf

NODES = 20
BURST = 200
IDLE = "node-19"


def cluster() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for i in range(NODES):
        allocatable = {"cpu": "32", "memory": "128Gi", "pods": "300"}
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{i}"},
                "status": {"allocatable": allocatable},
            }
        )
    for i in range(NODES - 1):
        docs.append(pod(f"base-{i}", cpu="100m", memory="128Mi", usage="cpu=2,memory=8Gi", node=f"node-{i}"))
    for i in range(BURST):
        docs.append(pod(f"burst-{i:03d}", cpu="100m", memory="256Mi", arrival=f"{1 + i // 10}s"))
    return docs


def pod(
    name: str, *, cpu: str, memory: str, usage: str = "", node: str = "", arrival: str = ""
) -> dict[str, Any]:
    annotations = {"lahar.dev/sim-duration": "1h"}
    if usage:
        annotations["lahar.dev/sim-usage"] = usage
    if arrival:
        annotations["lahar.dev/sim-arrival"] = arrival
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [container]}
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": spec,
    }
    if node:
        spec["nodeName"] = node
        doc["status"] = {"phase": "Running"}
    return doc


def usage_conf(estimator: dict[str, Any]) -> dict[str, Any]:
    usage = {"name": "usage", "arguments": {"estimator": estimator} if estimator else {}}
    return {
        "actions": "enqueue, allocate",
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}]},
            {"plugins": [{"name": "predicates"}, usage]},
        ],
    }


def burst_placement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], estimator: dict[str, Any]
) -> Counter[str]:
    manifests = tmp_path / "burst.yaml"
    manifests.write_text(yaml.safe_dump_all(cluster()))
    conf = tmp_path / "usage.conf"
    conf.write_text(yaml.safe_dump(usage_conf(estimator)))
    args = ["simulate", "-f", str(manifests), "--conf", str(conf), "--cycles", "25", "--usage-period", "30s"]
    assert main([*args, "-o", "json"]) == 0
    binds = json.loads(capsys.readouterr().out)["binds"]
    return Counter(node for pod, node in binds.items() if pod.startswith("default/burst-"))


def test_with_the_shadow_estimate_the_burst_spreads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    placed = burst_placement(tmp_path, capsys, {})
    assert sum(placed.values()) == BURST
    assert set(placed) == {f"node-{i}" for i in range(NODES)}  # every node takes a share
    # node-19 fills up to the others' load (2 cpus, 8Gi: about 40 pods at 70 % of their requests)
    # and no further than a fair share beyond that
    assert 30 <= placed[IDLE] <= 55
    assert max(n for node, n in placed.items() if node != IDLE) <= 12


def test_without_an_estimate_the_burst_piles_onto_the_node_that_looked_idle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    placed = burst_placement(tmp_path, capsys, {"request_ratio": 0})
    assert placed == {IDLE: BURST}


def test_usage_durations_must_be_positive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifests = tmp_path / "empty.yaml"
    manifests.write_text(yaml.safe_dump(cluster()[0]))
    with pytest.raises(SystemExit) as exited:
        main(["simulate", "-f", str(manifests), "--usage-period", "0s"])
    assert exited.value.code == 2
    assert "expected a positive duration" in capsys.readouterr().err


def test_the_example_conf_enables_the_plugin_with_volcanos_arguments() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "usage" / "usage.conf"
    conf = parse_conf(example.read_text(), str(example))
    (usage,) = [option for tier in conf.tiers for option in tier if option.name == "usage"]
    assert usage.arguments["thresholds"] == {"cpu": 80, "mem": 80}
    assert conf.actions == default_conf().actions
