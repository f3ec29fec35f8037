"""`lahar bench sessions`: the CPU a scheduler replica's sessions cost over the states a kept stack's log
passes through. The log (`lahar bench e2e --keep-home`) is folded into the scheduler's view in process,
as the service folds it; every `every` events a snapshot is kept, and then a session is run over each
snapshot, acting for every PodGroup (one replica), with the default configuration. Only the sessions are
timed (the process's CPU seconds, garbage collection tuned as in the services), several passes.

The sessions see the pods that the stack placed later in the log as still pending, so they place more
than the live sessions did; what this measures is what a session costs over a real burst's states
(queues, gangs, nodes filled as the stack filled them), the figure to compare before and after a change.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from services.cli.bench_fold import read_log
from services.scheduler.core.conf import default_conf
from services.scheduler.core.framework.session import Session
from services.scheduler.core.snapshot import ClusterSnapshot
from services.scheduler.state import ViewCore
from shared.bus.bundles import BUNDLE_OF
from shared.bus.subjects import parse_event_subject
from shared.runner.events import record_to_events
from shared.service import tune_gc


def snapshots(home: Path, every: int) -> list[tuple[ClusterSnapshot, float]]:
    """The scheduler view's snapshot every `every` events of the kept log, with the time of that event."""
    records = asyncio.run(read_log(home / "nats"))
    core = ViewCore("scheduler-0")
    state = core.initial()
    kept: list[tuple[ClusterSnapshot, float]] = []
    folded = 0
    for record in records:
        ref = parse_event_subject(record.subject)
        if BUNDLE_OF.get(ref.type, ref.type) not in core.reads:
            continue
        for event in record_to_events(record.seq, ref, record.envelope()):
            state = core.apply(state, event)
            folded += 1
            if folded % every == 0:
                kept.append((state.view.snapshot(), event.time))
    return kept


def session_pass(states: list[tuple[ClusterSnapshot, float]]) -> tuple[float, int]:
    """CPU seconds of one session per snapshot, and the pods they placed."""
    conf = default_conf()
    placed = 0
    started = time.process_time()
    for index, (snapshot, now) in enumerate(states):
        session = Session(snapshot, conf, seed=index, session_id=f"bench-{index}", now=now, owns=_every)
        result = session.run()
        session.owned_statuses()
        placed += len(result.binds)
    return time.process_time() - started, placed


def _every(_key: str) -> bool:
    return True


def run(home: Path, *, every: int, passes: int) -> dict[str, Any]:
    tune_gc()
    states = snapshots(home, every)
    session_pass(states)  # warm: caches the snapshots build on first use are not the sessions' cost
    runs = [session_pass(states) for _ in range(passes)]
    cpu = [round(cpu_s, 3) for cpu_s, _ in runs]
    return {
        "sessions": len(states),
        "placed": runs[0][1],
        "cpu_s": cpu,
        "median_cpu_s": round(statistics.median(cpu), 3),
        "ms_per_session": round(1000 * statistics.median(cpu) / max(len(states), 1), 1),
    }
