"""`lahar bench core`: placements per second of the scheduling core on a synthetic cluster.

Sessions run back to back (enqueue + allocate with Volcano's default plugins) until a session places
nothing more; between sessions the committed binds are applied to the snapshot as the binder would.
The figure counts everything a session does, including opening it over the whole snapshot.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from contracts.objects import PodStatus
from services.scheduler.bench.synthetic import make_workload
from services.scheduler.core.conf import SchedulerConf, default_conf
from services.scheduler.core.framework.session import run_session
from services.scheduler.core.snapshot import ClusterSnapshot


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_bench(
    nodes: int,
    pods: int,
    *,
    queues: int = 20,
    seed: int = 0,
    conf: SchedulerConf | None = None,
    max_sessions: int = 50,
    progress: Callable[[int, int, float], None] | None = None,
) -> dict[str, Any]:
    workload = make_workload(nodes, pods, queues, seed)
    conf = conf or default_conf()
    podgroups = {pg.meta.key: pg for pg in workload.podgroups}
    pod_objects = {p.meta.key: p for p in workload.pods}
    placed = 0
    sessions = 0
    elapsed = 0.0
    while sessions < max_sessions:
        snapshot = ClusterSnapshot.from_objects(
            [*workload.nodes, *workload.queues, *podgroups.values(), *pod_objects.values()]
        )
        started = time.perf_counter()
        result = run_session(snapshot, conf, seed=seed + sessions, session_id=f"bench-{sessions}")
        elapsed += time.perf_counter() - started
        sessions += 1
        binds = result.binds
        placed += len(binds)
        if progress is not None:
            progress(sessions, placed, elapsed)
        for key, update in result.podgroups.items():
            pg = podgroups[key]
            if pg.status.phase != update.phase:
                podgroups[key] = replace(pg, status=replace(pg.status, phase=update.phase))
        for key, node in binds.items():
            pod = pod_objects[key]
            pod_objects[key] = replace(
                pod, spec=replace(pod.spec, node_name=node), status=PodStatus(phase="Running")
            )
        if placed == len(pod_objects):
            break  # every pod is placed; no further session is needed to confirm it
        if not binds and sessions > 1:
            break  # nothing placeable is left
    return {
        "nodes": nodes,
        "pods": pods,
        "placed": placed,
        "sessions": sessions,
        "seconds": round(elapsed, 3),
        "placements_per_s": round(placed / elapsed, 1) if elapsed else 0.0,
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
