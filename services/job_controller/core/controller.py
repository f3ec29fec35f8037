"""The job-controller's whole core as its service runs it: the Jobs' core with its read model
(projection.py) and the plain Pods' and PodGroups' core (plain/core.py), side by side over one log.

Every event goes to both; each acts on its own objects only (a Job's pods carry the job-name annotation,
the other PodGroups the owner annotation of plain/owner.py), and admission keeps their names apart.
The read model is one: both mark what they change in the same dirty set, and an object is rendered by
whichever core has it.
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
from shared.projected_core import ObjectKey
from shared.runner_types import Event, Output

CHECKPOINT_VERSION = 1


@dataclass(slots=True)
class ControllerState:
    jobs: Projected
    plain: PlainState
    # the plain objects the last applied event touched (transient: what touched() hands the loop)
    plain_touched: list[ObjectKey] = field(default_factory=list, compare=False)


# What the controller reconciles one at a time: ("job", job key) or ("plain", a plain object's key).
ControllerKey = tuple[str, Any]


class ControllerCore:
    kinds = KINDS
    reads = fold.HANDLED_EVENTS | plain_fold.HANDLED_EVENTS

    def __init__(self) -> None:
        self.jobs = ProjectedCore()
        self.plain = PlainCore()
        self.name = self.jobs.name

    def initial(self) -> ControllerState:
        return ControllerState(self.jobs.initial(), self.plain.initial())

    def apply(self, state: ControllerState, event: Event) -> ControllerState:
        self.jobs.apply(state.jobs, event)
        state.plain_touched = self.plain.apply(state.plain, event)
        for key in state.plain_touched:
            state.jobs.dirty[key] = event.seq
        return state

    def touched(self, state: ControllerState, event: Event) -> list[ControllerKey]:
        keys: list[ControllerKey] = [("job", key) for key in self.jobs.touched(state.jobs, event)]
        keys += [("plain", key) for key in state.plain_touched]
        return keys

    def due(self, state: ControllerState, now: float) -> list[ControllerKey]:
        return [("job", key) for key in self.jobs.due(state.jobs, now)]

    def reconcile(
        self, state: ControllerState, now: float, keys: Collection[ControllerKey] | None = None
    ) -> list[Output]:
        if keys is None:
            return self.jobs.reconcile(state.jobs, now) + self.plain.reconcile(state.plain)
        jobs = [key for scope, key in keys if scope == "job"]
        plain = [key for scope, key in keys if scope == "plain"]
        outputs = self.jobs.reconcile(state.jobs, now, jobs) if jobs else []
        return outputs + (self.plain.reconcile(state.plain, plain) if plain else [])

    def reconcile_keys(self, state: ControllerState) -> Iterator[ControllerKey]:
        """Every key a full reconcile covers: the runner reconciles them one by one when a full reconcile
        raises, so one job or plain object it cannot decide about does not hold up the others."""
        for key in state.jobs.core.jobs:
            yield ("job", key)
        for scope, table in (("pod", state.plain.pods), ("podgroup", state.plain.groups)):
            for key in table:
                namespace, _, name = key.partition("/")
                yield ("plain", (scope, namespace, name))

    def dirty(self, state: ControllerState) -> dict[ObjectKey, int]:
        return state.jobs.dirty

    def render(self, state: ControllerState, key: ObjectKey) -> Mapping[str, Any] | None:
        rendered = self.jobs.render(state.jobs, key)
        if rendered is not None:
            return rendered
        obj = self.plain.render(state.plain, key)
        return None if obj is None else codec.encode_object(obj)

    def keys(self, state: ControllerState) -> Iterator[ObjectKey]:
        yield from self.jobs.keys(state.jobs)
        yield from self.plain.keys(state.plain)

    def dump(self, state: ControllerState) -> bytes:
        document = {
            "version": CHECKPOINT_VERSION,
            "jobs": self.jobs.dump(state.jobs),
            "plain": self.plain.dump(state.plain),
        }
        packed: bytes = msgpack.packb(document, use_bin_type=True)
        return packed

    def load(self, data: bytes) -> ControllerState:
        document = msgpack.unpackb(data, raw=False)
        if not isinstance(document, dict) or document.get("version") != CHECKPOINT_VERSION:
            # an older layout is only a cache of the log: the loop replays instead
            raise ValueError("unsupported job-controller checkpoint layout")
        return ControllerState(self.jobs.load(document["jobs"]), self.plain.load(document["plain"]))
