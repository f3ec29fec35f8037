"""lahar's events as the rows of kubectl's (and vcctl's) Events table: Type (Normal or Warning), Reason,
Age, From (the service that wrote the event) and Message.

Where Kubernetes has a reason every user knows for the same fact, the row uses it (a pod bound is
"Scheduled", a gang that cannot be placed "Unschedulable", a pod whose node was lost "NodeLost"); a gang
the scheduler says why it waits for shows that reason instead ("InsufficientClusterCapacity",
"InsufficientQueueQuota", ...: contracts/pending.py); other events keep lahar's event type as their
reason. A row about another object than the one described (a
job's pods, in the job's table) names it first in the message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contracts.pending import PENDING_REASONS
from services.cli import output
from shared.client_reads import HistoryEntry

NORMAL, WARNING = "Normal", "Warning"
WARNINGS = frozenset(
    {"ManifestRejected", "PodFailed", "PodEvicting", "PodLost", "PlanRejected", "NodeNotReady"}
)
# lahar event type -> the reason Kubernetes gives the same fact
KUBERNETES_REASONS: Mapping[str, str] = {
    "PodBound": "Scheduled",
    "PodRunning": "Started",
    "PodSucceeded": "Completed",
    "PodFailed": "Failed",
    "PodLost": "NodeLost",
    "PodEvicting": "Evicting",
    "PodNominated": "Nominated",
    "PodTerminated": "Killing",
    "PodDeletionRequested": "Killing",
}
MOST_ROWS = 50  # a big job's history runs to thousands of events: its table shows the newest


@dataclass(frozen=True, slots=True)
class EventRow:
    type: str
    reason: str
    age: str
    source: str
    message: str

    def cells(self) -> tuple[str, str, str, str, str]:
        return (self.type, self.reason, self.age, self.source, self.message)


def _on(payload: Mapping[str, Any]) -> str:
    node = payload.get("node")
    return f" on {node}" if node else ""


def _failed(p: Mapping[str, Any]) -> str:
    code = p.get("exit_code")
    detail = f"exit code {code}" if code is not None else str(p.get("reason") or "failed")
    return f"failed{_on(p)}: {detail}" + (f": {p['message']}" if p.get("message") else "")


def _rejected(p: Mapping[str, Any]) -> str:
    errors = p.get("errors") or []
    first = errors[0] if errors and isinstance(errors[0], Mapping) else {}
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    where = f"{first.get('path')}: " if first.get("path") else ""
    return f"manifest from {p.get('source', '?')} refused: {where}{first.get('message', '')}{more}"


def _job_status(p: Mapping[str, Any]) -> str:
    retries = p.get("retry_count") or 0
    return f"job {p.get('phase', '?')}" + (f" (retry {retries})" if retries else "")


_MESSAGES: Mapping[str, Callable[[Mapping[str, Any]], str]] = {
    "JobSubmitted": lambda p: "job accepted",
    "JobUpdated": lambda p: "job spec changed",
    "JobDeleted": lambda p: "job deleted; its pods and PodGroup follow",
    "JobSecretCreated": lambda p: f"secret {p.get('name', '')} created",
    "PodSubmitted": lambda p: "pod accepted" + (" with a PodGroup of its own" if p.get("podgroup") else ""),
    "PodWithdrawn": lambda p: "pod deleted",
    "PodGroupSubmitted": lambda p: "podgroup accepted",
    "PodGroupWithdrawn": lambda p: "podgroup deleted",
    "QueueApplied": lambda p: "queue created or changed",
    "QueueDeleted": lambda p: "queue deleted",
    "PriorityClassApplied": lambda p: "priority class applied",
    "PriorityClassDeleted": lambda p: "priority class deleted",
    "HyperNodeApplied": lambda p: "hypernode applied",
    "HyperNodeDeleted": lambda p: "hypernode deleted",
    "CommandIssued": lambda p: (
        f"{p.get('action', '?')} issued for {p.get('target_kind', '')} {p.get('target', '')}"
    ),
    "ManifestRejected": _rejected,
    "CronJobApplied": lambda p: "cronjob created or changed",
    "CronJobDeleted": lambda p: "cronjob deleted; its jobs follow",
    "JobTemplateApplied": lambda p: "jobtemplate created or changed",
    "JobTemplateDeleted": lambda p: "jobtemplate deleted",
    "JobFlowApplied": lambda p: "jobflow created or changed",
    "JobFlowDeleted": lambda p: "jobflow deleted",
    "TenantApplied": lambda p: f"tenant {p.get('name', '')} registered",
    "TenantDeleted": lambda p: "tenant removed",
    "PodGroupCreated": lambda p: "podgroup created",
    "PodGroupDeleted": lambda p: "podgroup removed",
    "PodCreated": lambda p: "pod created",
    "PodDeletionRequested": lambda p: f"stopping{_on(p)}: {p.get('reason', '')}",
    "JobStatusChanged": _job_status,
    "JobCleanedUp": lambda p: "the finished job's TTL ran out; deleted",
    "QueueStateChanged": lambda p: f"queue {p.get('state', '?')}",
    "PodEvicting": lambda p: f"evicting from {p.get('node', '?')}: {p.get('reason', '')}",
    "PodNominated": lambda p: f"room reserved on {p.get('node', '?')}: {p.get('reason', '')}",
    "PlanRejected": lambda p: f"a placement was refused: {p.get('reason', '')}",
    "NodeNotReady": lambda p: (
        f"heartbeats stopped (last {output.utc(float(p.get('last_heartbeat') or 0))} UTC)"
    ),
    "NodeReady": lambda p: "heartbeats resumed",
    "PodLost": lambda p: f"node {p.get('node', '?')} lost: {p.get('reason', '')}",
    "NodeRegistered": lambda p: "node registered",
    "PodRunning": lambda p: f"started{_on(p)}",
    "PodSucceeded": lambda p: f"exited 0{_on(p)}",
    "PodFailed": _failed,
    "PodTerminated": lambda p: f"stopped{_on(p)}: {p.get('reason', 'Terminated')}",
}


# the conditions preempt and reclaim write (services/scheduler/core/actions/explain.py); a False one that
# says nothing was evicted is a warning
EVICTION_CONDITIONS = frozenset({"Preempting", "Reclaiming"})
NOTHING_EVICTED = frozenset({"WouldNotMakeRoom", "ReservationReleased"})


def eviction_condition(payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The Preempting or Reclaiming condition of a PodGroupStatusChanged, if it is the news: no other
    condition changed later (the gang plugin restamps Scheduled or Unschedulable every session, so an
    older decision is not repeated by later changes)."""
    conditions = [c for c in payload.get("conditions") or () if isinstance(c, Mapping)]
    if not conditions:
        return None
    latest = max(float(c.get("last_transition_time") or 0) for c in conditions)
    return next(
        (
            c
            for c in conditions
            if c.get("type") in EVICTION_CONDITIONS and float(c.get("last_transition_time") or 0) == latest
        ),
        None,
    )


