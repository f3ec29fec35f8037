"""What `lahar status` says about a process (pure): from the supervisor's record of it and a health
probe, never from the PID alone (an exited child its parent has not reaped still has a PID)."""

from __future__ import annotations

from services.cli.stack.layout import RESTARTING, RUNNING, STARTING

UNHEALTHY = "unhealthy"  # the process runs but fails its health check (say, waiting for a server)
DEAD = "dead"  # not running, and nobody is bringing it back


def classify(phase: str, alive: bool, healthy: bool) -> str:
    """running (answers its health check), starting / restarting (the supervisor is bringing it up and
    it does not answer yet), unhealthy (runs, does not answer), dead."""
    if healthy:
        return RUNNING
    if phase in (STARTING, RESTARTING):
        return phase
    return UNHEALTHY if alive else DEAD
