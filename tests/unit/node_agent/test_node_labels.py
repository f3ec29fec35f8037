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
