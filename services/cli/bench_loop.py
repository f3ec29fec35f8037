"""`lahar bench fold --loop`: the CPU a core spends on what its service loop does with each event, not the
fold alone: fold it and name the keys it touched, reconcile those keys every `batch` events (the outputs
decided, not published), and for a core with a read model render its dirty objects every `flush` events
and encode them as the read model stores them (without etcd). Replayed in process from a kept stack's log,
as `lahar bench fold` does; times are the process's CPU seconds.

Live, a batch is whatever arrived while the previous one was handled and the read model is written every
0.2 s; the defaults (30 events, 600 events) are about what a 1,000-job burst gives the job-controller.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

import msgspec

from shared.bus.records import StreamRecord
from shared.bus.subjects import EventSubject
from shared.runner.events import record_to_events

_encode = msgspec.msgpack.Encoder().encode


def loop_pass(
    core: Any, log: Sequence[tuple[StreamRecord, EventSubject]], *, batch: int, flush: int
) -> dict[str, float]:
    """One pass from the initial state: CPU seconds folding, reconciling and rendering, and the counts."""
    clock = time.process_time
    state = core.initial()
    touched: set[Any] = set()
    projecting = hasattr(core, "render") and hasattr(core, "dirty")
    fold_s = reconcile_s = render_s = 0.0
    outputs = rendered = 0
    now = 0.0
    for i, (record, ref) in enumerate(log, 1):
        started = clock()
        for event in record_to_events(record.seq, ref, record.envelope()):
            state = core.apply(state, event)
            touched.update(core.touched(state, event))
            now = event.time
        folded = clock()
        fold_s += folded - started
        if i % batch == 0 or i == len(log):
            outputs += len(core.reconcile(state, now, touched))
            touched = set()
            reconciled = clock()
            reconcile_s += reconciled - folded
            folded = reconciled
        if projecting and (i % flush == 0 or i == len(log)):
            dirty = core.dirty(state)
            for key, seq in dirty.items():
                _encode({"seq": seq, "object": core.render(state, key)})
            rendered += len(dirty)
            dirty.clear()
            render_s += clock() - folded
    return {
        "fold_s": fold_s,
        "reconcile_s": reconcile_s,
        "render_s": render_s,
        "outputs": outputs,
        "rendered": rendered,
    }


def loop_figures(
    make: Any, log: Sequence[tuple[StreamRecord, EventSubject]], *, passes: int, batch: int, flush: int
) -> dict[str, Any]:
    """The median pass (by its total CPU time) of `passes`, each on a new core."""
    runs = [loop_pass(make(), log, batch=batch, flush=flush) for _ in range(passes)]
    total = [r["fold_s"] + r["reconcile_s"] + r["render_s"] for r in runs]
    median = runs[total.index(statistics.median_low(total))]
    cpu_s = median["fold_s"] + median["reconcile_s"] + median["render_s"]
    return {
        "batch": batch,
        "flush": flush,
        "cpu_s": round(cpu_s, 3),
        "fold_s": round(median["fold_s"], 3),
        "reconcile_s": round(median["reconcile_s"], 3),
        "render_s": round(median["render_s"], 3),
        "outputs": int(median["outputs"]),
        "rendered": int(median["rendered"]),
        "us_per_event": round(1e6 * cpu_s / max(len(log), 1), 1),
    }
