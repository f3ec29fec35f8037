"""The result of a simulation as plain data (for -o json / yaml) and as a table for people."""

from __future__ import annotations

from typing import Any

from contracts.resources import format_quantity
from services.simulator.descheduling import descheduled_table
from services.simulator.engine import SimulationRun
from services.simulator.log import event_to_plain
from services.simulator.metrics import coefficient_of_variation
from services.simulator.workloads import workloads_report, workloads_table

# the payload fields the table shows of an event
TABLE_FIELDS = ("phase", "retry_count", "node", "reason", "exit_code", "state", "action", "target")


def _quantities(values: dict[str, int]) -> dict[str, str]:
    return {dim: format_quantity(dim, v) for dim, v in sorted(values.items()) if v}


def _condition(c: Any) -> dict[str, Any]:
    return {
        "type": c.type,
        "status": c.status,
        "reason": c.reason,
        "message": c.message,
        "transitionID": c.transition_id,
    }


def _stuck_message(run: SimulationRun) -> str:
    world = run.world
    holders: list[str] = []
    waiters: list[str] = []
    for key in world.unfinished_jobs():
        running = sum(
            1 for k, g in world.pod_job.items() if g == key and world.pods[k].status.phase == "Running"
        )
        replicas = sum(t.replicas for t in world.jobs[key].job.tasks)
        (holders if running else waiters).append(f"{key} ({running}/{replicas} pods running)")
    parts = ["no progress possible"]
    if holders:
        parts.append("jobs holding part of their resources: " + ", ".join(holders))
    if waiters:
        parts.append("jobs waiting with nothing placed: " + ", ".join(waiters))
    orphans = world.pending_pods_without_job()
    if orphans:
        parts.append("pods waiting: " + ", ".join(orphans))
    return "; ".join(parts)


def build_report(run: SimulationRun, until_idle: bool, events: bool = False) -> dict[str, Any]:
    """events: add the simulated event log (`events`, one entry per event, see log.event_to_plain)."""
    last = run.results[-1] if run.results else None
    report: dict[str, Any] = {
        "outcome": run.outcome,
        "cycles": run.cycles,
        "binds": dict(sorted(run.binds.items())),
        "evictions": list(run.evictions),
        "pipelined": dict(sorted(last.pipelined.items())) if last else {},
        "podgroups": {
            key: {"phase": pg.status.phase, "conditions": [_condition(c) for c in pg.status.conditions]}
            for key, pg in sorted(run.world.podgroups.items())
        },
        "queues": {
            name: {
                "deserved": _quantities(q.deserved),
                "allocated": _quantities(q.allocated),
                "share": round(q.share, 4),
            }
            for name, q in sorted((last.queues if last else {}).items())
        },
    }
    if run.workloads is not None:
        report.update(workloads_report(run.workloads, run.log.events))
    if run.descheduler is not None:
        report["descheduled"] = [d.plain() for d in run.descheduler.descheduled]
    if run.outcome in ("deadlock", "unschedulable"):
        report["message"] = _stuck_message(run)
    if until_idle:
        report.update(_run_figures(run))
    if events:
        report["events"] = [event_to_plain(e) for e in run.log.events]
    return report


def _run_figures(run: SimulationRun) -> dict[str, Any]:
    """The closed loop's figures: every job's history, makespan, utilisation and fairness."""
    jobs = {}
    latencies = []
    for key, record in sorted(run.world.jobs.items()):
        jobs[key] = {
            "phase": record.phase,
            "submit": record.submit_time,
            "start": record.start_time,
            "finish": record.finish_time,
            "retry_count": record.retry_count,
            "reason": record.reason,
            "deleted": record.deleted_time,
        }
        if record.start_time is not None:
            latencies.append(record.start_time - record.submit_time)
    finishes = [r.finish_time for r in run.world.jobs.values() if r.finish_time is not None]
    makespan = max(finishes) if finishes and run.outcome == "idle" else run.now
    assert run.usage is not None
    return {
        "jobs": jobs,
        "sim_time_s": run.now,
        "makespan_s": makespan,
        "mean_utilisation": run.usage.mean_utilisation(makespan),
        "fairness": {
            "job_scheduling_latency_cv": round(coefficient_of_variation(latencies), 4),
            "node_allocation_cv": round(run.usage.node_allocation_cv(makespan), 4),
        },
    }


def render_table(report: dict[str, Any]) -> str:
    lines = [f"outcome: {report['outcome']}   cycles: {report['cycles']}"]
    if "message" in report:
        lines.append(report["message"])
    if "jobs" in report:
        lines.append("")
        lines.append(
            f"{'JOB':40} {'PHASE':10} {'SUBMIT':>8} {'START':>8} {'FINISH':>8} {'RETRIES':>7}  REASON"
        )
        for key, job in report["jobs"].items():
            fmt = [("-" if v is None else f"{v:.0f}") for v in (job["submit"], job["start"], job["finish"])]
            deleted = "" if job["deleted"] is None else f" (deleted at {job['deleted']:.0f}s)"
            lines.append(
                f"{key:40} {job['phase']:10} {fmt[0]:>8} {fmt[1]:>8} {fmt[2]:>8} {job['retry_count']:>7}  "
                f"{job['reason']}{deleted}"
            )
        fair = report["fairness"]
        lines.append("")
        lines.append(
            f"makespan {report['makespan_s']:.0f}s  utilisation {report['mean_utilisation']}  "
            f"job-latency CV {fair['job_scheduling_latency_cv']}  "
            f"node-allocation CV {fair['node_allocation_cv']}"
        )
    lines += workloads_table(report)
    lines += descheduled_table(report)
    lines.append("")
    lines.append(f"{'PODGROUP':40} {'PHASE':10} CONDITION")
    for key, pg in report["podgroups"].items():
        cond = "; ".join(
            f"{c['type']}: {c['message'] or c['reason']}" for c in pg["conditions"] if c["status"] == "True"
        )
        lines.append(f"{key:40} {pg['phase']:10} {cond}")
    lines.append("")
    lines.append(f"{'QUEUE':20} {'SHARE':>6}  DESERVED / ALLOCATED")
    for name, q in report["queues"].items():
        lines.append(f"{name:20} {q['share']:>6}  {q['deserved']} / {q['allocated']}")
    lines.append("")
    lines.append(
        f"binds: {len(report['binds'])}  evictions: {len(report['evictions'])}  "
        f"pipelined: {len(report['pipelined'])}"
    )
    if "events" in report:
        lines.append("")
        lines.append(f"{'SEQ':>5} {'TIME':>8} {'EVENT':24} {'SUBJECT':50} PAYLOAD")
        for e in report["events"]:
            payload = " ".join(f"{k}={e['payload'][k]}" for k in TABLE_FIELDS if k in e["payload"])
            lines.append(f"{e['seq']:>5} {e['time']:>8.0f} {e['type']:24} {e['subject']:50} {payload}")
    return "\n".join(lines)
