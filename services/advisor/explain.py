"""The advice in words: why the first candidate is recommended (against the runner-up, on the objective's
own figure), which candidates to avoid and why, and how to use the recommended one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from services.advisor.figures import DEADLOCK, UNSCHEDULABLE, Figures
from services.advisor.objectives import BALANCED, FAIRNESS, LATENCY, MAKESPAN, UTILISATION

if TYPE_CHECKING:
    from services.advisor.ranking import Ranked


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}s" if abs(value) >= 10 else f"{value:.1f}s".replace(".0s", "s")


def explain(objective: str, ranked: Sequence[Ranked]) -> str:
    best = ranked[0]
    finished = [r for r in ranked if r.figures.finished]
    stuck = [r for r in ranked if not r.figures.finished]
    if not finished:
        done = f"{best.figures.jobs_finished} of {best.figures.jobs} jobs finished"
        if len(stuck) == 1:
            parts = [f"{best.name} does not finish this workload ({done}): it {_avoid_reason(best)}."]
        else:
            parts = [
                f"No candidate finishes this workload ({_outcomes(stuck)}); {best.name} gets furthest "
                f"({done}) and {_avoid_reason(best)}."
            ]
        if best.figures.outcome == UNSCHEDULABLE:
            parts.append(
                "Grow the cluster or shrink the requests; `lahar simulate` with its conf names each pod."
            )
        return " ".join(parts)
    parts = [f"Use {best.name}: {_reason(objective, best, finished, bool(stuck))}."]
    if stuck:
        parts.append("Avoid " + "; ".join(f"{r.name}, which {_avoid_reason(r)}" for r in stuck) + ".")
    parts.append(_how(best))
    return " ".join(parts)


def _listed(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


def _outcomes(stuck: Sequence[Ranked]) -> str:
    words = {DEADLOCK: "deadlocks", UNSCHEDULABLE: "leaves work unschedulable"}
    return ", ".join(f"{r.name} {words.get(r.figures.outcome, 'runs out of cycles')}" for r in stuck)


def _reason(objective: str, best: Ranked, finished: Sequence[Ranked], others_stuck: bool) -> str:
    """finished: every candidate that finished, best first."""
    f = best.figures
    runner_up = finished[1:2]
    if not runner_up:
        alone = "the only candidate that finishes" if others_stuck else "the one candidate, and it finishes"
        return (
            f"it is {alone} all {f.jobs} jobs (makespan {seconds(f.makespan_s)}, mean job scheduling "
            f"latency {seconds(f.latency_mean_s)})"
        )
    other = runner_up[0]
    g = other.figures
    if best.score != other.score:
        if objective == BALANCED:
            return (
                f"it has the best balanced score, {best.score:.3f} against {other.score:.3f} for "
                f"{other.name} ({_versus(f, g)})"
            )
        return _figure_pair(objective, f, g, other.name)
    if _figures(f) == _figures(g):
        same = [r.name for r in finished[1:] if _figures(r.figures) == _figures(f)]
        return f"it does exactly as well as {_listed(same)} on this workload ({_figures(f)}), so any will do"
    breaker, mine, theirs = TIE_BREAKER_NAMES[objective](f, g)
    if mine != theirs:
        return (
            f"it ties with {other.name} on {objective} and has the lower {breaker}, {mine} against {theirs}"
        )
    return f"it ties with {other.name} on {objective} and {breaker} ({mine}) and was given first"


# the figure that breaks a tie on each objective (objectives.py), as words and both candidates' values
TIE_BREAKER_NAMES: dict[str, Callable[[Figures, Figures], tuple[str, str, str]]] = {
    BALANCED: lambda f, g: ("makespan", seconds(f.makespan_s), seconds(g.makespan_s)),
    LATENCY: lambda f, g: ("p99 job scheduling latency", seconds(f.latency_p99_s), seconds(g.latency_p99_s)),
    FAIRNESS: lambda f, g: (
        "mean job scheduling latency",
        seconds(f.latency_mean_s),
        seconds(g.latency_mean_s),
    ),
    UTILISATION: lambda f, g: ("makespan", seconds(f.makespan_s), seconds(g.makespan_s)),
    MAKESPAN: lambda f, g: (
        "mean job scheduling latency",
        seconds(f.latency_mean_s),
        seconds(g.latency_mean_s),
    ),
}


def _figure_pair(objective: str, f: Figures, g: Figures, other: str) -> str:
    if objective == LATENCY:
        return (
            f"its mean job scheduling latency is {seconds(f.latency_mean_s)} against "
            f"{seconds(g.latency_mean_s)} for {other} (p99 {seconds(f.latency_p99_s)} vs "
            f"{seconds(g.latency_p99_s)})"
        )
    if objective == FAIRNESS:
        return (
            f"its job scheduling latency CV is {f.job_scheduling_latency_cv:.3f} against "
            f"{g.job_scheduling_latency_cv:.3f} for {other}, so jobs wait more alike "
            f"(mean {seconds(f.latency_mean_s)} vs {seconds(g.latency_mean_s)})"
        )
    if objective == UTILISATION:
        resource = f.busiest_resource or "any resource"
        return (
            f"it keeps {f.utilisation:.0%} of the {resource} allocated on average against "
            f"{g.utilisation:.0%} for {other} (makespan {seconds(f.makespan_s)} vs {seconds(g.makespan_s)})"
        )
    if objective == MAKESPAN:
        return (
            f"it finishes all {f.jobs} jobs in {seconds(f.makespan_s)} against {seconds(g.makespan_s)} for "
            f"{other} (mean job scheduling latency {seconds(f.latency_mean_s)} vs "
            f"{seconds(g.latency_mean_s)})"
        )
    return f"{_versus(f, g)} for {other}"


def _figures(f: Figures) -> str:
    return (
        f"makespan {seconds(f.makespan_s)}, mean latency {seconds(f.latency_mean_s)}, p99 "
        f"{seconds(f.latency_p99_s)}, job-latency CV {f.job_scheduling_latency_cv:.3f}, node CV "
        f"{f.node_allocation_cv:.3f}"
    )


def _versus(f: Figures, g: Figures) -> str:
    return (
        f"makespan {seconds(f.makespan_s)} vs {seconds(g.makespan_s)}, mean latency "
        f"{seconds(f.latency_mean_s)} vs {seconds(g.latency_mean_s)}, p99 {seconds(f.latency_p99_s)} vs "
        f"{seconds(g.latency_p99_s)}, job-latency CV {f.job_scheduling_latency_cv:.3f} vs "
        f"{g.job_scheduling_latency_cv:.3f}, node CV {f.node_allocation_cv:.3f} vs {g.node_allocation_cv:.3f}"
    )


def _avoid_reason(ranked: Ranked) -> str:
    """What went wrong, as a clause after the candidate's name."""
    f, conf = ranked.figures, ranked.candidate.conf
    if f.outcome == DEADLOCK:
        if not conf.uses("gang"):
            return (
                "deadlocks: without the gang plugin every job gets part of the cluster and waits for the "
                "rest forever (keep gang, and enqueue)"
            )
        return "deadlocks: jobs hold part of their pods and wait for the rest (check their minAvailable)"
    if f.outcome == UNSCHEDULABLE:
        return "leaves work unschedulable: some pods fit on no node"
    return "had not finished when the cycle limit came"


def _how(best: Ranked) -> str:
    if best.candidate.source == "built-in":
        return (
            f"`lahar advise --print-conf {best.name} > {best.name}.conf` writes it for "
            f"`lahar up --scheduler-conf {best.name}.conf`."
        )
    return f"Run it with `lahar up --scheduler-conf {best.candidate.source}`."
