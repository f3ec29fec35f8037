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
    request = max(request, 0.0)
    effective = limit if limit > 0 and limit >= request else request
    value = (request * request_ratio + (effective - request) * burst_ratio) * risk
    return min(max(value, 0.0), effective)


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
        self.args = UsageArguments.parse(self.arguments)
        nodes = ssn.nodes
        count = len(nodes)
        self._capacity = np.zeros((2, count))  # rows: cpu (milli-cores), memory (bytes)
        for row, (name, scale) in enumerate(((CPU, 1.0), (MEMORY, 1000.0))):
            column = ssn.resources.column.get(name)
            if column is not None:
                self._capacity[row] = nodes.allocatable[:, column] / scale
        self.known = np.zeros(count, dtype=bool)
        self.load = np.zeros((2, count))  # the estimate: sample, corrected, plus shadows
        self._placed: dict[str, tuple[int, float, float]] = {}  # in-session placements' shadows
        usage = ssn.snapshot.usage
        sampled: dict[int, Mapping[str, tuple[int, int]]] = {}
        for name, sample in usage.items():
            i = nodes.index.get(name)
            if i is not None:
                self.known[i] = True
                self.load[:, i] = (sample.cpu_milli, sample.memory_bytes)
                sampled[i] = {p.pod: (p.cpu_milli, p.memory_bytes) for p in sample.pods}
        self._score = np.zeros(count)
        self._cpu_over = np.zeros(count, dtype=bool)
        self._memory_over = np.zeros(count, dtype=bool)
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
                    self.load[0, i] = max(0.0, self.load[0, i] - cpu)
                    self.load[1, i] = max(0.0, self.load[1, i] - memory)
        for facts, i in unsampled:  # in the log's order: each estimate sees the node's risk so far
            self.load[:, i] += self._estimate(facts, i)

    # --- the estimate -------------------------------------------------------------------------------
    def composite(self, i: int) -> tuple[float, float]:
        """The node's cpu and memory load as fractions of its allocatable, clamped to [0, 1]."""
        capacity = self._capacity[:, i]
        fractions = [
            min(max(self.load[r, i] / capacity[r], 0.0), 1.0) if capacity[r] > 0 else 0.0 for r in (0, 1)
        ]
        return fractions[0], fractions[1]

    def _weighted(self, cpu: float, memory: float) -> float:
        """Volcano's weighted load (0 when both weights are 0)."""
        cpu_weight, memory_weight = self.args.cpu_weight, self.args.memory_weight
        total = cpu_weight + memory_weight
        return (cpu * cpu_weight + memory * memory_weight) / total if total else 0.0

    def score(self, i: int) -> float:
        """Volcano's CalcNodeScore: (1 - weighted load) x 100 x usage.weight; 0 for an unknown node or
        when both weights are 0."""
        args = self.args
        if not self.known[i] or not args.cpu_weight + args.memory_weight:
            return 0.0
        return (1.0 - self._weighted(*self.composite(i))) * MAX_SCORE * args.usage_weight

    def _estimate(self, facts: TaskFacts | TaskInfo, i: int) -> tuple[float, float]:
        args = self.args
        risk = args.risk_factor if self._weighted(*self.composite(i)) >= args.risk_threshold else 1.0
        if facts.best_effort:
            return args.best_effort_cpu_milli * risk, args.best_effort_memory_bytes * risk
        requests = facts.pod.spec.effective_requests()
        cpu_limit, memory_limit = pod_limits(facts.pod) if args.burst_ratio else (0.0, 0.0)
        ratios = (args.request_ratio, args.burst_ratio, risk)
        return (
            estimate(float(requests.get(CPU, 0)), cpu_limit, *ratios),
            estimate(requests.get(MEMORY, 0) / 1000, memory_limit, *ratios),
        )

    def _refresh(self, i: int) -> None:
        if not self.known[i]:
            return
        self._score[i] = self.score(i)
        capacity = self._capacity[:, i]
        cpu_over = capacity[0] > 0 and self.load[0, i] * 100 > self.args.cpu_threshold * capacity[0]
        memory_over = capacity[1] > 0 and self.load[1, i] * 100 > self.args.memory_threshold * capacity[1]
        memory_over = memory_over and not cpu_over  # a node is reported under its first reason
        # the masks are handed out by predicate(): a change makes a new array, never edits a given one
        if self._cpu_over[i] != cpu_over:
            self._cpu_over = self._cpu_over.copy()
            self._cpu_over[i] = cpu_over
        if self._memory_over[i] != memory_over:
            self._memory_over = self._memory_over.copy()
            self._memory_over[i] = memory_over

    # --- extension points -----------------------------------------------------------------------------
    def predicate(self, ssn: Session, task: TaskInfo) -> list[NodeFailure]:
        failures = []
        if self._cpu_over.any():
            failures.append(NodeFailure(CPU_OVER, self._cpu_over))
        if self._memory_over.any():
            failures.append(NodeFailure(MEMORY_OVER, self._memory_over))
        return failures

    def node_order(self, ssn: Session, task: TaskInfo, candidates: np.ndarray) -> np.ndarray:
        scores: np.ndarray = self._score.take(candidates)
        return scores

    def on_allocate(self, ssn: Session, event: Event) -> None:
        task = event.task
        i = task.node_index
        if i < 0 or not self.known[i]:
            return
        cpu, memory = self._estimate(task, i)
        self._placed[task.uid] = (i, cpu, memory)
        self.load[:, i] += (cpu, memory)
        self._refresh(i)

    def on_deallocate(self, ssn: Session, event: Event) -> None:
        placed = self._placed.pop(event.task.uid, None)
        if placed is None:
            return
        i, cpu, memory = placed
        self.load[:, i] -= (cpu, memory)
        self._refresh(i)
