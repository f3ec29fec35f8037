"""Admission's own writes are folded back without decoding their objects again (own_writes.py): the
object it decided is kept by event id from the publish to the fold, and used only when the log holds
exactly the payload it published; anything else is decoded from the log as before."""

from __future__ import annotations

import sys
from typing import Any

import msgspec
from admission_manifests import job_doc, parse, queue_doc

from contracts.codec import decode_object, encode_object
from contracts.payloads import Payload
from services.admission import own_writes
from services.admission.context_core import STORED_OBJECT_EVENTS, AdmissionViewCore, View, Write, plan
from services.admission.core.decide import APPLY, Request
from shared.runner_types import Event

CORE = AdmissionViewCore()


def decided(view: View, *docs: Any) -> tuple[Write, ...]:
    result = plan([Request(APPLY, parse(doc)) for doc in docs], view, "request-1", 1.0)
    assert result.accepted, result.errors
    return result.writes


def from_log(seq: int, write: Write, event_id: str, payload: Payload | None = None) -> Event:
    """The event as the view gets it back: its payload through MessagePack, as the bus carries it."""
    plain = msgspec.msgpack.decode(msgspec.msgpack.encode(payload or write.emit.payload))
    emit = write.emit
    return Event(
        seq,
        emit.type,
        write.kind,
        write.namespace,
        write.name,
        plain,
        event_id,
        1.0,
        "c",
        producer="admission",
    )


def codec_calls(work: Any) -> int:
    """How many calls work() makes into contracts' codec (decoding an object)."""
    count = 0

    def profile(frame: Any, event: str, _arg: Any) -> None:
        nonlocal count
        if event == "call" and "/contracts/codec" in frame.f_code.co_filename:
            count += 1

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def test_a_decided_object_is_folded_back_without_decoding_it() -> None:
    view = CORE.initial()
    writes = decided(view, queue_doc("research"), job_doc(queue="research"))
    for index, write in enumerate(writes):
        own_writes.remember(view.awaiting_fold, f"id-{index}", write.emit, STORED_OBJECT_EVENTS)
    events = [from_log(index + 1, write, f"id-{index}") for index, write in enumerate(writes)]

    def fold_all() -> None:
        for event in events:
            CORE.apply(view, event)

    assert codec_calls(fold_all) == 0
    assert view.queues["research"] is writes[0].emit.object
    assert view.jobs["default/train"] is writes[1].emit.object
    assert not view.awaiting_fold


def test_what_the_log_holds_wins_over_what_was_decided() -> None:
    """Another instance's event under the same id (the stream kept its copy, not this one's) is decoded
    from the log; so is every event nothing was kept for (a replay, a write of another instance)."""
    view = CORE.initial()
    (write,) = decided(view, job_doc())
    own_writes.remember(view.awaiting_fold, "id-0", write.emit, STORED_OBJECT_EVENTS)
    theirs = parse(job_doc(queue="other"))
    logged = type(write.emit.payload)(object=encode_object(theirs))  # type: ignore[call-arg]
    CORE.apply(view, from_log(1, write, "id-0", logged))
    assert view.jobs["default/train"] == decode_object(logged.object)  # type: ignore[attr-defined]
    assert view.jobs["default/train"].queue == "other" and not view.awaiting_fold

    replayed = CORE.initial()
    CORE.apply(replayed, from_log(1, write, "id-0"))
    assert replayed.jobs["default/train"] == write.emit.object


def test_the_objects_admission_decides_come_back_from_the_log_equal() -> None:
    """Why the kept object may stand for the logged one: the codec round-trips what admission decides."""
    view = CORE.initial()
    for write in decided(view, queue_doc("research", weight=3), job_doc(queue="research")):
        plain = msgspec.msgpack.decode(msgspec.msgpack.encode(write.emit.payload))
        assert decode_object(plain["object"]) == write.emit.object


def test_only_object_storing_events_are_kept() -> None:
    view = CORE.initial()
    (write,) = decided(view, job_doc())
    command = write.emit._replace(type="CommandIssued")
    own_writes.remember(view.awaiting_fold, "id-0", command, STORED_OBJECT_EVENTS)
    assert not view.awaiting_fold
    own_writes.remember(view.awaiting_fold, "id-0", write.emit, STORED_OBJECT_EVENTS)
    own_writes.forget(view.awaiting_fold)
    assert not view.awaiting_fold
