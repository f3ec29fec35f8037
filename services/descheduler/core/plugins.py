"""The three balance plugins (pure): LowNodeUtilization and HighNodeUtilization over the pods' requests
(kubernetes-sigs descheduler v0.27) and LoadAware over measured usage (Volcano's).

LowNodeUtilization and LoadAware evict from overutilized nodes (above any target), most loaded first,
while underutilized nodes (below every threshold, schedulable) have room; they do nothing unless more
than numberOfNodes nodes are underutilized, some node is overutilized and not every node is
underutilized. HighNodeUtilization evicts every evictable pod from underutilized nodes, least loaded
first, so the scheduler can pack them onto the others, while those have room (targets of 100 %).

Within a node, pods go lowest priority first. Ties: the request-based plugins take BestEffort before
Burstable before Guaranteed (the descheduler's order), LoadAware the pod using most of the resource the
node is over on (Volcano's order: cpu if cpu is over, else memory); then the pod's key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from contracts.evictions import descheduler_reason
from contracts.node_fit import untolerated_taint
from contracts.objects import Node
from contracts.resources import CPU, MEMORY, PODS, Resources
from services.descheduler.core import balance as b
from services.descheduler.core.evictor import Evictor, podgroup_key, priority_of, qos_rank
from services.descheduler.core.policy import (
    HIGH_NODE_UTILIZATION,
    LOAD_AWARE,
    BalanceArgs,
    EvictorArgs,
    NodeSelector,
    Profile,
)
from services.descheduler.core.usage import MEASURED, NodeLoad, fresh
from services.descheduler.core.view import PodRecord


@dataclass(frozen=True, slots=True)
class PlannedEviction:
    pod: str  # ns/name
    node: str
    podgroup: str  # ns/name
    profile: str
    plugin: str
    reason: str  # which thresholds the node exceeded, by how much
    label: str  # the reason in a few words, for a metric label: overutilized:cpu, underutilized

    @property
    def message(self) -> str:
        """The reason as the binder's PodEvicting carries it (contracts/evictions.py)."""
        return descheduler_reason(self.plugin, self.reason)


@dataclass(frozen=True, slots=True)
class PluginRun:
    profile: str
    plugin: str
    classes: Mapping[str, str]  # node -> under | over | normal | unknown
    note: str = ""  # why it evicted nothing, when it did not


Use = Callable[[PodRecord], Mapping[str, int]]


@dataclass(frozen=True, slots=True)
class Rules:
    """What one plugin's walk decides by."""

    evictor_args: EvictorArgs
    args: BalanceArgs
    node_fit: bool
    fit_selector: NodeSelector
    use_of: Callable[[b.NodeInfo, PodRecord], Mapping[str, int]]
    stop_below_target: bool  # LowNodeUtilization, LoadAware: stop once the node is under its targets


def run_plugin(
    profile: Profile,
    args: BalanceArgs,
    nodes: Sequence[Node],
    pods_on: Mapping[str, list[PodRecord]],
    usage: Mapping[str, NodeLoad],
    evictor: Evictor,
) -> tuple[list[PlannedEviction], PluginRun]:
    load_aware = args.plugin == LOAD_AWARE
    names = b.BASIC if load_aware else tuple(dict.fromkeys((*b.BASIC, *args.thresholds.low)))
    classes: dict[str, str] = {}
    infos: list[b.NodeInfo] = []
    for node in nodes:
        pods = [r for r in pods_on.get(node.meta.name, ()) if r.pod.meta.key not in evictor.evicted]
        if load_aware:
            load = usage.get(node.meta.name)
            if load is None or not fresh(load, evictor.settings.usage_stale_after_s):
                classes[node.meta.name] = b.UNKNOWN
                continue
            used = _measured(node, load, pods, evictor)
        else:
            used = _requested(pods, names)
        infos.append(b.NodeInfo(node, used, pods))
    low, high = b.percentages(args, names)
    b.set_thresholds(infos, low, high, args.thresholds.use_deviation)

    def run(
        note: str = "", evictions: list[PlannedEviction] | None = None
    ) -> tuple[list[PlannedEviction], PluginRun]:
        return evictions or [], PluginRun(profile.name, args.plugin, classes, note)

    if args.plugin == HIGH_NODE_UTILIZATION:
        sources = [i for i in infos if i.is_low()]
        destinations = [i for i in infos if not i.is_low() and not i.node.unschedulable]
        classes.update({i.name: b.UNDER if i.is_low() else b.NORMAL for i in infos})
        sources.sort(key=lambda i: (b.usage_rank(i), i.name))
    else:
        sources, destinations = [], []
        for info in infos:
            if info.is_low() and not info.node.unschedulable:
                destinations.append(info)
                classes[info.name] = b.UNDER
            elif over := info.above_target():
                info.over_resources = tuple(over)
                sources.append(info)
                classes[info.name] = b.OVER
            else:
                classes[info.name] = b.NORMAL
        sources.sort(key=lambda i: (-b.usage_rank(i), i.name))
    lows = sources if args.plugin == HIGH_NODE_UTILIZATION else destinations
    if not lows:
        return run("no node is underutilized")
    if len(lows) <= args.number_of_nodes:
        return run(f"{len(lows)} underutilized nodes, not more than numberOfNodes ({args.number_of_nodes})")
    if len(lows) == len(infos):
        return run("every node is underutilized")
    if args.plugin == HIGH_NODE_UTILIZATION and not destinations:
        return run("no node can take the pods")
    if args.plugin != HIGH_NODE_UTILIZATION and not sources:
        return run("no node is above its targets")
    pod_use = _measured_use(usage) if load_aware else _requested_use(names)
    rules = Rules(
        evictor_args=args.evictor or profile.evictor,
        args=args,
        node_fit=profile.evictor.node_fit or args.node_fit,
        fit_selector=args.node_selector if args.node_selector.clauses else profile.evictor.node_selector,
        use_of=pod_use,
        stop_below_target=args.plugin != HIGH_NODE_UTILIZATION,
    )
    over_nodes = frozenset(i.name for i in infos if classes[i.name] == b.OVER)
    evictions = _walk(sources, destinations, names, rules, evictor, over_nodes, profile.name)
    return run("" if evictions else "no pod of the source nodes could be evicted", evictions)


