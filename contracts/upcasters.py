"""Pure upcasters: an event payload written at an older schema version, rewritten as the current version
of its type says it is.

An event type's version (contracts/events.py) changes when its payload changes in a way defaults cannot
absorb; the change comes with an upcaster from the version before. The log is never rewritten: every
consumer upcasts old events as it reads them, so a stack can run over a log written by older lahars.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


def _job_status_v1_to_v2(payload: dict[str, Any]) -> dict[str, Any]:
    """Version 1 of JobStatusChanged carried the phase and the pod counts, later also the lifecycle
    (retries, restarts, handled actions) as optional fields; version 2 always carries all of it. A job's
    first lifecycle is the empty one: no retries, version 0, nothing to restart or handled."""
    return {
        "task_status_count": {},
        "min_available": 0,
        "retry_count": 0,
        "version": 0,
        "restart": [],
        "handled": [],
        "last_transition_time": None,
        "conditions": [],
        **payload,
    }


def _job_secret_v1_to_v2(payload: dict[str, Any]) -> dict[str, Any]:
    """Version 1 of JobSecretCreated carried the secret's data in plain text; version 2 seals it to the
    node agents and keeps `data` for an open stack. An old event stays readable as an unsealed one."""
    return {"data": {}, "sealed": None, **payload}


# (event type, the version an upcaster reads) -> the payload at the next version
UPCASTERS: Mapping[tuple[str, int], Upcaster] = {
    ("JobStatusChanged", 1): _job_status_v1_to_v2,
    ("JobSecretCreated", 1): _job_secret_v1_to_v2,
}


def upcast(event_type: str, version: int, current: int, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The payload at version `current`; KeyError if a step is missing (a catalogue bug, see the test)."""
    plain = dict(payload)
    for step in range(version, current):
        plain = UPCASTERS[(event_type, step)](plain)
    return plain
