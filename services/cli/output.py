"""How the cluster commands print: aligned tables for people, JSON or YAML for scripts; admission's
answers (`report`) and watches (`follow`); the exit codes scripts can rely on.

`-o json` / `-o yaml` print the Kubernetes shape (contracts.kube_shape: apiVersion, kind, metadata,
spec, status with the API's own field names, RFC 3339 times, quantity strings), which `lahar apply` reads
back unchanged; a listing is {"apiVersion": "v1", "kind": "List", "items": [...]}. Tables show ages or UTC
times.
"""

from __future__ import annotations

import datetime
import json
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, TextIO

import yaml

from contracts.kube_shape import kube_list, kube_object
from contracts.objects import ApiObject
from contracts.resources import format_quantity
from shared.client_reads import Answer

FORMATS = ("table", "wide", "json", "yaml")
# scripts can trust these (every cluster command documents them in its help)
EXIT_OK = 0
EXIT_REFUSED = 1  # the request was refused, the object was not found, or (wait) another final phase
EXIT_TIMEOUT = 2  # wait timed out
EXIT_USAGE = 2  # a usage error (argparse's own status for one)
EXIT_UNREACHABLE = 3  # NATS, etcd, admission or a node agent could not be reached
EXIT_CODES_HELP = (
    "exit status: 0 success; 1 refused, not found, or (wait) another final phase; "
    "2 usage error or (wait) timed out; 3 the cluster could not be reached"
)


def document(obj: ApiObject) -> dict[str, Any]:
    return kube_object(obj)


def listing(objects: Iterable[ApiObject]) -> dict[str, Any]:
    return kube_list(objects)


