"""What is handed to admission's decision (a Submission) and what comes back (Submitted): the narrow
interface the API server and the intake consumer share with the service."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from opentelemetry.context import Context

from services.admission.context_core import Plan
from services.admission.core.context import ClusterContext
from services.admission.core.decide import Request


@dataclasses.dataclass(frozen=True, slots=True)
class Submission:
    """Requests to decide (built from the context they are decided in), under a request id that makes
    their events' ids, with the trace their events join."""

    build: Callable[[ClusterContext], Sequence[Request]]
    request_id: str
    trace: Context | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Submitted:
    plan: Plan
    seq: int  # the log position the answer reflects (the last event written, when any)
