"""A Job's partitions in the simulator (examples/partition): eight 4-cpu nodes, three racks of two under
one spine, and a mixed-depth branch (spine "short" holds two nodes with no rack).

`train` asks for 4 partitions of 8 pods, each inside one rack, and needs 3 (minPartitions). As in
Volcano's allocate (its partition cases: each sub-job inside one HyperNode of its tier, the job ready once
minSubGroups are), three partitions run, one per rack, and the fourth waits with its reason. `infer`
asks for one partition of 8 inside a HyperNode of tier name "spine": it lands in the rackless branch.
Side by side, the same 32 pods asked as one hard tier-1 job (no partitions) never run: no rack holds them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from contracts.objects import Job, NetworkTopologySpec
from contracts.parse import load_files
from services.scheduler.core.conf import parse_conf
from services.simulator.engine import simulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "partition"
CONF = parse_conf((EXAMPLES / "topology.conf").read_text(), "topology.conf")
RACK = {"r1": "rack-1", "r2": "rack-2", "r3": "rack-3", "s": "short"}


def objects(*jobs: str) -> list[object]:
    return load_files([EXAMPLES / "nodes.yaml", EXAMPLES / "hypernodes.yaml", *[EXAMPLES / j for j in jobs]])


def domains(binds: dict[str, str], prefix: str, size: int) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for pod, node in binds.items():
        if pod.startswith(prefix):
            out.setdefault(int(pod.rsplit("-", 1)[1]) // size, set()).add(RACK[node.split("-")[0]])
    return out


def condition(run, key: str) -> str:
    podgroup = run.world.podgroups[key]
    return " | ".join(f"{c.type}: {c.message}" for c in podgroup.status.conditions if c.status == "True")


def test_partitions_each_within_one_hypernode():
    run = simulate(objects("train.yaml", "infer.yaml"), CONF, cycles=3)
    train = domains(run.binds, "default/train-worker-", 8)
    assert len(train) == 3 and all(len(racks) == 1 for racks in train.values())
    assert {next(iter(r)) for r in train.values()} == {"rack-1", "rack-2", "rack-3"}
    assert domains(run.binds, "default/infer-server-", 8) == {0: {"short"}}
    train_condition = condition(run, "default/train")
    assert "partitions placed: worker-0 in rack-" in train_condition
    assert "waiting: partition worker-3: 8 pod(s) fit in no single HyperNode of tier <= 1" in train_condition
    assert "server-0 in short" in condition(run, "default/infer")


def test_the_same_pods_as_one_hard_job_never_run():
    whole = []
    for obj in objects("train.yaml"):
        if isinstance(obj, Job):
            task = replace(obj.tasks[0], partition_policy=None)
            obj = replace(obj, tasks=(task,), network_topology=NetworkTopologySpec("hard", 1))
        whole.append(obj)
    run = simulate(whole, CONF, cycles=3)
    assert not any(pod.startswith("default/train-") for pod in run.binds)
