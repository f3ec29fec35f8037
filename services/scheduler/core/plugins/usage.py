"""usage: prefer nodes that really are idle, and keep pods off nodes whose load is above a threshold
(Volcano's usage plugin, its arguments: usage_args.py).

A node's estimated load is its latest usage sample (ClusterSnapshot.usage: fresh samples only) corrected
exactly by the event log, since a sample lags what was decided after it:
- plus a shadow estimate of every pod on the node (bound, running, being deleted) that the sample does
  not list: bound after the sample, or not started when it was taken;
- minus what the sample measured of each pod it lists that is no longer on the node (ended, evicted,
  deleted since);
- plus the shadow estimate of every task this session places on the node (undone if the placement is).
A pod's shadow estimate is Volcano's estimator: (request x request_ratio + (limit - request) x burst_ratio)
x risk, at most its limit (its request when it has none), risk being risk_factor once the node's weighted
load reaches risk_threshold; a pod without requests counts be_cpu / be_mem x risk.

With composite_r = clamp(load_r / allocatable_r, 0, 1) for cpu and memory:
- predicate: a node whose load is above thresholds.cpu (or .mem) percent is filtered, "the CPU load of the
  node exceeds the upper limit." (memory: "the memory load ..."), not resolvable by eviction;
- score: ((1 - composite_cpu) x cpu.weight + (1 - composite_mem) x memory.weight) / (cpu.weight +
  memory.weight) x 100 x usage.weight.
A node without a fresh sample is unknown: never filtered, scored 0 (Volcano's rule without metrics).

Deviations from Volcano (docs/deviations.md): Volcano compares the period average of its metrics source
and guesses which pods the metrics miss (pods not yet running, or running for less than the metrics
interval); lahar uses the latest sample, which measures fully every pod it lists, and knows from the log
which pods the sample lists and which it does not. The predicate looks at the estimate, not at the
sample alone, so a burst stops at the threshold instead of overshooting it. Load is relative to
allocatable (Volcano: capacity).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from contracts.objects import Pod
from contracts.resources import CPU, MEMORY
from services.scheduler.core.framework.plugin import Event, NodeFailure, Plugin
from services.scheduler.core.model.pending import CAPACITY
from services.scheduler.core.model.task import TaskStatus
from services.scheduler.core.plugins.usage_args import UsageArguments, argument_problems

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.facts import TaskFacts
    from services.scheduler.core.model.task import TaskInfo

MAX_SCORE = 100
CPU_OVER = "the CPU load of the node exceeds the upper limit."
MEMORY_OVER = "the memory load of the node exceeds the upper limit."
_ENDED = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})


def estimate(request: float, limit: float, request_ratio: float, burst_ratio: float, risk: float) -> float:
    """Volcano's EstimatePodResource for one dimension."""
    base, ceiling = _unscaled(request, limit, request_ratio, burst_ratio)
    return min(max(base * risk, 0.0), ceiling)


def _unscaled(request: float, limit: float, request_ratio: float, burst_ratio: float) -> tuple[float, float]:
    """The estimate before the risk factor, and the most it may be (the limit, else the request)."""
    request = max(request, 0.0)
    effective = limit if limit > 0 and limit >= request else request
    return request * request_ratio + (effective - request) * burst_ratio, effective


def pod_limits(pod: Pod) -> tuple[float, float]:
    """The sum of the app containers' cpu (milli-cores) and memory (bytes) limits, 0 where none says."""
    containers = pod.spec.containers
    return (
        float(sum(c.limits.get(CPU, 0) for c in containers)),
        sum(c.limits.get(MEMORY, 0) for c in containers) / 1000,
    )


