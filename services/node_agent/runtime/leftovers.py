"""Stopping the pods an agent left running when the whole stack goes down (`lahar down`).

A node agent that exits leaves its process runtime's pods running on purpose: each container runs in a
session of its own, so that a restarted agent adopts its runs (process.py). When the stack itself stops
nothing will adopt them, and they would live on, orphaned to init. The supervisor then ends every run the
agent's data directory records as unfinished: SIGTERM to each container's process group, SIGKILL to what
is still alive after the grace period. A recorded pid is signalled only while its start time matches the
record, so a pid the system has since given to another process is never touched.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from services.node_agent.runtime import workdir
from services.node_agent.runtime.process import alive, signal_group

_POLL_S = 0.05


def unfinished_groups(data_dir: Path) -> list[tuple[int, int]]:
    """(process group id, its leader's start ticks) of every live container of an unfinished run."""
    groups = []
    for _, _, record in workdir.records(data_dir):
        if record.outcome is None:
            groups += [(pid, ticks) for pid, ticks in record.procs.values() if alive(pid, ticks)]
    return groups


def stop_leftover_pods(data_dir: Path, grace_s: float = 10.0) -> int:
    """End every container of the runs left unfinished under data_dir; how many groups were signalled."""
    groups = unfinished_groups(data_dir) if data_dir.is_dir() else []
    for pgid, _ in groups:
        signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(alive(*g) for g in groups) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    for pgid, _ in [g for g in groups if alive(*g)]:
        signal_group(pgid, signal.SIGKILL)
    return len(groups)
