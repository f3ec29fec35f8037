"""Every node an agent registers looks like a Kubernetes node to a manifest: the well-known labels and an
ephemeral-storage allocatable, so Volcano examples that select or request them can be placed."""

from __future__ import annotations

from pathlib import Path

from services.node_agent.config import NodeAgentConfig, agent_nodes
from services.node_agent.node_labels import go_arch, node_labels, well_known_labels


def test_architectures_are_named_as_kubernetes_names_them() -> None:
    assert go_arch("x86_64") == "amd64"
    assert go_arch("aarch64") == "arm64"
    assert well_known_labels("n1", "x86_64") == {
        "kubernetes.io/hostname": "n1",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
    }


def test_given_labels_cannot_override_the_hostname() -> None:
    labels = node_labels("n1", {"kubernetes.io/hostname": "other", "zone": "a"})
    assert labels["kubernetes.io/hostname"] == "n1" and labels["zone"] == "a"


def test_a_process_node_has_the_labels_and_its_disk_as_ephemeral_storage(tmp_path: Path) -> None:
    config = NodeAgentConfig(runtime="process", data_dir=str(tmp_path / "not-yet"), node_name="box")
    (node,) = agent_nodes(config)
    assert node.meta.labels["kubernetes.io/hostname"] == "box"
    assert node.allocatable["ephemeral-storage"] > 0  # the file system holding the data dir
    sized = NodeAgentConfig(
        runtime="process", data_dir=str(tmp_path), node_name="box", node_ephemeral_storage="10Gi"
    )
    assert agent_nodes(sized)[0].allocatable["ephemeral-storage"] == 10 * 2**30 * 1000  # milli-units


def test_hollow_nodes_have_ephemeral_storage_and_their_own_hostnames() -> None:
    nodes = agent_nodes(NodeAgentConfig(runtime="sim", sim_nodes=2, sim_prefix="h"))
    assert [n.meta.labels["kubernetes.io/hostname"] for n in nodes] == ["h-0", "h-1"]
    assert all(n.allocatable["ephemeral-storage"] == 100 * 2**30 * 1000 for n in nodes)


def test_given_labels_reach_the_process_node_and_the_uniform_hollow_ones(tmp_path: Path) -> None:
    config = NodeAgentConfig(
        runtime="process", data_dir=str(tmp_path), node_name="box", node_labels="zone=a, tier=gpu"
    )
    (node,) = agent_nodes(config)
    assert node.meta.labels["zone"] == "a" and node.meta.labels["tier"] == "gpu"
    assert node.meta.labels["kubernetes.io/hostname"] == "box"
    hollow = agent_nodes(NodeAgentConfig(runtime="sim", sim_nodes=2, node_labels="zone=b"))
    assert [n.meta.labels["zone"] for n in hollow] == ["b", "b"]


def test_bad_labels_are_refused_with_every_pair_named() -> None:
    try:
        NodeAgentConfig(runtime="sim", node_labels="zone=a,tier,bad key=x")
    except ValueError as exc:
        message = str(exc)
    else:
        raise AssertionError("bad labels accepted")
    assert "'tier': expected key=value" in message and "'bad key=x': invalid label key" in message


NODES_FILE = """\
apiVersion: v1
kind: Node
metadata: {name: gpu-0, labels: {accelerator: a100}}
spec:
  taints: [{key: gpu, value: "true", effect: NoSchedule}]
status:
  allocatable: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "4", pods: "20"}
---
apiVersion: v1
kind: Node
metadata: {name: cpu-0}
status:
  allocatable: {cpu: "4", memory: 16Gi}
"""


def test_a_nodes_file_describes_hollow_nodes_beside_the_uniform_ones(tmp_path: Path) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text(NODES_FILE)
    nodes = agent_nodes(NodeAgentConfig(runtime="sim", sim_nodes=1, sim_nodes_file=str(path)))
    assert [n.meta.name for n in nodes] == ["sim-0", "gpu-0", "cpu-0"]
    gpu, cpu = nodes[1], nodes[2]
    assert gpu.allocatable["nvidia.com/gpu"] == 4000 and gpu.allocatable["pods"] == 20_000
    assert [t.key for t in gpu.taints] == ["gpu"]
    assert gpu.meta.labels["accelerator"] == "a100" and gpu.meta.labels["kubernetes.io/hostname"] == "gpu-0"
    # what a kubelet always reports, the file may leave out
    assert cpu.allocatable["pods"] == 110_000 and cpu.allocatable["ephemeral-storage"] > 0
    # the file alone may be every node there is
    assert len(agent_nodes(NodeAgentConfig(runtime="sim", sim_nodes=0, sim_nodes_file=str(path)))) == 2
