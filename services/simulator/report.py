"""The result of a simulation as plain data (for -o json / yaml) and as a table for people."""

from __future__ import annotations

from typing import Any

from contracts.resources import format_quantity
from services.simulator.engine import SimulationRun
from services.simulator.metrics import coefficient_of_variation


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
    holders, waiters = [], []
    for key in world.unfinished_jobs():
        members = [k for k, g in world.pod_job.items() if g == key]
        running = sum(1 for k in members if world.pods[k].status.phase == "Running")
        (holders if running else waiters).append(f"{key} ({running}/{len(members)} pods running)")
    parts = ["no progress possible"]
    if holders:
        parts.append("jobs holding part of their resources: " + ", ".join(holders))
    if waiters:
        parts.append("jobs waiting with nothing placed: " + ", ".join(waiters))
    orphans = world.pending_pods_without_job()
    if orphans:
        parts.append("pods waiting: " + ", ".join(orphans))
    return "; ".join(parts)


def build_report(run: SimulationRun, until_idle: bool) -> dict[str, Any]:
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
    if run.outcome in ("deadlock", "unschedulable"):
        report["message"] = _stuck_message(run)
    if not until_idle:
        return report
    jobs = {}
    latencies = []
    for key, record in sorted(run.world.jobs.items()):
        jobs[key] = {
            "phase": record.phase,
            "submit": record.submit_time,
            "start": record.start_time,
            "finish": record.finish_time,
        }
        if record.start_time is not None:
            latencies.append(record.start_time - record.submit_time)
    finishes = [r.finish_time for r in run.world.jobs.values() if r.finish_time is not None]
    makespan = max(finishes) if finishes and run.outcome == "idle" else run.now
    assert run.usage is not None
    report.update(
        {
            "jobs": jobs,
            "sim_time_s": run.now,
            "makespan_s": makespan,
            "mean_utilisation": run.usage.mean_utilisation(makespan),
            "fairness": {
                "job_scheduling_latency_cv": round(coefficient_of_variation(latencies), 4),
                "node_allocation_cv": round(run.usage.node_allocation_cv(makespan), 4),
            },
        }
    )
    return report


def render_table(report: dict[str, Any]) -> str:
    lines = [f"outcome: {report['outcome']}   cycles: {report['cycles']}"]
    if "message" in report:
        lines.append(report["message"])
    if "jobs" in report:
        lines.append("")
        lines.append(f"{'JOB':40} {'PHASE':10} {'SUBMIT':>8} {'START':>8} {'FINISH':>8}")
        for key, job in report["jobs"].items():
            fmt = [("-" if v is None else f"{v:.0f}") for v in (job["submit"], job["start"], job["finish"])]
            lines.append(f"{key:40} {job['phase']:10} {fmt[0]:>8} {fmt[1]:>8} {fmt[2]:>8}")
        fair = report["fairness"]
        lines.append("")
        lines.append(
            f"makespan {report['makespan_s']:.0f}s  utilisation {report['mean_utilisation']}  "
            f"job-latency CV {fair['job_scheduling_latency_cv']}  "
            f"node-allocation CV {fair['node_allocation_cv']}"
        )
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
    return "\n".join(lines)
