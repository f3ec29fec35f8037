"""The job-controller's publisher: its own events go to the log as every service's do; the events it asks
admission for (the JobSubmitted and JobDeleted of a CronJob's or JobFlow's jobs: core/workloads/
requests.py) go to admission's API as create and delete requests, which admission decides and writes,
as Kubernetes' controllers create and delete through the API server.

A request is sent with the output's causation_id as its Lahar-Request-Id, from which admission derives
the id of the event it writes: the output's own id. So a request stays in flight, like an event this
service published, until that event is in the log (or `inflight_timeout_s` passes and the loop decides
again); sent again, it writes nothing twice. A refused request (the job exists already, its queue was
closed, ...) is logged and not sent again for a while (`REFUSED_RETRY_S`, doubling to `MAX_RETRY_S` per
request): the core, which sees the log, stops asking if the refusal was right (the job exists) and keeps
asking otherwise, each time after the wait. A request admission could not decide (unreachable, busy) is
counted as not stored, so the loop reconciles again at its next tick.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import nats.errors
import structlog

from contracts import payloads
from contracts.events import ADMISSION, writer_of
from shared.runner.publisher import Publisher
from shared.runner_types import Output

log = structlog.get_logger(__name__)

REQUEST_TIMEOUT_S = 10.0
REFUSED_RETRY_S = 5.0
MAX_RETRY_S = 300.0
_UNAVAILABLE = ("unavailable", "conflict", "error")


def asks_admission(output: Output) -> bool:
    """An output that is admission's event to write: this service asks for it."""
    return writer_of(output.type) == ADMISSION


def request_body(output: Output) -> tuple[str, bytes]:
    """The API verb and JSON body that ask admission for the output's event."""
    if output.type == "JobSubmitted":
        assert isinstance(output.payload, payloads.JobSubmitted)
        return "create", json.dumps({"object": output.payload.object}).encode()
    if output.type == "JobDeleted":
        body = {"kind": "Job", "namespace": output.namespace or "", "name": output.name}
        return "delete", json.dumps(body).encode()
    raise ValueError(f"no admission request asks for a {output.type}")


class RequestingPublisher(Publisher):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._refusals: dict[str, int] = {}  # output id -> requests refused in a row

    async def publish(self, outputs: Sequence[Output], may_publish: Callable[[], bool]) -> int:
        requests = [o for o in outputs if asks_admission(o)]
        events = [o for o in outputs if not asks_admission(o)]
        failed = await super().publish(events, may_publish) if events else 0
        now = time.monotonic()
        for output in requests:
            if not may_publish():
                break
            if self._inflight.get(output.id, 0.0) > now:
                continue
            failed += await self._ask(output)
        return failed

    def seen(self, event_id: str, traceparent: str | None) -> None:
        super().seen(event_id, traceparent)
        self._refusals.pop(event_id, None)

    async def _ask(self, output: Output) -> int:
        """Send one request; 1 if admission could not decide it (to try again at the next tick)."""
        verb, body = request_body(output)
        headers = {"Lahar-Request-Id": output.causation_id or output.id}
        parent = self._parent(output)
        if parent:
            headers["traceparent"] = parent  # admission's span joins the trace of what caused this
        self._inflight[output.id] = time.monotonic() + self.inflight_timeout_s
        try:
            reply = await self.bus.nc.request(
                f"lahar.api.{verb}", body, timeout=REQUEST_TIMEOUT_S, headers=headers
            )
            answer = json.loads(reply.data)
        except (nats.errors.Error, TimeoutError, ValueError) as exc:
            log.warning("admission did not answer a request; asking again later", verb=verb, error=repr(exc))
            return self._unsettled(output, "unanswered")
        if answer.get("accepted"):
            self.metrics.published(output.type, "requested")
            return 0
        if answer.get("code") in _UNAVAILABLE:
            log.warning("admission could not decide a request now", verb=verb, errors=answer.get("errors"))
            return self._unsettled(output, "unavailable")
        refused = self._refusals[output.id] = self._refusals.get(output.id, 0) + 1
        wait = min(MAX_RETRY_S, REFUSED_RETRY_S * 2 ** (refused - 1))
        self._inflight[output.id] = time.monotonic() + wait
        self.metrics.published(output.type, "refused")
        log.warning(
            "admission refused a request of the job-controller",
            verb=verb,
            job=output.correlation_id,
            code=answer.get("code"),
            errors=[f"{e.get('path')}: {e.get('message')}" for e in answer.get("errors", ())],
            retry_after_s=wait,
        )
        return 0

    def _unsettled(self, output: Output, result: str) -> int:
        self._inflight.pop(output.id, None)
        self.metrics.published(output.type, result)
        return 1
