"""The job-controller's whole core as its service runs it: the Jobs' core with its read model
(projection.py), the plain Pods' and PodGroups' core (plain/core.py) and the CronJobs' and JobFlows'
core (workloads/core.py), side by side over one log.

Every event goes to each; each acts on its own objects only (a Job's pods carry the job-name annotation,
the other PodGroups the owner annotation of plain/owner.py; the workloads core makes Jobs only through
admission), and admission keeps their names apart. The read model is one: all mark what they change in
the same dirty set, and an object is rendered by whichever core has it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack

from contracts import codec
from services.job_controller.core import fold
from services.job_controller.core.plain import fold as plain_fold
from services.job_controller.core.plain.core import PlainCore
from services.job_controller.core.plain.state import PlainState
from services.job_controller.core.projection import KINDS, Projected, ProjectedCore
from services.job_controller.core.workloads import fold as workloads_fold
from services.job_controller.core.workloads.core import KINDS as WORKLOAD_KINDS
from services.job_controller.core.workloads.core import WorkloadsCore
from services.job_controller.core.workloads.state import WorkloadKey, WorkloadsState
from shared.projected_core import ObjectKey
from shared.runner_types import Event, Output

CHECKPOINT_VERSION = 2  # 2: the workloads core's state


@dataclass(slots=True)
class ControllerState:
    jobs: Projected
    plain: PlainState
    workloads: WorkloadsState = field(default_factory=WorkloadsState)
    # the plain objects and the CronJobs and JobFlows the last applied event touched (transient: what
    # touched() hands the loop)
    plain_touched: list[ObjectKey] = field(default_factory=list, compare=False)
    workloads_touched: list[WorkloadKey] = field(default_factory=list, compare=False)


# What the controller reconciles one at a time: ("job", job key), ("plain", a plain object's key) or
# ("workload", ("cronjob" | "jobflow", key)).
ControllerKey = tuple[str, Any]


class ControllerCore:
    kinds = KINDS
    reads = fold.HANDLED_EVENTS | plain_fold.HANDLED_EVENTS | workloads_fold.HANDLED_EVENTS

    def __init__(self) -> None:
        self.jobs = ProjectedCore()
        self.plain = PlainCore()
        self.workloads = WorkloadsCore()
        self.name = self.jobs.name

    def initial(self) -> ControllerState:
        return ControllerState(self.jobs.initial(), self.plain.initial(), self.workloads.initial())

    def apply(self, state: ControllerState, event: Event) -> ControllerState:
        self.jobs.apply(state.jobs, event)
        state.plain_touched = self.plain.apply(state.plain, event)
        touched = self.workloads.apply(state.workloads, event)
        state.workloads_touched = touched.keys
        for key in (*state.plain_touched, *touched.changed):
            state.jobs.dirty[key] = event.seq
        return state

    def touched(self, state: ControllerState, event: Event) -> list[ControllerKey]:
        keys: list[ControllerKey] = [("job", key) for key in self.jobs.touched(state.jobs, event)]
        keys += [("plain", key) for key in state.plain_touched]
        keys += [("workload", key) for key in state.workloads_touched]
        return keys

    def due(self, state: ControllerState, now: float) -> list[ControllerKey]:
        keys: list[ControllerKey] = [("job", key) for key in self.jobs.due(state.jobs, now)]
        return keys + [("workload", key) for key in self.workloads.due(state.workloads, now)]

    def reconcile(
        self, state: ControllerState, now: float, keys: Collection[ControllerKey] | None = None
    ) -> list[Output]:
        if keys is None:
            return (
                self.jobs.reconcile(state.jobs, now)
                + self.plain.reconcile(state.plain)
                + self.workloads.reconcile(state.workloads, now)
            )
        jobs = [key for scope, key in keys if scope == "job"]
        plain = [key for scope, key in keys if scope == "plain"]
        workloads = [key for scope, key in keys if scope == "workload"]
        outputs = self.jobs.reconcile(state.jobs, now, jobs) if jobs else []
        outputs += self.plain.reconcile(state.plain, plain) if plain else []
        return outputs + (self.workloads.reconcile(state.workloads, now, workloads) if workloads else [])

    def reconcile_keys(self, state: ControllerState) -> Iterator[ControllerKey]:
        """Every key a full reconcile covers: the runner reconciles them one by one when a full reconcile
        raises, so one job or plain object it cannot decide about does not hold up the others."""
        for key in state.jobs.core.jobs:
            yield ("job", key)
        for scope, table in (("pod", state.plain.pods), ("podgroup", state.plain.groups)):
            for key in table:
                namespace, _, name = key.partition("/")
                yield ("plain", (scope, namespace, name))
        for workload in self.workloads.reconcile_keys(state.workloads):
            yield ("workload", workload)

    def dirty(self, state: ControllerState) -> dict[ObjectKey, int]:
        return state.jobs.dirty

    def render(self, state: ControllerState, key: ObjectKey) -> Mapping[str, Any] | None:
        if key[0] in WORKLOAD_KINDS:
            return self.workloads.render(state.workloads, key)
        rendered = self.jobs.render(state.jobs, key)
        if rendered is not None:
            return rendered
        obj = self.plain.render(state.plain, key)
        return None if obj is None else codec.encode_object(obj)

    def keys(self, state: ControllerState) -> Iterator[ObjectKey]:
        yield from self.jobs.keys(state.jobs)
        yield from self.plain.keys(state.plain)
        yield from self.workloads.keys(state.workloads)

    def dump(self, state: ControllerState) -> bytes:
        document = {
            "version": CHECKPOINT_VERSION,
            "jobs": self.jobs.dump(state.jobs),
            "plain": self.plain.dump(state.plain),
            "workloads": self.workloads.dump(state.workloads),
        }
        packed: bytes = msgpack.packb(document, use_bin_type=True)
        return packed

    def load(self, data: bytes) -> ControllerState:
        document = msgpack.unpackb(data, raw=False)
        if not isinstance(document, dict) or document.get("version") != CHECKPOINT_VERSION:
            # an older layout is only a cache of the log: the loop replays instead
            raise ValueError("unsupported job-controller checkpoint layout")
        return ControllerState(
            self.jobs.load(document["jobs"]),
            self.plain.load(document["plain"]),
            self.workloads.load(document["workloads"]),
        )
