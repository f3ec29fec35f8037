"""The node agent's configuration and the nodes it hosts.

`--runtime process` hosts one node, `--node-name` (default: this machine's host name), whose allocatable
is this machine's (cpu count, MemTotal of /proc/meminfo, 110 pods, the size of `--data-dir`'s file system
as ephemeral-storage) unless `--node-cpu`, `--node-memory`, `--node-pods`, `--node-ephemeral-storage`
say otherwise; its pods run as local processes under `--data-dir`. `--runtime sim` hosts `--sim-nodes`
hollow nodes `<sim-prefix>-0..N-1` (32 cpu, 256Gi, 110 pods, 100Gi ephemeral-storage each by default),
plus one hollow node per Node manifest of `--sim-nodes-file` (its labels, taints and allocatable, e.g.
GPUs), whose pods only pretend to run, for `--time-scale` times their simulated duration. Every node
carries Kubernetes' well-known labels (node_labels.py); `--node-labels key=value,...` adds one's own to
the process node and to the `--sim-nodes` ones.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
from collections.abc import Sequence
from pathlib import Path

from contracts.errors import ManifestError
from contracts.names import parse_label_flag
from contracts.objects import Node, ObjectMeta, frozen_map
from contracts.parse import load_files
from contracts.resources import Resources, parse_quantity
from services.node_agent.node_labels import node_labels
from services.node_agent.runtime.sim import hollow_nodes
from shared.runner import RunnerConfig
from shared.security.secret_keys import key_file_problems, load_private_key

RUNTIMES = ("process", "sim")
EPHEMERAL_STORAGE = "ephemeral-storage"


@dataclasses.dataclass(frozen=True, kw_only=True)
class NodeAgentConfig(RunnerConfig):
    """lahar node agent: runs the pods bound to its nodes and reports their phases."""

    runtime: str = "process"  # process | sim
    data_dir: str = ""  # the process runtime's pod directories (required with it)
    node_name: str = ""  # process runtime: the node's name; empty: this machine's host name
    node_cpu: str = ""  # a quantity ("8", "7500m"); empty: this machine's cpu count
    node_memory: str = ""  # a quantity ("16Gi"); empty: this machine's MemTotal
    node_pods: int = 110
    node_ephemeral_storage: str = ""  # a quantity ("100Gi"); empty: the size of the data dir's file system
    node_labels: str = ""  # key=value,... added to the process node and to the --sim-nodes ones
    sim_nodes: int = 10
    sim_nodes_file: str = ""  # Node manifests, each hosted as a hollow node as it describes it
    sim_prefix: str = "sim"
    sim_cpu: str = "32"
    sim_memory: str = "256Gi"
    sim_pods: int = 110
    sim_ephemeral_storage: str = "100Gi"
    time_scale: float = 1.0  # sim runtime: multiplies every simulated duration
    agent_id: str = ""  # names the agent (its checkpoint key); empty: the node name, or the sim prefix
    heartbeat_interval_s: float = 2.0
    default_grace_s: float = 30.0  # for pods without terminationGracePeriodSeconds
    secrets_key: str = ""  # the node agents' secrets private key (PEM): opens the sealed job secrets

    def problems(self) -> list[str]:
        problems = super().problems()
        if self.runtime not in RUNTIMES:
            problems.append(f"runtime: expected one of {', '.join(RUNTIMES)}, got {self.runtime!r}")
        if self.runtime == "process" and not self.data_dir:
            problems.append("data_dir: required with the process runtime")
        for name in (
            "node_cpu",
            "node_memory",
            "node_ephemeral_storage",
            "sim_cpu",
            "sim_memory",
            "sim_ephemeral_storage",
        ):
            value = getattr(self, name)
            if value:
                try:
                    parse_quantity(value)
                except ValueError as exc:
                    problems.append(f"{name}: {exc}")
        for name in ("node_pods", "sim_pods"):
            if getattr(self, name) < 1:
                problems.append(f"{name}: expected an integer >= 1, got {getattr(self, name)}")
        # a nodes file may be all the hollow nodes there are
        least = 0 if self.sim_nodes_file else 1
        if self.sim_nodes < least:
            problems.append(f"sim_nodes: expected an integer >= {least}, got {self.sim_nodes}")
        problems.extend(f"node_labels: {problem}" for problem in parse_label_flag(self.node_labels)[1])
        if self.runtime == "sim":
            uniform = [f"{self.sim_prefix}-{i}" for i in range(self.sim_nodes)]
            found = nodes_file_problems(self.sim_nodes_file, uniform)
            problems.extend(f"sim_nodes_file: {problem}" for problem in found)
        if self.heartbeat_interval_s <= 0:
            interval = self.heartbeat_interval_s
            problems.append(f"heartbeat_interval_s: expected a positive number, got {interval}")
        problems.extend(key_file_problems("secrets_key", self.secrets_key, load_private_key))
        for name in ("time_scale", "default_grace_s"):
            if getattr(self, name) < 0:
                problems.append(f"{name}: expected a number >= 0, got {getattr(self, name)}")
        return problems

    @property
    def agent(self) -> str:
        if self.agent_id:
            return self.agent_id
        return self.sim_prefix if self.runtime == "sim" else local_node_name(self)


def local_node_name(config: NodeAgentConfig) -> str:
    return config.node_name or socket.gethostname()


def agent_nodes(config: NodeAgentConfig) -> tuple[Node, ...]:
    labels = parse_label_flag(config.node_labels)[0]
    if config.runtime == "sim":
        allocatable = Resources.parse(
            {
                "cpu": config.sim_cpu,
                "memory": config.sim_memory,
                "pods": config.sim_pods,
                EPHEMERAL_STORAGE: config.sim_ephemeral_storage,
            }
        )
        uniform = hollow_nodes(config.sim_nodes, allocatable, prefix=config.sim_prefix, labels=labels)
        described = file_nodes(
            config.sim_nodes_file, pods=config.sim_pods, ephemeral_storage=config.sim_ephemeral_storage
        )
        return uniform + described
    allocatable = Resources.parse(
        {
            "cpu": config.node_cpu or str(os.cpu_count() or 1),
            "memory": config.node_memory or str(machine_memory_bytes()),
            "pods": config.node_pods,
            EPHEMERAL_STORAGE: config.node_ephemeral_storage or str(disk_bytes(config.data_dir)),
        }
    )
    name = local_node_name(config)
    meta = ObjectMeta(name=name, namespace="", labels=frozen_map(node_labels(name, labels)))
    return (Node(meta=meta, allocatable=allocatable, capacity=allocatable),)


def file_nodes(path: str, *, pods: int = 110, ephemeral_storage: str = "100Gi") -> tuple[Node, ...]:
    """The hollow nodes a `--sim-nodes-file` describes: each Node as written (labels, taints,
    unschedulable, allocatable), with the well-known labels added and, where its allocatable leaves them
    out, the hollow nodes' pod capacity and ephemeral-storage (a kubelet always reports both)."""
    if not path:
        return ()
    defaults = Resources.parse({"pods": pods, EPHEMERAL_STORAGE: ephemeral_storage})
    nodes = []
    for obj in load_files([path]):
        if not isinstance(obj, Node):
            kind = type(obj).__name__
            raise ValueError(f"{obj.meta.name or '?'}: expected only Node manifests, got a {kind}")
        allocatable = Resources({**defaults, **obj.allocatable})
        labels = frozen_map(node_labels(obj.meta.name, obj.meta.labels))
        meta = dataclasses.replace(obj.meta, labels=labels)
        nodes.append(dataclasses.replace(obj, meta=meta, allocatable=allocatable, capacity=allocatable))
    return tuple(nodes)


