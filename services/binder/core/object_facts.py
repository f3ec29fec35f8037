"""What the ledger reads of the objects a PodCreated and a PodGroupCreated carry, and only that (pure).

The ledger needs a pod's namespace, its PodGroup and queue annotations, whether it is being deleted, its
node, its phase and its effective requests, and a PodGroup's queue: a few fields of objects whose
containers, labels, env, scheduling constraints and status make up most of their encoding. Decoding the
whole Pod (contracts.codec) was the largest part of the binder's fold, so the encoded object is
converted straight into the Structs below by msgspec, in C, skipping every other field; the fields read
are checked as strictly as the codec checks them (a wrong type is an error naming its path). Effective
requests follow Kubernetes' rule as contracts.objects.PodSpec computes it, once per distinct set of
container requests (the pods of one task share theirs).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec

from contracts.objects import Container, PodSpec
from contracts.resources import Resources

Requests = tuple[tuple[str, int], ...]


class _Container(msgspec.Struct, frozen=True):
    requests: dict[str, int] = {}
    restart_policy: str = ""


class _Meta(msgspec.Struct, frozen=True):
    namespace: str = "default"
    annotations: dict[str, str] = {}
    deletion_timestamp: float | None = None


class _Spec(msgspec.Struct, frozen=True):
    containers: tuple[_Container, ...] = ()
    init_containers: tuple[_Container, ...] = ()
    node_name: str = ""
    overhead: dict[str, int] = {}


class _Status(msgspec.Struct, frozen=True):
    phase: str = "Pending"


class PodFacts(msgspec.Struct, frozen=True):
    """The fields of an encoded Pod (contracts.codec) the ledger reads."""

    meta: _Meta
    spec: _Spec = _Spec()
    status: _Status = _Status()

    @property
    def requests(self) -> dict[str, int]:
        """The pod's effective requests (milli-units per dimension), a dict of its own."""
        spec = self.spec
        return dict(
            _effective_requests(
                tuple(_requests(c) for c in spec.containers),
                tuple((_requests(c), c.restart_policy == "Always") for c in spec.init_containers),
                tuple(spec.overhead.items()),
            )
        )


class PodGroupFacts(msgspec.Struct, frozen=True):
    """The field of an encoded PodGroup the ledger reads."""

    queue: str = "default"


F = TypeVar("F", PodFacts, PodGroupFacts)


def facts(encoded: Mapping[str, Any], cls: type[F]) -> F:
    """The facts of an encoded object (`{kind, object}`: an object payload's, its kind checked when the
    payload was decoded); raises ValueError naming the first field that does not fit."""
    try:
        return msgspec.convert(encoded["object"], cls)
    except msgspec.ValidationError as exc:
        raise ValueError(f"{cls.__name__}: {exc}") from None


def _requests(container: _Container) -> Requests:
    return tuple(container.requests.items())


@functools.lru_cache(maxsize=4096)
def _effective_requests(
    containers: tuple[Requests, ...], init_containers: tuple[tuple[Requests, bool], ...], overhead: Requests
) -> Resources:
    spec = PodSpec(
        containers=tuple(Container("", requests=Resources(r)) for r in containers),
        init_containers=tuple(
            Container("", requests=Resources(r), restart_policy="Always" if sidecar else "")
            for r, sidecar in init_containers
        ),
        overhead=Resources(overhead),
    )
    return spec.effective_requests()
