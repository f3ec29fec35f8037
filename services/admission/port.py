"""What the API server (api.py) and the intake consumer (intake.py) need of the admission service, and
nothing more: the service builds this port and hands it to both, so neither depends on the service.

`submit` and `submit_many` are the one path by which requests become events (service.py); both raise
or return intake.Unavailable / intake.Conflict when nothing could be written for now.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from opentelemetry.trace import Tracer

from services.admission.core.context import ClusterContext
from services.admission.core.decide import Request
from services.admission.core.pod_caps import PodCaps
from services.admission.core.tenants import TenantChange
from services.admission.metrics import AdmissionMetrics
from services.admission.submission import Submission, Submitted
from shared.bus.jetstream import Bus


class Submit(Protocol):
    def __call__(
        self,
        requests: Callable[[ClusterContext], Sequence[Request]],
        request_id: str,
        *,
        dry_run: bool = False,
    ) -> Awaitable[Submitted]: ...


class SubmitTenant(Protocol):
    def __call__(
        self, decide: Callable[[ClusterContext], TenantChange], request_id: str, *, dry_run: bool = False
    ) -> Awaitable[tuple[TenantChange, int]]: ...


@dataclass(frozen=True, slots=True)
class AdmissionPort:
    submit: Submit  # decide one request and write its events
    submit_many: Callable[[Sequence[Submission]], Awaitable[list[Submitted | Exception]]]  # a batch
    bus: Bus  # the API's subscriptions, the intake stream, rejections
    tracer: Tracer
    metrics: AdmissionMetrics
    stopping: asyncio.Event  # set when the service stops: serve no more
    progressed: Callable[[], None]  # a request or a batch was handled (the service's liveness)
    clock: Callable[[], float]
    producer: str  # the producer of the events written (the service's name)
    max_request_bytes: int  # larger requests and manifests are refused
    pod_caps: PodCaps  # the pods a Job, and a request, may make
    submit_tenant: SubmitTenant  # decide and write a tenant registry request
    context: Callable[[], ClusterContext]  # the view now (the tenant listing)
    operator_keys: frozenset[str] = frozenset()  # the operator's nkey public keys (core/authorize.py)