def _walk(
    sources: Sequence[b.NodeInfo],
    destinations: Sequence[b.NodeInfo],
    names: Sequence[str],
    rules: Rules,
    evictor: Evictor,
    over: frozenset[str],
    profile: str,
) -> list[PlannedEviction]:
    room = b.Room.of(destinations, names)
    evictions: list[PlannedEviction] = []

    def keep_going(info: b.NodeInfo) -> bool:
        if rules.stop_below_target and not info.above_target():
            return False
        return room.positive()

    for info in sources:
        removable = [r for r in info.pods if evictor.refusal(r, rules.evictor_args) is None]
        if not removable or not keep_going(info):
            continue
        reason, label = _reason(info, rules)
        for record in _order(info, removable, rules, evictor):
            if not any(
                untolerated_taint(record.pod.spec.tolerations, d.node.taints) is None for d in destinations
            ):
                continue
            if not rules.args.evictable_namespaces.evictable(record.pod.meta.namespace):
                continue
            if rules.node_fit and not evictor.fits_elsewhere(record, rules.fit_selector, over):
                continue
            if evictor.limit_refusal(record) is not None:
                continue
            use = rules.use_of(info, record)
            evictor.record(record)
            pod = record.pod
            evictions.append(
                PlannedEviction(
                    pod.meta.key, info.name, podgroup_key(pod), profile, rules.args.plugin, reason, label
                )
            )
            for name in room.left:
                taken = POD_SLOT if name == PODS else use.get(name, 0)
                info.usage[name] = info.usage.get(name, 0) - taken
                room.left[name] -= taken
            if not keep_going(info) or evictor.node_limit_reached(info.name):
                break
    return evictions


POD_SLOT = b.POD


def _order(info: b.NodeInfo, pods: list[PodRecord], rules: Rules, evictor: Evictor) -> list[PodRecord]:
    view = evictor.view
    if rules.args.plugin == LOAD_AWARE:
        key_resource = CPU if CPU in info.over_resources else MEMORY
        return sorted(
            pods,
            key=lambda r: (
                priority_of(r.pod, view),
                -rules.use_of(info, r).get(key_resource, 0),
                r.pod.meta.key,
            ),
        )
    return sorted(pods, key=lambda r: (priority_of(r.pod, view), qos_rank(r.pod), r.pod.meta.key))


def _reason(info: b.NodeInfo, rules: Rules) -> tuple[str, str]:
    if rules.args.plugin == HIGH_NODE_UTILIZATION:
        detail = b.describe(info, sorted(info.low), info.low, "<=")
        return f"node {info.name} is underutilized, below every threshold: {detail}", "underutilized"
    over = info.above_target()
    detail = b.describe(info, over, info.high, ">")
    window = rules.args.duration_s
    span = f"{window / 60:g}m" if window >= 60 and window % 60 == 0 else f"{window:g}s"
    measured = f" (usage averaged over {span})" if rules.args.plugin == LOAD_AWARE else ""
    return (
        f"node {info.name} is above its targetThresholds: {detail}{measured}",
        f"overutilized:{'+'.join(over)}",
    )


def _requested(pods: Sequence[PodRecord], names: Sequence[str]) -> dict[str, int]:
    total = Resources()
    for record in pods:
        total = total + record.pod.spec.effective_requests()
    used = {name: total.get(name, 0) for name in names if name != PODS}
    used[PODS] = len(pods) * b.POD
    return used


def _measured(node: Node, load: NodeLoad, pods: Sequence[PodRecord], evictor: Evictor) -> dict[str, int]:
    """The node's measured use, less the use of its pods evicted earlier in this run (another plugin's)."""
    used = {name: load.used.get(name, 0) for name in MEASURED}
    for key, where in evictor.evicted.items():
        record = evictor.view.pods.get(key)
        if where == node.meta.name and record is not None:
            taken = load.pods.get(key) or record.pod.spec.effective_requests()
            for name in MEASURED:
                used[name] -= taken.get(name, 0)
    used[PODS] = len(pods) * b.POD
    return used


def _measured_use(usage: Mapping[str, NodeLoad]) -> Callable[[b.NodeInfo, PodRecord], Mapping[str, int]]:
    """A pod's measured use, or (not measured) its requests: what evicting it frees on its node."""

    def use(info: b.NodeInfo, record: PodRecord) -> Mapping[str, int]:
        load = usage.get(info.name)
        measured = load.pods.get(record.pod.meta.key) if load is not None else None
        source = measured if measured is not None else record.pod.spec.effective_requests()
        return {name: source.get(name, 0) for name in MEASURED}

    return use


def _requested_use(names: Sequence[str]) -> Callable[[b.NodeInfo, PodRecord], Mapping[str, int]]:
    def use(info: b.NodeInfo, record: PodRecord) -> Mapping[str, int]:
        requests = record.pod.spec.effective_requests()
        return {name: requests.get(name, 0) for name in names if name != PODS}

    return use
