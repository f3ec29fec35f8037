"""predicates: the Kubernetes node filters that apply to lahar's objects (Volcano's predicates plugin).

Filters, with Kubernetes' reasons (a node failing several is reported under the first of this order):
- node not ready: "node(s) were not ready";
- NodeUnschedulable (`spec.unschedulable`, unless the pod tolerates node.kubernetes.io/unschedulable):
  "node(s) were unschedulable";
- NodeAffinity, i.e. nodeSelector AND required node affinity (terms ORed; In/NotIn/Exists/DoesNotExist/
  Gt/Lt, matchFields on metadata.name): "node(s) didn't match Pod's node affinity/selector";
- TaintToleration (NoSchedule and NoExecute taints must be tolerated; PreferNoSchedule only scores):
  "node(s) had untolerated taint {key: value}", naming the taint when every failing node's first
  untolerated taint is the same one, else "node(s) had untolerated taint(s)";
- pod count (`pods` allocatable): "too many pods" — the only failure eviction can fix (resolvable).

Everything but the pod count depends only on the pod's placement constraints and on node fields that do
not change inside a session, so those masks are computed once per session per `task.signature`.

Volcano options with no meaning in lahar (accepted so a Volcano conf loads unchanged, otherwise inert):
- predicate.NodePortsEnable: lahar's pod model has no hostPorts, so no port can clash;
- predicate.PodAffinityEnable / PodTopologySpreadEnable: the pod model carries no inter-pod affinity or
  topologySpreadConstraints, and Kubernetes' system-default spreading needs the Services/ReplicaSets that
  select a pod, which lahar does not know;
- predicate.NodeVolumeLimitsEnable / VolumeZoneEnable / VolumeBindingEnable: lahar pods have no
  PersistentVolumeClaims or CSI volumes;
- predicate.DynamicResourceAllocationEnable: there are no ResourceClaims;
- predicate.CacheEnable: Volcano's optional equivalence cache; lahar always caches the static filters per
  signature, which is exact because labels, taints and readiness are frozen for the session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from contracts.node_fit import tolerated
from contracts.resources import PODS
from services.scheduler.core.conf import argument
from services.scheduler.core.framework.plugin import NodeFailure, Plugin
from services.scheduler.core.model.pending import CAPACITY
from services.scheduler.core.plugins.node_selectors import UNSCHEDULABLE_TAINT, NodeIndex

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.task import TaskInfo

NOT_READY = "node(s) were not ready"
UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
UNTOLERATED_TAINT = "node(s) had untolerated taint"
TOO_MANY_PODS = "too many pods"

_OPTIONS = (
    "NodeAffinityEnable",
    "NodePortsEnable",
    "TaintTolerationEnable",
    "PodAffinityEnable",
    "NodeVolumeLimitsEnable",
    "VolumeZoneEnable",
    "PodTopologySpreadEnable",
    "VolumeBindingEnable",
    "CacheEnable",
    "DynamicResourceAllocationEnable",
)


def _failure(reason: str, mask: np.ndarray, resolvable: bool = False) -> NodeFailure:
    mask.flags.writeable = False  # shared by every task of the signature
    return NodeFailure(reason, mask, resolvable)


class PredicatesPlugin(Plugin):
    name = "predicates"
    arguments_spec: ClassVar[Mapping[str, type]] = {f"predicate.{option}": bool for option in _OPTIONS}

    def on_session_open(self, ssn: Session) -> None:
        self._affinity_enabled = argument(self.arguments, "predicate.NodeAffinityEnable", True)
        self._taints_enabled = argument(self.arguments, "predicate.TaintTolerationEnable", True)
        self._index = NodeIndex(ssn.nodes)
        not_ready = ~ssn.nodes.ready
        self._not_ready = _failure(NOT_READY, not_ready) if not_ready.any() else None
        self._static: dict[tuple[object, ...], tuple[NodeFailure, ...]] = {}

    def predicate(self, ssn: Session, task: TaskInfo) -> Sequence[NodeFailure]:
        static = self._static.get(task.signature)
        if static is None:
            static = self._static_failures(ssn, task)
            self._static[task.signature] = static
        nodes = ssn.nodes
        full = nodes.pod_count >= nodes.max_pods
        if full.any():
            return [*static, NodeFailure(TOO_MANY_PODS, full, True, CAPACITY, PODS)]
        return static

    def _static_failures(self, ssn: Session, task: TaskInfo) -> tuple[NodeFailure, ...]:
        spec = task.pod.spec
        failures = [self._not_ready] if self._not_ready is not None else []
        cordoned = ssn.nodes.unschedulable
        if cordoned.any() and not tolerated(spec.tolerations, UNSCHEDULABLE_TAINT):
            failures.append(_failure(UNSCHEDULABLE, cordoned.copy()))
        affinity = spec.node_affinity
        required = affinity.required if affinity is not None else None
        if self._affinity_enabled and (spec.node_selector or required is not None):
            match = self._index.node_selector_mask(spec.node_selector.items())
            if required is not None:
                match &= self._index.terms_mask(required)
            if not match.all():
                failures.append(_failure(AFFINITY_MISMATCH, ~match))
        if self._taints_enabled:
            untolerated, named = self._index.untolerated(spec.tolerations)
            if untolerated.any():
                if len(named) == 1:
                    key, value = next(iter(named))
                    reason = f"{UNTOLERATED_TAINT} {{{key}: {value}}}"
                else:
                    reason = f"{UNTOLERATED_TAINT}(s)"
                failures.append(_failure(reason, untolerated))
        return tuple(failures)