class UsagePlugin(Plugin):
    name = "usage"
    arguments_spec: ClassVar[Mapping[str, type]] = {
        "usage.weight": int,
        "cpu.weight": int,
        "memory.weight": int,
        "thresholds": dict,
        "estimator": dict,
    }

    @classmethod
    def argument_problems(cls, arguments: Mapping[str, Any]) -> list[str]:
        return argument_problems(arguments)

    def on_session_open(self, ssn: Session) -> None:
        self.args = args = UsageArguments.parse(self.arguments)
        nodes = ssn.nodes
        count = len(nodes)
        # per node, as Python floats: a placement updates one node, and numpy's per-element access
        # costs more than the arithmetic
        capacity = []
        for name, scale in ((CPU, 1.0), (MEMORY, 1000.0)):
            column = ssn.resources.column.get(name)
            row = [0.0] * count if column is None else (nodes.allocatable[:, column] / scale).tolist()
            capacity.append(row)
        self._cpu_capacity, self._memory_capacity = capacity
        self._known = [False] * count
        self._cpu = [0.0] * count  # the estimate: sample, corrected by the log, plus shadows
        self._memory = [0.0] * count
        total = args.cpu_weight + args.memory_weight
        self._weights = (args.cpu_weight / total, args.memory_weight / total) if total else (0.0, 0.0)
        self._unscaled: dict[tuple[int, int], tuple[float, float, float, float]] = {}
        self._placed: dict[str, tuple[int, float, float]] = {}  # in-session placements' shadows
        sampled: dict[int, Mapping[str, tuple[int, int]]] = {}
        for name, sample in ssn.snapshot.usage.items():
            i = nodes.index.get(name)
            if i is not None:
                self._known[i] = True
                self._cpu[i], self._memory[i] = float(sample.cpu_milli), float(sample.memory_bytes)
                sampled[i] = {p.pod: (p.cpu_milli, p.memory_bytes) for p in sample.pods}
        self._score = np.zeros(count)
        self._cpu_over = np.zeros(count, dtype=bool)
        self._memory_over = np.zeros(count, dtype=bool)
        self._over = [0, 0]  # how many nodes each mask holds
        if sampled:
            self._correct_by_log(ssn, sampled)
        for i in sampled:
            self._refresh(i)

    def _correct_by_log(self, ssn: Session, sampled: Mapping[int, Mapping[str, tuple[int, int]]]) -> None:
        index = ssn.nodes.index
        on_node: dict[str, int] = {}  # pods the log holds on a sampled node
        unsampled: list[tuple[TaskFacts, int]] = []
        for facts in ssn.snapshot.facts():
            i = index.get(facts.node) if facts.node else None
            if i is None or i not in sampled or facts.status in _ENDED:
                continue
            on_node[facts.key] = i
            if facts.key not in sampled[i]:
                unsampled.append((facts, i))
        for i, pods in sampled.items():
            for key, (cpu, memory) in pods.items():
                if on_node.get(key) != i:  # it left the node after the sample
                    self._cpu[i] = max(0.0, self._cpu[i] - cpu)
                    self._memory[i] = max(0.0, self._memory[i] - memory)
        for facts, i in unsampled:  # in the log's order: each estimate sees the node's risk so far
            cpu_estimate, memory_estimate = self._estimate(facts, i)
            self._cpu[i] += cpu_estimate
            self._memory[i] += memory_estimate

    # --- the estimate -------------------------------------------------------------------------------
    def estimated(self, i: int) -> tuple[float, float]:
        """Node i's estimated cpu (milli-cores) and memory (bytes) in use; (0, 0) if it is unknown."""
        return self._cpu[i], self._memory[i]

    def composite(self, i: int) -> tuple[float, float]:
        """The node's cpu and memory load as fractions of its allocatable, clamped to [0, 1]."""
        cpu_capacity, memory_capacity = self._cpu_capacity[i], self._memory_capacity[i]
        cpu = min(max(self._cpu[i] / cpu_capacity, 0.0), 1.0) if cpu_capacity > 0 else 0.0
        memory = min(max(self._memory[i] / memory_capacity, 0.0), 1.0) if memory_capacity > 0 else 0.0
        return cpu, memory

    def _weighted(self, i: int) -> float:
        """Volcano's weighted load (0 when both weights are 0)."""
        cpu, memory = self.composite(i)
        return cpu * self._weights[0] + memory * self._weights[1]

    def score(self, i: int) -> float:
        """Volcano's CalcNodeScore: (1 - weighted load) x 100 x usage.weight; 0 for an unknown node or
        when both weights are 0."""
        args = self.args
        if not self._known[i] or not args.cpu_weight + args.memory_weight:
            return 0.0
        return (1.0 - self._weighted(i)) * MAX_SCORE * args.usage_weight

    def _estimate(self, facts: TaskFacts | TaskInfo, i: int) -> tuple[float, float]:
        args = self.args
        risk = args.risk_factor if self._weighted(i) >= args.risk_threshold else 1.0
        if facts.best_effort:
            return args.best_effort_cpu_milli * risk, args.best_effort_memory_bytes * risk
        pod = facts.pod
        # pods stamped from one template share their containers and requests: one estimate for all
        key = (id(pod.spec.containers), id(pod.spec.init_containers))
        unscaled = self._unscaled.get(key)
        if unscaled is None:
            requests = pod.spec.effective_requests()
            cpu_limit, memory_limit = pod_limits(pod) if args.burst_ratio else (0.0, 0.0)
            ratios = (args.request_ratio, args.burst_ratio)
            cpu = _unscaled(float(requests.get(CPU, 0)), cpu_limit, *ratios)
            memory = _unscaled(requests.get(MEMORY, 0) / 1000, memory_limit, *ratios)
            unscaled = self._unscaled[key] = (*cpu, *memory)
        cpu_base, cpu_ceiling, memory_base, memory_ceiling = unscaled
        return min(max(cpu_base * risk, 0.0), cpu_ceiling), min(max(memory_base * risk, 0.0), memory_ceiling)

    def _refresh(self, i: int) -> None:
        if not self._known[i]:
            return
        self._score[i] = self.score(i)
        args = self.args
        cpu_capacity, memory_capacity = self._cpu_capacity[i], self._memory_capacity[i]
        cpu_over = cpu_capacity > 0 and self._cpu[i] * 100 > args.cpu_threshold * cpu_capacity
        memory_over = memory_capacity > 0 and self._memory[i] * 100 > args.memory_threshold * memory_capacity
        memory_over = memory_over and not cpu_over  # a node is reported under its first reason
        # the masks are handed out by predicate(): a change makes a new array, never edits a given one
        if self._cpu_over[i] != cpu_over:
            self._cpu_over = self._cpu_over.copy()
            self._cpu_over[i] = cpu_over
            self._over[0] += 1 if cpu_over else -1
        if self._memory_over[i] != memory_over:
            self._memory_over = self._memory_over.copy()
            self._memory_over[i] = memory_over
            self._over[1] += 1 if memory_over else -1

    # --- extension points -----------------------------------------------------------------------------
    def predicate(self, ssn: Session, task: TaskInfo) -> list[NodeFailure]:
        failures = []
        if self._over[0]:
            failures.append(NodeFailure(CPU_OVER, self._cpu_over, kind=CAPACITY, dimension=CPU))
        if self._over[1]:
            failures.append(NodeFailure(MEMORY_OVER, self._memory_over, kind=CAPACITY, dimension=MEMORY))
        return failures

    def node_order(self, ssn: Session, task: TaskInfo, candidates: np.ndarray) -> np.ndarray:
        scores: np.ndarray = self._score.take(candidates)
        return scores

    def on_allocate(self, ssn: Session, event: Event) -> None:
        task = event.task
        i = task.node_index
        if i < 0 or not self._known[i]:
            return
        cpu, memory = self._estimate(task, i)
        self._placed[task.uid] = (i, cpu, memory)
        self._cpu[i] += cpu
        self._memory[i] += memory
        self._refresh(i)

    def on_deallocate(self, ssn: Session, event: Event) -> None:
        placed = self._placed.pop(event.task.uid, None)
        if placed is None:
            return
        i, cpu, memory = placed
        self._cpu[i] -= cpu
        self._memory[i] -= memory
        self._refresh(i)
