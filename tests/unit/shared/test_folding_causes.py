"""The loop notes which event caused the outputs to come (the event's trace, by its id) only for a core that
writes events: a scheduler replica writes none, and would keep a trace per event it folds for nothing."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from support.builders import pod

from contracts.codec import encode_object
from services.scheduler.state import ViewCore
from shared.bus.envelope import Envelope
from shared.bus.records import StreamRecord
from shared.bus.subjects import event_subject
from shared.runner.folding import RecordFolding
from shared.runner.metrics import RunnerMetrics
from shared.runner.publisher import Publisher
from shared.telemetry.metrics import Registry

TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class _Folder(RecordFolding[Any]):
    """The folding mixin with the attributes EventSourcedService gives it (nothing here publishes)."""

    def __init__(self, core: Any) -> None:
        self.name = core.name
        self.core = core
        self.state = core.initial()
        self.seq = 0
        self.tracer = trace.get_tracer("test")
        self.metrics = RunnerMetrics(Registry(), core.name)
        self.publisher = Publisher(
            None,  # type: ignore[arg-type]  # never sends: only `seen` is called
            core.name,
            self.tracer,
            self.metrics,
            inflight_timeout_s=30.0,
            clock=lambda: 0.0,
        )
        self._reads = core.reads
        self._causes_outputs = getattr(core, "writes_events", True)
        self._dirty = set()
        self._full = False
        self.clock = lambda: 0.0


class _WritingView(ViewCore):
    """The same view, as a core that writes events would be."""

    writes_events = True


def _records(count: int) -> list[StreamRecord]:
    records = []
    for seq in range(1, count + 1):
        p = pod(f"p{seq}", "g")
        env = Envelope.create(
            "PodCreated",
            time=1.0,
            producer="job-controller",
            correlation_id="default/g",
            payload={"object": encode_object(p)},
            traceparent=TRACE,
        )
        subject = event_subject("pod", "default", p.meta.name, "PodCreated", "job-controller")
        records.append(StreamRecord("LAHAR_EVENTS", seq, subject, env.encode()))
    return records


def test_a_replica_notes_no_causes() -> None:
    folder = _Folder(ViewCore("scheduler-0"))
    for record in _records(20):
        folder._apply(record, live=True, track=False)
    assert folder.seq == 20 and len(folder.state.view.logged_pods) == 20
    assert len(folder.publisher._traces) == 0


def test_a_writing_core_notes_the_cause_of_each_event() -> None:
    folder = _Folder(_WritingView("scheduler-0"))
    for record in _records(20):
        folder._apply(record, live=True, track=False)
    assert len(folder.publisher._traces) == 20
