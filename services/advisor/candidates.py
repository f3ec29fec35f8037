"""The candidates `lahar advise` tries when none is given: Volcano's default configuration and one
variation of it per choice a Volcano operator makes (docs/advise.md lists them with their reasons).

Each is a volcano-scheduler.conf text, parsed like a user's file, so `lahar advise --print-conf NAME`
prints one that `lahar up --scheduler-conf` takes as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.scheduler.core.conf import DEFAULT_CONF, SchedulerConf, parse_conf


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str
    conf: SchedulerConf
    source: str  # "built-in", or the file it came from
    text: str = ""  # the conf as written, for --print-conf


def _conf(actions: str, first: str, second: str) -> str:
    return f'actions: "{actions}"\ntiers:\n- plugins:\n{first}- plugins:\n{second}'


def _plugins(*names: str, nodeorder: str = "") -> str:
    lines = []
    for name in names:
        lines.append(f"  - name: {name}\n")
        if name == "nodeorder" and nodeorder:
            lines.append(f"    arguments: {{{nodeorder}}}\n")
    return "".join(lines)


_FIRST = _plugins("priority", "gang", "conformance")
_SECOND = _plugins("overcommit", "drf", "predicates", "proportion", "nodeorder")
_STANDARD_ACTIONS = "enqueue, allocate, backfill"

# name -> (what it tries, the conf)
BUILT_IN: Mapping[str, tuple[str, str]] = {
    "default": (
        "Volcano's default: gang, drf job order, proportion queues, spread (nodeorder leastrequested)",
        DEFAULT_CONF.lstrip("\n"),
    ),
    "no-gang": (
        "the default without the gang plugin: a job runs as soon as one pod is placed",
        _conf(_STANDARD_ACTIONS, _plugins("priority", "conformance"), _SECOND),
    ),
    "pod-by-pod": (
        "neither gang nor enqueue: pods are placed one by one, as kube-scheduler does (seed 001)",
        _conf("allocate, backfill", _plugins("priority", "conformance"), _SECOND),
    ),
    "binpack": (
        "the default placing pods on the fullest node that fits (nodeorder mostrequested)",
        _conf(
            _STANDARD_ACTIONS,
            _FIRST,
            _plugins(
                "overcommit",
                "drf",
                "predicates",
                "proportion",
                "nodeorder",
                nodeorder="leastrequested.weight: 0, mostrequested.weight: 1, balancedresource.weight: 0",
            ),
        ),
    ),
    "fifo": (
        "the default without drf: jobs in a queue go by priority, then arrival",
        _conf(_STANDARD_ACTIONS, _FIRST, _plugins("overcommit", "predicates", "proportion", "nodeorder")),
    ),
    "drf-only": (
        "the default without proportion: no queue shares, jobs ordered by their dominant resource share",
        _conf(_STANDARD_ACTIONS, _FIRST, _plugins("overcommit", "drf", "predicates", "nodeorder")),
    ),
    "preempt-reclaim": (
        "the default with preempt and reclaim: higher priority jobs and starved queues evict",
        _conf("enqueue, allocate, preempt, reclaim, backfill", _FIRST, _SECOND),
    ),
}


def built_in(name: str) -> Candidate:
    """One built-in candidate; KeyError for a name that is not one."""
    _, text = BUILT_IN[name]
    return Candidate(name, parse_conf(text, f"built-in candidate {name}"), "built-in", text)


def built_in_candidates() -> list[Candidate]:
    return [built_in(name) for name in BUILT_IN]