def nodes_file_problems(path: str, uniform: Sequence[str] = ()) -> list[str]:
    """What is wrong with a `--sim-nodes-file`: it cannot be read or parsed, holds other kinds or no
    Node at all, or names a node twice (itself, or one of the `uniform` hollow nodes beside it)."""
    if not path:
        return []
    try:
        hosted = file_nodes(path)
    except (ManifestError, ValueError) as exc:
        return [str(exc)]
    if not hosted:
        return ["no Node in the file"]
    names = [node.meta.name for node in hosted] + list(uniform)
    twice = sorted({name for name in names if names.count(name) > 1})
    return [f"node {name!r} named twice (in the file, or as a --sim-nodes node)" for name in twice]


def disk_bytes(directory: str) -> int:
    """The size of the file system holding `directory` (the pods' scratch space), or of its nearest
    existing parent: the node's ephemeral-storage, as the kubelet reports its root file system's."""
    path = Path(directory or ".").resolve()
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).total


def machine_memory_bytes(meminfo: Path = Path("/proc/meminfo")) -> int:
    """MemTotal of /proc/meminfo (Linux reports it in KiB)."""
    for line in meminfo.read_text().splitlines():
        name, _, value = line.partition(":")
        if name == "MemTotal":
            return int(value.split()[0]) * 1024
    raise ValueError(f"no MemTotal in {meminfo}")
