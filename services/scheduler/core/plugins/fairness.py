"""Queue quota arithmetic shared by proportion and capacity (Volcano's queueAttr math). No session access.

As in Volcano, the pod count is a resource here: every task requests one pod (1000 milli-pods) and the
cluster total holds the nodes' max pods, so `pods` takes part in water-filling, shares and the whole-vector
comparisons (overused, reclaim). Comparisons on "the dimensions a request asks for" skip `pods`, as
Volcano's ignored scalar resources do.

Missing dimensions follow Volcano: a capability or real capability read as a cap in water-filling treats
a dimension it does not name as unlimited; a fit check ("allocated + request <= limit on the requested
dimensions") reads it as zero. `real_capability` keeps Volcano's key set so that both readings agree with
Volcano's: cpu and memory always, other dimensions only where the cluster has some left after guarantees.
Quantities are integers, so `water_fill` hands out `remaining * weight // total weight` (Volcano: floats).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contracts.resources import CPU, EMPTY, MEMORY, MILLI, PODS, Missing, Resources
from services.scheduler.core.framework.plan import QueueUpdate
from services.scheduler.core.model.task import ALLOCATED_STATUSES, TaskStatus

if TYPE_CHECKING:
    from services.scheduler.core.model.job import JobInfo
    from services.scheduler.core.model.queue import QueueInfo


# the tasks a queue's request counts besides its allocated ones
_WAITING = (TaskStatus.PENDING, TaskStatus.PIPELINED)


def with_pods(resources: Mapping[str, int], pods: int) -> Resources:
    """`resources` plus `pods` pods (Volcano counts one pod per task as a scalar resource)."""
    return Resources(resources) + {PODS: pods * MILLI}


def total_guarantee(queues: Iterable[QueueInfo]) -> Resources:
    total = EMPTY
    for queue in queues:
        if queue.guarantee:
            total = total + queue.guarantee
    return total


def capability_limits(capability: Resources | None) -> Resources | None:
    """A Queue's spec.capability as a cap, or None when it sets none. Cpu or memory <= 0 means unlimited
    (Volcano sets them to MaxFloat64): left out, since a cap is read with Missing.INFINITY."""
    if not capability:
        return None
    return Resources({d: v for d, v in capability.items() if not (d in (CPU, MEMORY) and v <= 0)})


def real_capability(
    total: Resources,
    all_guarantees: Mapping[str, int],
    own_guarantee: Resources,
    capability: Resources | None,
) -> Resources:
    """What a queue may hold at most: what the other queues' guarantees leave of `total`, plus its own
    guarantee, capped by `capability` (dimensions the capability does not name are not capped)."""
    free = {d: v - all_guarantees.get(d, 0) for d, v in total.items()}
    kept = {d: max(free.get(d, 0), 0) for d in (CPU, MEMORY)}
    kept.update((d, v) for d, v in free.items() if v > 0)
    real = Resources(kept) + own_guarantee
    return real if capability is None else real.min_with(capability, Missing.INFINITY)


def share(allocated: Mapping[str, int], deserved: Mapping[str, int]) -> float:
    """The largest allocated/deserved ratio over the dimensions `deserved` grants (> 0); 0 when it grants
    none. (Volcano's 0/0 = 0 and x/0 = 1 cannot arise: a dimension with nothing deserved is not looked at.)"""
    return max((allocated.get(d, 0) / v for d, v in deserved.items() if v > 0), default=0.0)


def over_limit(base: Mapping[str, int], request: Mapping[str, int], limit: Mapping[str, int]) -> list[str]:
    """The dimensions `request` asks for (pods aside) on which base + request exceeds `limit`; a dimension
    the limit does not name is a limit of zero (Volcano's LessEqualWithDimensionAndResourcesName)."""
    return [d for d, v in request.items() if v > 0 and d != PODS and base.get(d, 0) + v > limit.get(d, 0)]


def over_amounts(base: Mapping[str, int], request: Mapping[str, int], limit: Mapping[str, int]) -> Resources:
    """On each dimension `over_limit` names, the part of `request` that does not fit under `limit` next to
    `base`: what the request lacks, never more than it asks."""
    over = over_limit(base, request, limit)
    return Resources({d: min(request[d], base.get(d, 0) + request[d] - limit.get(d, 0)) for d in over})


def capped_below(limit: Mapping[str, int], total: Mapping[str, int], dimensions: Iterable[str]) -> list[str]:
    """The dimensions on which a queue's `limit` (its real capability) is below the cluster's `total`: a
    capability or the other queues' guarantees hold it there, so more nodes would not raise it."""
    return [d for d in dimensions if d in limit and limit[d] < total.get(d, 0)]


@dataclass(frozen=True, slots=True)
class QueueDemand:
    name: str
    weight: int
    request: Resources
    real_capability: Resources  # dimensions it does not name are unlimited
    guarantee: Resources = EMPTY


def water_fill(total: Resources, queues: list[QueueDemand]) -> dict[str, Resources]:
    """Volcano proportion's deserved quotas. Each round, every queue not yet satisfied gets its weight's
    part of what is left, capped by its real capability and its request and raised to its guarantee; a
    queue whose request is met, or whose deserved stopped moving, drops out. Rounds end when nothing is
    left or nothing changed."""
    deserved = {q.name: EMPTY for q in queues}
    met: set[str] = set()
    remaining = total
    while True:
        active = [q for q in queues if q.name not in met]
        weights = sum(q.weight for q in active)
        if weights == 0:
            break
        increased: dict[str, int] = {}
        decreased: dict[str, int] = {}
        for queue in active:
            old = deserved[queue.name]
            grown = old + {d: v * queue.weight // weights for d, v in remaining.items()}
            new = Resources(
                {
                    d: min(v, queue.real_capability.get(d, v), queue.request.get(d, 0))
                    for d, v in grown.items()
                }
            ).max_with(queue.guarantee)
            deserved[queue.name] = new
            if queue.request.less_equal(new) or new == old:
                met.add(queue.name)
            for d in set(new) | set(old):
                delta = new.get(d) - old.get(d)
                if delta > 0:
                    increased[d] = increased.get(d, 0) + delta
                elif delta < 0:
                    decreased[d] = decreased.get(d, 0) - delta
        left = (remaining + decreased - increased).clamp_non_negative()
        if left.is_empty() or left == remaining:
            break
        remaining = left
    return deserved


def unmet_minimum(job: JobInfo) -> Resources:
    """Per dimension of the job's minResources, what its allocated tasks do not cover yet (Volcano's
    GetInqueueResource, which also skips non-scalar names such as ephemeral-storage: lahar keeps them)."""
    assert job.min_resources is not None
    allocated = with_pods(job.allocated, job.count(*ALLOCATED_STATUSES))
    return Resources({d: max(v - allocated.get(d), 0) for d, v in job.min_resources.items()})


def reserves_minimum(job: JobInfo) -> bool:
    """Does the job hold back part of its minResources at session open: an Inqueue PodGroup, or a Running
    one whose allocated tasks still reach minMember (once fewer are left, as when the driver of a Spark job
    has finished while its PodGroup stays Running, it holds back nothing)."""
    if job.min_resources is None:
        return False
    return job.phase == "Inqueue" or (
        job.phase == "Running" and job.count(*ALLOCATED_STATUSES) >= job.min_available
    )


def accumulate(target: dict[str, int], amounts: Iterable[tuple[str, int]], sign: int = 1) -> None:
    """Add (sign 1) or subtract (sign -1) `amounts` into a mutable resource dict."""
    for d, v in amounts:
        target[d] = target.get(d, 0) + sign * v


class QueueLedger:
    """One queue's figures in a session (Volcano's queueAttr): static quotas set at session open, and
    `allocated`/`share` kept live by allocate and deallocate events."""

    __slots__ = (
        "_best_effort_share",
        "_granted",
        "allocated",
        "deserved",
        "elastic",
        "guarantee",
        "has_deserved",
        "inqueue",
        "name",
        "real_capability",
        "request",
        "share",
    )

    def __init__(
        self, name: str, guarantee: Resources | None, best_effort_share: float | None = None
    ) -> None:
        """`best_effort_share`: the share of a queue that deserves nothing but pods (capacity: 1, so that it
        goes after every queue still below its deserved); None computes it like any other (proportion)."""
        self.name = name
        self.guarantee = guarantee or EMPTY
        self.real_capability = EMPTY
        self.allocated: dict[str, int] = {}
        self.request: dict[str, int] = {}
        self.inqueue: dict[str, int] = {}
        self.elastic: dict[str, int] = {}
        self._best_effort_share = best_effort_share
        self.set_deserved(EMPTY)

    def add_job(self, job: JobInfo) -> None:
        """Count a job's allocated and pending tasks, its reserved minimum and its elastic part.

        Every session opens by adding every job of the cluster (about a tenth of a session in a burst): the
        sums go straight into the queue's dicts, with the arithmetic of `with_pods`, `unmet_minimum` and
        `Resources.exceeded_part` written out rather than built as intermediate vectors."""
        counts = job.status_counts
        pods = sum(counts[status] for status in ALLOCATED_STATUSES)
        # with_pods(job.allocated, pods), as a plain dict: every dimension kept, zeros included
        held = dict(job.allocated.items())
        held[PODS] = held.get(PODS, 0) + pods * MILLI
        allocated, request = self.allocated, self.request
        for d, v in held.items():
            allocated[d] = allocated.get(d, 0) + v
            request[d] = request.get(d, 0) + v
        # a pod waiting in room reserved for it (Pipelined from the start of the session) is pending too
        for status in _WAITING:
            for task in job.tasks_by_status[status].values():
                for d, v in task.resreq.items():
                    request[d] = request.get(d, 0) + v
                request[PODS] = request.get(PODS, 0) + MILLI
        for requests, count in job.unplaced.items():  # pending pods another replica places
            for d, v in requests.items():
                request[d] = request.get(d, 0) + v * count
            request[PODS] = request.get(PODS, 0) + count * MILLI
        minimum = job.min_resources
        if minimum is not None and reserves_minimum(job):
            inqueue = self.inqueue
            for d, v in minimum.items():  # unmet_minimum
                inqueue[d] = inqueue.get(d, 0) + max(v - held.get(d, 0), 0)
        elastic = self.elastic
        beyond = minimum or EMPTY
        for d in held.keys() | beyond.keys():  # what it holds beyond its minimum (exceeded_part)
            elastic[d] = elastic.get(d, 0) + max(held.get(d, 0) - beyond.get(d, 0), 0)
        self._update_share()

    def set_deserved(self, deserved: Resources) -> None:
        self.deserved = deserved
        # the dimensions the share looks at, as a plain dict: the share is recomputed on every event
        self._granted = {d: v for d, v in deserved.items() if v > 0}
        self.has_deserved = any(d != PODS for d in self._granted)
        self._update_share()

    def charge(self, request: Resources, sign: int) -> None:
        """A task of the queue was allocated (sign 1) or deallocated (sign -1)."""
        accumulate(self.allocated, request.items(), sign)
        self.allocated[PODS] = self.allocated.get(PODS, 0) + sign * MILLI
        self._update_share()

    def _update_share(self) -> None:
        if self._best_effort_share is not None and not self.has_deserved:
            self.share = self._best_effort_share
        else:
            self.share = share(self.allocated, self._granted)

    def over(self, request: Resources, limit: Mapping[str, int]) -> list[str]:
        """Dimensions on which allocated + request would exceed `limit`."""
        return over_limit(self.allocated, request, limit)

    def enqueue_shortfall(self, min_request: Resources) -> list[str]:
        """Dimensions on which a job's minResources do not fit the real capability next to what the queue
        holds and has admitted (minus what its jobs hold above their minimum)."""
        return list(self.enqueue_excess(min_request))

    def enqueue_excess(self, min_request: Resources) -> Resources:
        """`enqueue_shortfall`'s dimensions, each with the amount by which the minResources do not fit."""
        base = dict(self.allocated)
        accumulate(base, self.inqueue.items())
        accumulate(base, self.elastic.items(), -1)
        return over_amounts(base, min_request, self.real_capability)

    def admit(self, min_request: Resources) -> None:
        accumulate(self.inqueue, min_request.items())

    def figures(self) -> tuple[dict[str, int], dict[str, int]]:
        """Allocated and deserved as reported in the Queue status (without the pod count)."""
        return _without_pods(self.allocated), _without_pods(self.deserved)

    def update(self) -> QueueUpdate:
        """Every figure of the queue at session close (its status and Volcano's queue_* series)."""
        allocated, deserved = self.figures()
        return QueueUpdate(
            allocated=allocated,
            deserved=deserved,
            share=self.share,
            request=_without_pods(self.request),
            inqueue=_without_pods(self.inqueue),
            real_capability=_without_pods(self.real_capability),
        )


def _without_pods(resources: Mapping[str, int]) -> dict[str, int]:
    return {d: v for d, v in resources.items() if d != PODS}
