"""What the queue-controller should write: a QueueStateChanged when a queue's state differs from the one
last published (once for a new queue, the implicit `default` queue included). A queue's PodGroup counts
are no event of their own: they follow from the PodGroups' events, and the read model shows them.

Output ids are uuid5 over (service, event type, queue, incarnation, publication generation, content), so
a re-emission before the output was folded back is deduplicated, and a queue deleted and created again
publishes afresh.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from contracts import payloads
from contracts.events import QUEUE_CONTROLLER
from contracts.typed_events import encode_payload
from services.queue_controller.core.state import Cause, QueueRecord, State
from shared.runner_types import Output, deterministic_id


def reconcile(state: State, names: Iterable[str] | None = None) -> list[Output]:
    """What to write about the queues `names` (default: every queue)."""
    outputs: list[Output] = []
    queues = state.queues
    records = queues.values() if names is None else (r for n in names if (r := queues.get(n)) is not None)
    for record in records:
        if record.state != record.published_state:
            payload = payloads.QueueStateChanged(state=record.state)
            outputs.append(
                _output(record, "QueueStateChanged", payload, record.state_generation, record.state_cause)
            )
    return outputs


def _output(
    record: QueueRecord, event_type: str, payload: payloads.Payload, generation: int, cause: Cause
) -> Output:
    # the plain payload's JSON, as ids were first derived: the same content must keep the same id
    content = json.dumps(encode_payload(payload), sort_keys=True, separators=(",", ":"))
    return Output(
        type=event_type,
        kind="queue",
        namespace=None,
        name=record.name,
        payload=payload,
        id=deterministic_id(
            QUEUE_CONTROLLER, event_type, record.name, record.incarnation, generation, content
        ),
        # queue events belong to no job: they are correlated to the queue (its name has no "/", a job key has)
        correlation_id=record.name,
        causation_id=cause[1] or None,
    )