def unschedulable(payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The Unschedulable condition (status True) a PodGroupStatusChanged carries, if any."""
    for condition in payload.get("conditions") or ():
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "Unschedulable"
            and condition.get("status", "True") == "True"
        ):
            return condition
    return None


def event_row(entry: HistoryEntry, now: float, *, about: str = "") -> EventRow:
    """One event as a row of the Events table; `about` is the described object ("pod/x"), which the
    message does not repeat."""
    payload = entry.payload
    kind, reason = (
        WARNING if entry.type in WARNINGS else NORMAL,
        KUBERNETES_REASONS.get(entry.type, entry.type),
    )
    if entry.type == "PodGroupStatusChanged":
        condition = unschedulable(payload)
        evicting = eviction_condition(payload)
        if evicting is not None:
            kind = WARNING if evicting.get("reason") in NOTHING_EVICTED else NORMAL
            reason = str(evicting.get("type"))
            message = str(evicting.get("message") or evicting.get("reason") or "")
        elif condition is not None:
            # the scheduler's pending reason where it gives one (InsufficientClusterCapacity, ...)
            given = str(condition.get("reason") or "")
            kind, reason = WARNING, given if given in PENDING_REASONS else "Unschedulable"
            message = str(condition.get("message") or condition.get("reason") or "unschedulable")
        else:
            message = f"podgroup {payload.get('phase', '?')}"
    elif entry.type == "PodBound":
        message = f"Successfully assigned {entry.namespace}/{entry.name} to {payload.get('node', '?')}"
    else:
        describe = _MESSAGES.get(entry.type)
        message = describe(payload) if describe is not None else output.summary(payload)
    if about and entry.object != about:
        message = f"{entry.object}: {message}"
    return EventRow(kind, reason, output.age(entry.time, now), entry.producer, message)


def events_section(entries: Sequence[HistoryEntry], now: float, *, about: str = "", command: str = "") -> str:
    """kubectl's Events section: the newest MOST_ROWS events, oldest first, or `Events:  <none>`."""
    if not entries:
        return "Events:  <none>"
    shown = entries[-MOST_ROWS:]
    rows = [event_row(entry, now, about=about).cells() for entry in shown]
    headers = ("Type", "Reason", "Age", "From", "Message")
    dashes = tuple("-" * len(h) for h in headers)
    lines = ["Events:"]
    if len(entries) > len(shown):
        earlier = f"  ({len(entries) - len(shown)} earlier events not shown"
        lines.append(earlier + (f"; {command} shows them all)" if command else ")"))
    lines += ["  " + line for line in output.table(headers, [dashes, *rows]).splitlines()]
    return "\n".join(lines)
