"""Choosing victims for preempt and reclaim (pure): which pods of a node may go, the cheapest set of them
that makes room, and the node where that set costs least.

On a node, the pods an evicting task may take pass the action's stages in turn (each can leave none, and
then says why), then the plugins' answer (Preemptable / Reclaimable). Of those, victims are taken one at a
time, cheapest first, until the task fits; then every victim the task turns out not to need is spared
again, most valuable first (kube-scheduler's reprieve). The set is irreducible: no victim could stay.

What a victim costs is the pods its job loses by it: one, for a pod whose job keeps its minAvailable; the
whole job's running pods, for the pod that takes a gang below its minAvailable (the gang cannot run on
without it); one again for further pods of a gang already broken. Between victims of equal cost,
Volcano's victim order decides (lowest priority first; BuildVictimsPriorityQueue). So a gang's spare pods
above its minAvailable go before any gang is broken, and an elastic job loses only what is needed.

Across nodes, the search dry-runs up to `wanted` nodes that can make room, in the order given, and keeps
the cheapest: fewest pods lost, then the lowest highest victim priority, the lowest priority sum, the
fewest victims, then the first found. A node that needs no victim ends the search.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from services.scheduler.core.actions.common import shortfall
from services.scheduler.core.framework.action import PriorityQueue
from services.scheduler.core.model.task import TaskInfo

if TYPE_CHECKING:
    from services.scheduler.core.actions.explain import Attempts
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.framework.statement import Statement

# (why the node has no victim when this stage leaves none, which pods pass it)
Stage = tuple[str, Callable[[TaskInfo], bool]]
Cost = tuple[int, int, int, int]  # pods lost, highest victim priority, priority sum, victims

NOTHING_TO_EVICT = "no pod it may evict"
STILL_NO_FIT = "it still would not fit after evicting every victim allowed (queue quota or predicates)"


def protected(plugins: Sequence[str]) -> str:
    if not plugins:
        return "the plugins allow no victim among the pods it may evict"
    if len(plugins) == 1:
        return f"the {plugins[0]} plugin allows no victim"
    return f"the {', '.join(plugins)} plugins allow no victim"


def too_little(lacking: Sequence[str]) -> str:
    return f"evicting every victim allowed would not free enough {', '.join(lacking)}"


@dataclass(frozen=True, slots=True)
class Choice:
    node: int
    victims: tuple[TaskInfo, ...]  # in eviction order
    cost: Cost


@dataclass(slots=True)
class VictimSearch:
    """One evicting task's search: `fits(node)` tells whether it fits the node in the session's current
    state (the trial evictions applied); `point` names the plugins' answer asked (Preemptable or
    Reclaimable)."""

    ssn: Session
    task: TaskInfo
    stages: Sequence[Stage]
    point: str  # the plugins' extension point asked: preemptable or reclaimable
    fits: Callable[[int], bool]
    reason: str  # the eviction reason trial evictions carry
    misses: dict[str, int] = field(default_factory=dict)  # why nodes gave no choice -> how many

    def best(self, nodes: Iterable[int], wanted: int) -> Choice | None:
        best: Choice | None = None
        found = 0
        for node in nodes:
            choice = self.on_node(node)
            if choice is None:
                continue
            if not choice.victims:
                return choice
            found += 1
            if best is None or choice.cost < best.cost:
                best = choice
            if found >= wanted:
                break
        return best

    def settle(self, choice: Choice | None, stmt: Statement, attempts: Attempts) -> bool:
        """Put the chosen evictions and the task pipelined into the room they free on `stmt`, and say
        what happened in `attempts`; False (nothing on `stmt`) when there was no choice."""
        if choice is None:
            attempts.no_room(self.task, self.misses)
            return False
        for victim in choice.victims:
            stmt.evict(victim, self.reason)
        stmt.pipeline(self.task, choice.node)
        attempts.room(self.task, self.ssn.nodes.names[choice.node], choice.victims)
        return True

    def on_node(self, node: int) -> Choice | None:
        if self.fits(node):
            return Choice(node, (), (0, 0, 0, 0))
        candidates = list(self.ssn.nodes.tasks[node].values())
        for why, keep in self.stages:
            candidates = [t for t in candidates if keep(t)]
            if not candidates:
                return self._miss(why)
        ssn = self.ssn
        if self.point == "reclaimable":
            victims = ssn.reclaimable_fn(self.task, candidates)
        else:
            victims = ssn.preemptable_fn(self.task, candidates)
        if not victims:
            return self._miss(protected(ssn.refusing_plugins(self.point, self.task, candidates)))
        lacking = shortfall(self.ssn, self.task, node, victims)
        if lacking:
            return self._miss(too_little(lacking))
        chosen = self._irreducible(node, victims)
        if chosen is None:
            return self._miss(STILL_NO_FIT)
        return Choice(node, chosen, victim_cost(self.ssn, chosen))

    def _miss(self, why: str) -> Choice | None:
        """Count why the node gave no choice; the answer is no choice."""
        self.misses[why] = self.misses.get(why, 0) + 1
        return None

    def _irreducible(self, node: int, victims: Sequence[TaskInfo]) -> tuple[TaskInfo, ...] | None:
        """Take victims cheapest first until the task fits, then spare each one it does not need."""
        taken = self._take(node, victims)
        if taken is None:
            return None
        needed = list(taken)
        if len(needed) > 1:
            for victim in reversed(taken):
                rest = [t for t in needed if t is not victim]
                if self._fits_without(node, rest):
                    needed = rest
        return tuple(needed)

    def _take(self, node: int, victims: Sequence[TaskInfo]) -> list[TaskInfo] | None:
        ssn = self.ssn
        ranked = PriorityQueue(ssn.victim_less(self.task), victims)
        rank: dict[str, int] = {}
        while ranked:
            victim = ranked.pop()
            rank[victim.uid] = len(rank)
        left = sorted(victims, key=lambda t: rank[t.uid])
        trial = ssn.statement()
        taken: list[TaskInfo] = []
        alive: dict[str, int] = {}
        fits = False
        while left and not fits:
            victim = min(left, key=lambda t: (_marginal(ssn, t, alive), rank[t.uid]))
            left.remove(victim)
            _lose(ssn, victim, alive)
            trial.evict(victim, self.reason)
            taken.append(victim)
            fits = self.fits(node)
        trial.discard()
        return taken if fits else None

    def _fits_without(self, node: int, victims: Sequence[TaskInfo]) -> bool:
        trial = self.ssn.statement()
        for victim in victims:
            trial.evict(victim, self.reason)
        fits = self.fits(node)
        trial.discard()
        return fits


def victim_cost(ssn: Session, victims: Sequence[TaskInfo]) -> Cost:
    """What evicting `victims` (in this order) costs; see the module docstring."""
    alive: dict[str, int] = {}
    lost = 0
    for victim in victims:
        lost += _marginal(ssn, victim, alive)
        _lose(ssn, victim, alive)
    priorities = [v.priority for v in victims]
    return (lost, max(priorities, default=0), sum(priorities), len(victims))


def _alive(ssn: Session, task: TaskInfo, alive: dict[str, int]) -> int:
    count = alive.get(task.job)
    if count is None:
        job = ssn.jobs.get(task.job)
        count = alive[task.job] = job.ready_task_num() if job is not None else 1
    return count


def _marginal(ssn: Session, task: TaskInfo, alive: dict[str, int]) -> int:
    """The pods lost by evicting `task` now, `alive` holding its job's ready pods left so far: its whole
    gang when it is the one that takes the gang below minAvailable, else itself."""
    job = ssn.jobs.get(task.job)
    if job is None:
        return 1
    count = _alive(ssn, task, alive)
    if count >= job.min_available > count - 1:
        return max(count, 1)
    return 1


def _lose(ssn: Session, task: TaskInfo, alive: dict[str, int]) -> None:
    alive[task.job] = _alive(ssn, task, alive) - 1
