"""One descheduling run (pure): `plan_evictions(view, policy, usage, now)` runs every profile's balance
plugins in order over the same view, as the descheduler does, and returns the evictions they chose with
their reasons, and how each plugin classified the nodes. Later plugins see earlier plugins' evictions as
done (the descheduler's dry run and its real evictions behave alike there), and the policy's limits
count across all of them.

The nodes a run works on are the ready ones the policy's nodeSelector picks; with fewer than two there
is nowhere to move anything and nothing is done. The service calls this on its timer and the simulator
on its clock; both hand it the usage they have.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.descheduler.core.evictor import Evictor, Settings
from services.descheduler.core.plugins import PlannedEviction, PluginRun, run_plugin
from services.descheduler.core.policy import DeschedulerPolicy
from services.descheduler.core.usage import NodeLoad
from services.descheduler.core.view import ClusterView


@dataclass(frozen=True, slots=True)
class DeschedulingResult:
    evictions: tuple[PlannedEviction, ...] = ()
    runs: tuple[PluginRun, ...] = ()
    note: str = ""  # why the run did nothing at all, when it did not


def plan_evictions(
    view: ClusterView,
    policy: DeschedulerPolicy,
    usage: Mapping[str, NodeLoad],
    now: float,
    settings: Settings | None = None,
) -> DeschedulingResult:
    """Every eviction the policy calls for on this view, in the order they were decided."""
    nodes = [
        view.nodes[name]
        for name in sorted(view.nodes)
        if view.nodes[name].ready and policy.node_selector.matches(view.nodes[name].meta.labels)
    ]
    if len(nodes) <= 1:
        return DeschedulingResult(note=f"{len(nodes)} ready node(s): evicting would only disrupt")
    evictor = Evictor(view, policy, settings or Settings(), now)
    pods_on = view.pods_on()
    evictions: list[PlannedEviction] = []
    runs: list[PluginRun] = []
    for profile in policy.profiles:
        for args in profile.balance:
            chosen, run = run_plugin(profile, args, nodes, pods_on, usage, evictor)
            evictions.extend(chosen)
            runs.append(run)
    return DeschedulingResult(tuple(evictions), tuple(runs))
