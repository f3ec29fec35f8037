"""What each pod costs the whole system, from the services' own counters (their /metrics): messages
decoded by each service, events it wrote and the messages they went out in (a bundle is one),
read-model objects written. Read before and after a round; the
difference divided by the round's pods."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Mapping

# the counters summed, by what they count
_COUNTERS = {
    "decoded": "lahar_runner_events_applied_total",
    "written": "lahar_runner_outputs_published_total",
    "messages_written": "lahar_runner_messages_published_total",
    "read_model_writes": "lahar_read_model_writes_total",
}
# counted only for what was stored (a duplicate or a failed send is not a round's work)
_STORED_ONLY = ("written", "messages_written", "read_model_writes")
# a scheduler replica's sessions: how many, their CPU, and how many due ones it did not need to open
# (reported per round, not per pod)
_SESSION_COUNTERS = {
    "sessions": "lahar_scheduler_sessions_total",
    "session_cpu_s": "lahar_scheduler_session_cpu_seconds_total",
    "sessions_skipped": "lahar_scheduler_sessions_skipped_total",
}
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})? (?P<value>\S+)$")


def scrape(port: int) -> dict[str, float]:
    """The service's counters above, each summed over its series (only stored outputs count as written,
    only live events as decoded: replay is not a round's work)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2.0) as response:
            text = response.read().decode()
    except OSError:
        return {}
    totals = dict.fromkeys(_COUNTERS, 0.0)
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        for what, name in _SESSION_COUNTERS.items():
            if match["name"] == name:
                totals[what] = totals.get(what, 0.0) + float(match["value"])
        labels = match["labels"] or ""
        for what, name in _COUNTERS.items():
            if match["name"] != name:
                continue
            if what == "decoded" and 'phase="live"' not in labels:
                continue
            if (
                what in ("written", "messages_written", "read_model_writes")
                and 'result="stored"' not in labels
            ):
                continue
            totals[what] += float(match["value"])
    return totals


def per_pod(
    before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]], pods: int
) -> dict[str, dict[str, float]]:
    """Per service and counter, the growth over the round divided by its pods."""
    costs: dict[str, dict[str, float]] = {}
    for service, totals in after.items():
        start = before.get(service, {})
        grown = {
            what: round((value - start.get(what, 0.0)) / max(pods, 1), 2)
            for what, value in totals.items()
            if what in _COUNTERS
        }
        if any(grown.values()):
            costs[service] = grown
    return costs


def sessions(
    before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]]
) -> dict[str, dict[str, float]]:
    """Per scheduler replica, the sessions it ran over the round, their CPU seconds, and the sessions due
    that it skipped (nothing it owns could change; absent from replicas that do not count them)."""
    grown: dict[str, dict[str, float]] = {}
    for service, totals in after.items():
        if "sessions" not in totals:
            continue
        start = before.get(service, {})
        grown[service] = {
            "sessions": round(totals["sessions"] - start.get("sessions", 0.0)),
            "session_cpu_s": round(totals["session_cpu_s"] - start.get("session_cpu_s", 0.0), 2),
        }
        if "sessions_skipped" in totals:
            skipped = totals["sessions_skipped"] - start.get("sessions_skipped", 0.0)
            grown[service]["sessions_skipped"] = round(skipped)
    return grown
