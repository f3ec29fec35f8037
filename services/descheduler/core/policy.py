"""The descheduler's policy as values: Volcano's `descheduler/v1alpha2` DeschedulerPolicy (the
kubernetes-sigs descheduler's v1alpha2, v0.27, with Volcano's LoadAware plugin), already validated and
defaulted by policy_parse.py.

Percentages are floats in [0, 100] as the descheduler reads them; resource names are Kubernetes' (cpu,
memory, pods, and extended resources such as nvidia.com/gpu for the request-based plugins).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from contracts.objects import FROZEN_EMPTY, LabelSelector

LOAD_AWARE = "LoadAware"
LOW_NODE_UTILIZATION = "LowNodeUtilization"
HIGH_NODE_UTILIZATION = "HighNodeUtilization"
DEFAULT_EVICTOR = "DefaultEvictor"
BALANCE_PLUGINS = (LOAD_AWARE, LOW_NODE_UTILIZATION, HIGH_NODE_UTILIZATION)

# metrics.type of LoadAware: a real Prometheus (Volcano's), or the node agents' own samples (lahar's)
PROMETHEUS = "Prometheus"
LAHAR_METRICS = "Lahar"
DEFAULT_DURATION_S = 120.0  # LoadAware's `duration`: the window usage is averaged over (Volcano: 2m)


@dataclass(frozen=True, slots=True)
class Namespaces:
    """evictableNamespaces: pods of excluded namespaces (or, with include, of every other namespace)
    still count toward their node's usage but are never evicted."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def evictable(self, namespace: str) -> bool:
        if self.include:
            return namespace in self.include
        return namespace not in self.exclude


ALL_NAMESPACES = Namespaces()


@dataclass(frozen=True, slots=True)
class SelectorClause:
    """One clause of a label selector string (`zone=a`, `disk!=hdd`, `tier in (x,y)`, `gpu`, `!spot`)."""

    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.operator == "Exists":
            return value is not None
        if self.operator == "DoesNotExist":
            return value is None
        hit = value is not None and value in self.values
        return hit if self.operator == "In" else not hit


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """A label selector in Kubernetes' string form (the policy's and the plugins' `nodeSelector`): every
    clause must hold; the empty selector selects every node."""

    text: str = ""
    clauses: tuple[SelectorClause, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(clause.matches(labels) for clause in self.clauses)


EVERY_NODE = NodeSelector()


@dataclass(frozen=True, slots=True)
class PriorityThreshold:
    """Pods at or above this priority are not evicted: a value, or a PriorityClass's name."""

    value: int | None = None
    name: str = ""


@dataclass(frozen=True, slots=True)
class EvictorArgs:
    """DefaultEvictor's args (also accepted inline in LoadAware's args, as Volcano's LoadAware reads
    them)."""

    node_selector: NodeSelector = EVERY_NODE
    evict_local_storage_pods: bool = False
    evict_system_critical_pods: bool = False
    ignore_pvc_pods: bool = False
    evict_failed_bare_pods: bool = False
    label_selector: LabelSelector | None = None
    priority_threshold: PriorityThreshold | None = None
    node_fit: bool = False


@dataclass(frozen=True, slots=True)
class Thresholds:
    """thresholds and targetThresholds: resource name -> percent of the node's allocatable."""

    low: Mapping[str, float] = FROZEN_EMPTY
    high: Mapping[str, float] = FROZEN_EMPTY
    use_deviation: bool = False


@dataclass(frozen=True, slots=True)
class MetricsSource:
    type: str = LAHAR_METRICS  # PROMETHEUS | LAHAR_METRICS
    address: str = ""


@dataclass(frozen=True, slots=True)
class BalanceArgs:
    """The args of one balance plugin. LowNodeUtilization and LoadAware read both thresholds;
    HighNodeUtilization only `thresholds` (its targets are 100 %). LoadAware measures usage (`metrics`,
    `duration`), the others sum requests."""

    plugin: str
    thresholds: Thresholds = field(default_factory=Thresholds)
    number_of_nodes: int = 0
    evictable_namespaces: Namespaces = ALL_NAMESPACES
    # LoadAware only
    metrics: MetricsSource | None = None
    duration_s: float = DEFAULT_DURATION_S
    node_fit: bool = False
    node_selector: NodeSelector = EVERY_NODE
    evictor: EvictorArgs | None = None  # LoadAware's inline DefaultEvictor args, when it gives any


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    balance: tuple[BalanceArgs, ...] = ()  # in the order the profile enables them
    evictor: EvictorArgs = field(default_factory=EvictorArgs)


@dataclass(frozen=True, slots=True)
class DeschedulerPolicy:
    profiles: tuple[Profile, ...] = ()
    node_selector: NodeSelector = EVERY_NODE
    max_pods_per_node: int | None = None
    max_pods_per_namespace: int | None = None
    max_pods_total: int | None = None

    def uses(self, plugin: str) -> bool:
        return any(args.plugin == plugin for profile in self.profiles for args in profile.balance)

    def metrics_sources(self) -> tuple[MetricsSource, ...]:
        """Every LoadAware plugin's metrics source, each once."""
        sources = [args.metrics for p in self.profiles for args in p.balance if args.metrics is not None]
        return tuple(dict.fromkeys(sources))
