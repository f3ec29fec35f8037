"""Small clusters for the descheduler's core: nodes, the pods of Volcano Jobs bound to them, plain pods,
and a policy built from plain numbers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from support.builders import node, pod, podgroup, priority_class, res

from contracts.objects import Node, PriorityClass, Toleration
from contracts.resources import Resources
from services.descheduler.core.evictor import Settings
from services.descheduler.core.plan import DeschedulingResult, plan_evictions
from services.descheduler.core.policy_parse import parse_policy
from services.descheduler.core.usage import NodeLoad
from services.descheduler.core.view import ClusterView, PodRecord

__all__ = ["Cluster", "load", "node", "policy", "priority_class", "res"]


def policy(plugin: str, args: Mapping[str, Any], evictor: Mapping[str, Any] | None = None, **top: Any) -> Any:
    """A one-profile policy enabling `plugin` with `args` (and DefaultEvictor's args)."""
    import yaml

    configs = [{"name": plugin, "args": dict(args)}]
    if evictor is not None:
        configs.append({"name": "DefaultEvictor", "args": dict(evictor)})
    doc = {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        **top,
        "profiles": [{"name": "p", "pluginConfig": configs, "plugins": {"balance": {"enabled": [plugin]}}}],
    }
    return parse_policy(yaml.safe_dump(doc), "test")


def load(
    cpu: str | int, memory: str, *, age_s: float = 0.0, pods: Mapping[str, Resources] | None = None
) -> NodeLoad:
    return NodeLoad(res(cpu=cpu, memory=memory), age_s, dict(pods or {}))


class Cluster:
    """A view under construction: add nodes and pods, then plan."""

    def __init__(self, *nodes: Node) -> None:
        self.view = ClusterView()
        for n in nodes:
            self.view.nodes[n.meta.name] = n

    def job_pod(
        self,
        name: str,
        on: str,
        *,
        job: str = "",
        cpu: str | int = 1,
        memory: str = "1Gi",
        priority: int | None = 0,
        namespace: str = "default",
        min_member: int = 1,
        labels: Mapping[str, str] | None = None,
        tolerations: Iterable[Toleration] = (),
        node_selector: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        stopping: bool = False,
    ) -> PodRecord:
        """A pod of Volcano Job `job` (default: its own name's prefix), bound to node `on`."""
        job = job or name.rsplit("-", 1)[0]
        notes = {"volcano.sh/job-name": job, **(annotations or {})}
        p = pod(
            name,
            job,
            cpu=cpu,
            memory=memory,
            namespace=namespace,
            node_name=on,
            priority=priority,
            annotations=notes,
            labels=labels,
            tolerations=tuple(tolerations),
            node_selector=node_selector,
        )
        record = PodRecord(p, phase="Running", stopping=stopping)
        self.view.pods[p.meta.key] = record
        key = f"{namespace}/{job}"
        if key not in self.view.podgroups:
            self.view.podgroups[key] = podgroup(job, namespace=namespace, min_member=min_member)
        return record

    def plain_pod(self, name: str, on: str, *, cpu: str | int = 1, memory: str = "1Gi") -> PodRecord:
        p = pod(name, f"podgroup-{name}", cpu=cpu, memory=memory, node_name=on, priority=0)
        record = PodRecord(p, phase="Running")
        self.view.pods[p.meta.key] = record
        return record

    def classes(self, *items: PriorityClass) -> Cluster:
        for pc in items:
            self.view.priority_classes[pc.meta.name] = pc
        return self

    def plan(
        self,
        the_policy: Any,
        usage: Mapping[str, NodeLoad] | None = None,
        *,
        now: float = 10_000.0,
        settings: Settings | None = None,
    ) -> DeschedulingResult:
        return plan_evictions(self.view, the_policy, usage or {}, now, settings)


def evicted(result: DeschedulingResult) -> list[str]:
    return [e.pod.split("/", 1)[1] for e in result.evictions]