def dump(data: Any, fmt: str, out: TextIO = sys.stdout) -> None:
    """data as JSON (one document, indented) or YAML."""
    if fmt == "yaml":
        out.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
    else:
        out.write(json.dumps(data, indent=2) + "\n")


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Columns left-aligned, three spaces apart (kubectl's layout); empty cells print as <none>."""
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join(
        "   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "<none>"
    return str(value)


def age(created: float, now: float) -> str:
    """kubectl's short age: 42s, 5m, 3h, 12d (<unknown> for a missing timestamp)."""
    if created <= 0:
        return "<unknown>"
    seconds = max(0, int(now - created))
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= 2 * size or (unit == "m" and seconds >= size):
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def utc(seconds: float, *, with_ms: bool = False) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    text = moment.strftime("%Y-%m-%d %H:%M:%S.%f")
    return text[:-3] if with_ms else text[:-7]


def date(seconds: float) -> str:
    """vcctl's Creation column: the day, UTC."""
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%d") if seconds > 0 else ""


def quantities(resources: Mapping[str, int] | None) -> str:
    if not resources:
        return ""
    return ",".join(f"{name}={format_quantity(name, milli)}" for name, milli in sorted(resources.items()))


def summary(payload: Mapping[str, Any], width: int = 70) -> str:
    """The small facts of an event payload, key=value (objects, plans and lists left out)."""
    parts = []
    for key, value in payload.items():
        if isinstance(value, str | int | float | bool) and key not in ("plan", "source"):
            parts.append(f"{key}={value}")
        elif key == "errors" and isinstance(value, list):
            parts.append(f"errors={len(value)}")
    text = " ".join(parts)
    return text if len(text) <= width else text[: width - 3] + "..."


# --- `lahar get` columns per kind: (columns, extra columns with -o wide) ------------------------------

COLUMNS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "job": (
        ("NAME", "STATUS", "MINAVAILABLE", "RUNNINGS", "AGE"),
        ("QUEUE", "PENDING", "SUCCEEDED", "FAILED"),
    ),
    "podgroup": (("NAME", "STATUS", "MINMEMBER", "RUNNINGS", "AGE"), ("QUEUE",)),
    "pod": (("NAME", "STATUS", "NODE", "AGE"), ("REASON", "EXIT")),
    "queue": (("NAME", "WEIGHT", "STATE", "PARENT", "INQUEUE", "PENDING", "RUNNING"), ("CAPABILITY",)),
    "node": (("NAME", "STATUS", "CPU", "MEMORY", "PODS", "AGE"), ("TAINTS",)),
    "priorityclass": (("NAME", "VALUE", "GLOBAL-DEFAULT", "AGE"), ("PREEMPTIONPOLICY",)),
    "hypernode": (("NAME", "TIER", "TIERNAME", "MEMBERS", "AGE"), ()),
    # kubectl's columns for a CronJob; Volcano's (vcctl, the CRD's) for a JobFlow and a JobTemplate
    "cronjob": (
        ("NAME", "SCHEDULE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"),
        ("TIMEZONE", "CONCURRENCY", "LAST SUCCESSFUL"),
    ),
    "jobflow": (("NAME", "STATUS", "AGE"), ("JOBS", "COMPLETED", "FAILED", "MESSAGE")),
    "jobtemplate": (("NAME", "AGE"), ("JOBS",)),
}


def headers(kind: str, *, wide: bool, namespaced: bool) -> tuple[str, ...]:
    base, extra = COLUMNS[kind]
    return (("NAMESPACE",) if namespaced else ()) + base + (extra if wide else ())


def row(obj: Any, now: float) -> dict[str, Any]:
    """Every column value of an object, by column name."""
    values: dict[str, Any] = {
        "NAMESPACE": obj.meta.namespace,
        "NAME": obj.meta.name,
        "AGE": age(obj.meta.creation_timestamp, now),
    }
    kind = obj.kind
    if kind == "Job":
        s = obj.status
        values |= {"STATUS": s.state.phase, "MINAVAILABLE": obj.min_available, "RUNNINGS": s.running}
        values |= {"QUEUE": obj.queue, "PENDING": s.pending, "SUCCEEDED": s.succeeded, "FAILED": s.failed}
    elif kind == "PodGroup":
        s = obj.status
        values |= {"STATUS": s.phase, "MINMEMBER": obj.min_member, "RUNNINGS": s.running, "QUEUE": obj.queue}
    elif kind == "Pod":
        s = obj.status
        values |= {"STATUS": s.phase, "NODE": obj.spec.node_name, "REASON": s.reason, "EXIT": s.exit_code}
    elif kind == "Queue":
        s = obj.status
        values |= {"WEIGHT": obj.weight, "STATE": s.state, "PARENT": obj.parent or "root"}
        values |= {"INQUEUE": s.inqueue, "PENDING": s.pending, "RUNNING": s.running}
        values["CAPABILITY"] = quantities(obj.capability)
    elif kind == "Node":
        status = "Ready" if obj.ready else "NotReady"
        a = obj.allocatable
        values |= {"STATUS": status + (",SchedulingDisabled" if obj.unschedulable else "")}
        values |= {
            k.upper(): format_quantity(k, a.get(k, 0)) if k in a else "" for k in ("cpu", "memory", "pods")
        }
        values["TAINTS"] = ",".join(f"{t.key}={t.value}:{t.effect}" for t in obj.taints)
    elif kind == "PriorityClass":
        values |= {"VALUE": obj.value, "GLOBAL-DEFAULT": obj.global_default}
        values["PREEMPTIONPOLICY"] = obj.preemption_policy
    elif kind == "HyperNode":
        values |= {"TIER": obj.tier, "TIERNAME": obj.tier_name, "MEMBERS": len(obj.members)}
    elif kind == "CronJob":
        s = obj.status
        values |= {"SCHEDULE": obj.schedule, "SUSPEND": obj.suspend, "ACTIVE": len(s.active)}
        values["LAST SCHEDULE"] = "" if s.last_schedule_time is None else age(s.last_schedule_time, now)
        values |= {"TIMEZONE": obj.time_zone, "CONCURRENCY": obj.concurrency_policy}
        values["LAST SUCCESSFUL"] = "" if s.last_successful_time is None else age(s.last_successful_time, now)
    elif kind == "JobFlow":
        s = obj.status
        values |= {"STATUS": s.phase, "JOBS": f"{len(s.job_status_list)}/{len(obj.flows)}"}
        values |= {"COMPLETED": len(s.completed_jobs), "FAILED": len(s.failed_jobs), "MESSAGE": s.message}
    elif kind == "JobTemplate":
        values["JOBS"] = ",".join(obj.status.job_depends_on_list)
    return values


# --- printing answers and watches ---------------------------------------------------------------------


def report(answers: list[tuple[str, Answer]], fmt: str) -> int:
    """Print what admission did per object ("text"; "quiet": nothing), and every error on stderr; exit 1
    if anything was refused. json/yaml: {"accepted": all were, "results": [{"source", ...answer}]}."""
    accepted = all(answer.accepted for _, answer in answers)
    if fmt in ("json", "yaml"):
        results = [{"source": source, **answer.to_dict()} for source, answer in answers]
        dump({"accepted": accepted, "results": results}, fmt)
    for _source, answer in answers:
        suffix = " (dry run)" if answer.dry_run else ""
        for obj in answer.objects if fmt == "text" else ():
            print(f"{obj['kind'].lower()}/{obj['name']} {obj['action']}{suffix}")
        for warning in answer.warnings:  # kubectl's form of a server's warning
            print(f"Warning: {_where(warning)}{warning['message']}", file=sys.stderr)
        for error in answer.errors:
            print(f"error: {_where(error)}{error['message']}", file=sys.stderr)
    return EXIT_OK if accepted else EXIT_REFUSED


def _where(error: Mapping[str, str]) -> str:
    return f"{error['document']}: {error['path']}: " if error.get("path") else f"{error['document']}: "


async def follow(
    objects: list[Any],
    changes: AsyncIterator[tuple[str, Any]],
    cols: tuple[str, ...],
    fmt: str,
    *,
    only: str | None = None,
    keep: Callable[[Any], bool] | None = None,
) -> None:
    """-w: the listing, then each change. A table gets a row per change; -o json prints one document per
    line, {"type": ADDED | MODIFIED | DELETED, "object": ...} (as kubectl's watch events), starting with
    an ADDED per listed object; -o yaml the same documents separated by ---. `only` names the one object
    watched; `keep` selects the objects watched (-l): one that stops matching shows as deleted."""
    seen: set[str] = set()

    def emit(change: str, obj: Any) -> None:
        kind = "DELETED" if change == "delete" else "MODIFIED" if obj.meta.key in seen else "ADDED"
        if fmt == "json":
            print(json.dumps({"type": kind, "object": document(obj)}), flush=True)
        elif fmt == "yaml":
            dump({"type": kind, "object": document(obj)}, "yaml")
            print("---", flush=True)

    if fmt in ("json", "yaml"):
        for obj in objects:
            emit("put", obj)
            seen.add(obj.meta.key)
    else:
        now = time.time()
        print(table(cols, ([row(o, now)[c] for c in cols] for o in objects)), flush=True)
        seen.update(obj.meta.key for obj in objects)
    async for change, obj in changes:
        if only and obj.meta.name != only:
            continue
        if keep is not None and not keep(obj):
            if change == "delete" or obj.meta.key not in seen:
                continue
            change = "delete"  # it no longer matches: gone from the selection
        if fmt in ("json", "yaml"):
            emit(change, obj)
        else:
            values = row(obj, time.time())
            if change == "delete":
                values["STATUS"] = "Deleted"
            print(table(cols, [[values.get(c, "") for c in cols]]).splitlines()[1], flush=True)
        if change == "delete":
            seen.discard(obj.meta.key)
        else:
            seen.add(obj.meta.key)
