"""Queue-scoped overcommit (Volcano 1.16, `volcano.sh/overcommit-factor` on a Queue): the enqueue budget of
one queue, checked after the overcommit plugin's cluster-wide check, which no queue factor can pass.

- Effective factor: min(the queue's annotation, `max-queue-overcommit-factor`), the latter defaulting to
  the plugin's `overcommit-factor`. The two factors have different bases (the cluster's total, the queue's
  deserved), so a queue factor above the global one is safe: the global check still runs first.
- Budget, per resource the queue's spec.deserved grants (> 0): min(real capability, max(deserved,
  guarantee) x factor). A resource deserved does not name gets no queue budget (it would be a budget of
  zero); a guarantee alone does not add one. The real capability is proportion's flat one: what the other
  queues' guarantees leave of the cluster plus the queue's own guarantee, capped by its capability.
- Held: the queue's allocated requests plus what its jobs hold back at enqueue, by the global rule (an
  Inqueue PodGroup's minResources; a Running one's unmet part of it); a job admitted this session adds
  its minResources. A job counts in its queue and in every annotated ancestor (spec.parent).
- A job may go Inqueue iff, for its queue and each annotated ancestor, held + its minResources fits the
  budget on the budget's resources it asks for. A refusal is the queue's quota (InsufficientQueueQuota):
  more nodes would not lift it.
- A queue whose annotation is invalid (admission refuses such values, so only a bypassed admission gets
  one here), or that deserves nothing, admits no job with minResources: Volcano's design refuses rather
  than ignore a policy it cannot read.

Nothing here runs when no queue carries the annotation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from contracts.queue_overcommit import OVERCOMMIT_FACTOR, deserves_something
from contracts.resources import EMPTY, PODS, Resources
from services.scheduler.core.framework.pending import format_resources
from services.scheduler.core.model.pending import QUOTA, Refusal
from services.scheduler.core.plugins.fairness import (
    capability_limits,
    over_amounts,
    real_capability,
    reserves_minimum,
    total_guarantee,
    unmet_minimum,
)

if TYPE_CHECKING:
    from services.scheduler.core.framework.session import Session
    from services.scheduler.core.model.job import JobInfo
    from services.scheduler.core.model.queue import QueueInfo


@dataclass(slots=True)
class QueueBudget:
    name: str
    factor: float = 1.0  # the effective one
    asked: float = 1.0  # the annotation's
    budget: Resources = EMPTY  # per deserved resource
    held: dict[str, int] = field(default_factory=dict)
    invalid: str = ""  # why the queue admits nothing ("" when its policy is readable)

    def describe_factor(self) -> str:
        if self.factor < self.asked:
            return (
                f"{OVERCOMMIT_FACTOR} {self.asked:g}, capped at max-queue-overcommit-factor {self.factor:g}"
            )
        return f"{OVERCOMMIT_FACTOR} {self.factor:g}"


def queue_budget(queue: QueueInfo, max_factor: float, total: Resources, guarantees: Resources) -> QueueBudget:
    """A queue's budget from its spec and annotation (pure)."""
    asked = queue.overcommit_factor
    if asked is None:
        raise ValueError(f"queue {queue.name} has no {OVERCOMMIT_FACTOR}")
    if isinstance(asked, str):
        return QueueBudget(queue.name, invalid=f"invalid {OVERCOMMIT_FACTOR}: {asked}")
    if not deserves_something(queue.deserved):
        return QueueBudget(queue.name, invalid=f"{OVERCOMMIT_FACTOR} on a queue that deserves nothing")
    assert queue.deserved is not None
    factor = min(asked, max_factor)
    guarantee = queue.guarantee or EMPTY
    real = real_capability(total, guarantees, guarantee, capability_limits(queue.capability))
    budget = {
        dim: min(real.get(dim, 0), round(max(value, guarantee.get(dim, 0)) * factor))
        for dim, value in queue.deserved.items()
        if value > 0 and dim != PODS
    }
    return QueueBudget(queue.name, factor, asked, Resources(budget))


class QueueBudgets:
    """The session's queue budgets and what each holds, kept live as jobs are admitted."""

    __slots__ = ("_chains", "_queues", "budgets")

    def __init__(self, ssn: Session, max_factor: float) -> None:
        self._queues = ssn.queues
        self._chains: dict[str, tuple[QueueBudget, ...]] = {}
        annotated = [q for q in ssn.queues.values() if q.overcommit_factor is not None]
        self.budgets: dict[str, QueueBudget] = {}
        if not annotated:
            return
        guarantees = total_guarantee(ssn.queues.values())
        for queue in annotated:
            self.budgets[queue.name] = queue_budget(queue, max_factor, ssn.total_resource, guarantees)
        for job in ssn.jobs.values():
            chain = self.chain(job.queue)
            if not chain:
                continue
            held = job.allocated
            if job.min_resources is not None and job.phase == "Inqueue":
                held = held + job.min_resources
            elif reserves_minimum(job):
                held = held + unmet_minimum(job)
            for budget in chain:
                _add(budget.held, held)

    def chain(self, queue: str) -> tuple[QueueBudget, ...]:
        """The budgets a job of `queue` must fit: its queue's and its annotated ancestors', nearest first."""
        if not self.budgets:
            return ()
        found = self._chains.get(queue)
        if found is None:
            budgets: list[QueueBudget] = []
            seen: set[str] = set()
            name = queue
            while name and name not in seen and name in self._queues:
                seen.add(name)
                if name in self.budgets:
                    budgets.append(self.budgets[name])
                name = self._queues[name].parent
            found = self._chains[queue] = tuple(budgets)
        return found

    def refusal(self, job: JobInfo) -> Refusal | None:
        """Why the job's queue budgets refuse it (None: they admit it)."""
        if job.min_resources is None:
            return None
        for budget in self.chain(job.queue):
            if budget.invalid:
                return Refusal(f"queue {budget.name} admits no job: {budget.invalid}", QUOTA)
            asked = Resources({d: v for d, v in job.min_resources.items() if d in budget.budget})
            over = over_amounts(budget.held, asked, budget.budget)
            if over:
                dims = ", ".join(sorted(over))
                factor = budget.describe_factor()
                text = (
                    f"queue {budget.name} is over its overcommit budget on {dims} ({factor}:"
                    f" budget {_shown(budget.budget, over)}, admitted {_shown(budget.held, over)},"
                    f" this job {_shown(asked, over)})"
                )
                return Refusal(text, QUOTA, over)
        return None

    def admitted(self, job: JobInfo) -> None:
        if job.min_resources is None:
            return
        for budget in self.chain(job.queue):
            _add(budget.held, job.min_resources)


def _add(target: dict[str, int], amounts: Resources) -> None:
    for dim, value in amounts.items():
        target[dim] = target.get(dim, 0) + value


def _shown(resources: dict[str, int] | Resources, dims: Resources) -> str:
    return format_resources({d: resources.get(d, 0) for d in dims}, zeros=True)
