"""`lahar bench core`: placements per second of the scheduling core on a synthetic cluster.

Sessions run in rounds (enqueue + allocate with Volcano's default plugins) until a round places nothing
more. The cluster is held the way a scheduler replica's view holds it: the node table kept between
sessions (`NodeRows`) and only live pods and PodGroups in the snapshot (`LiveObjects`), so finished
history (`finished`) stays out of the sessions. The figure counts everything a session does, including
opening it over the whole snapshot.

With `replicas` > 1, each round runs one session per replica over the same snapshot, each placing the
PodGroups it owns on a rendezvous ring of the replicas; their plans then go through a binder stand-in
that refuses a gang that no longer fits (a conflict: its pods wait for the next round). `seconds` counts,
per round, the slowest replica's session (replicas run side by side); `session_cpu_s` is each replica's
own CPU time over all its sessions. `settled_session_ms` is one more session of one replica after the last
round, over the settled cluster (placed pods running): the floor a session acting for every PodGroup
pays, which grows with nodes and live pods but not with `finished`; `settled_session_cpu_ms` is its
CPU, the median of five. `settled_focused_session_cpu_ms` is the same for a session acting for no
PodGroup: what a replica's session that answers a few PodGroups pays over the settled cluster (its
focus, services/scheduler/focus.py; every other pod is only counted).

With a conf that enables the usage plugin, every node carries a synthetic usage sample (synthetic.py:
`node_usage`) that lists none of the node's pods, so the plugin estimates every placed pod from the log
(the most it ever has to do at session open).
"""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from contracts.objects import Node, Pod, PodGroup, PodStatus
from contracts.usage import NodeUsage
from services.scheduler.bench.binder import BenchBinder
from services.scheduler.bench.synthetic import make_history, make_workload, node_usage
from services.scheduler.core.conf import SchedulerConf, default_conf
from services.scheduler.core.framework.plan import SessionResult
from services.scheduler.core.framework.session import run_session
from services.scheduler.core.live import LiveObjects
from services.scheduler.core.model.node_base import NodeRows
from services.scheduler.core.snapshot import ClusterSnapshot
from shared.ring import Ring


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass(slots=True)
class _Cluster:
    """What a replica's view would hand its sessions."""

    nodes: tuple[Node, ...]
    queues: tuple[Any, ...]
    rows: NodeRows = field(default_factory=NodeRows)
    objects: LiveObjects = field(default_factory=LiveObjects)
    usage: Mapping[str, NodeUsage] = field(default_factory=dict)

    def snapshot(self) -> ClusterSnapshot:
        return ClusterSnapshot(
            nodes=self.nodes,
            pods=self.objects.live_pods(),
            podgroups=self.objects.live_podgroups(),
            queues=self.queues,
            node_base=self.rows.base(),
            task_facts=self.objects.live_facts(),
            usage=self.usage,
        )

    def put(self, obj: Pod | PodGroup) -> None:
        if isinstance(obj, Pod):
            self.objects.put_pod(obj.meta.key, obj)
        else:
            self.objects.put_podgroup(obj.meta.key, obj)


def run_bench(
    nodes: int,
    pods: int,
    *,
    queues: int = 20,
    seed: int = 0,
    replicas: int = 1,
    finished: int = 0,
    conf: SchedulerConf | None = None,
    max_sessions: int = 50,
    progress: Callable[[int, int, float], None] | None = None,
) -> dict[str, Any]:
    """`max_sessions` bounds the rounds; `progress(round, placed, seconds)` is called after each."""
    workload = make_workload(nodes, pods, queues, seed)
    conf = conf or default_conf()
    # from_objects adds Volcano's `default` queue
    cluster = _Cluster(tuple(workload.nodes), ClusterSnapshot.from_objects(workload.queues).queues)
    cluster.rows.put_all(workload.nodes)
    if conf.uses("usage"):
        cluster.usage = node_usage(workload.nodes, seed)
    for obj in (
        *make_history(finished, workload.nodes, workload.queues, seed),
        *workload.podgroups,
        *workload.pods,
    ):
        cluster.put(obj)
    members = [f"scheduler-{i}" for i in range(replicas)]
    ring = Ring(members)
    binder = BenchBinder(cluster.rows.base())
    cpu = dict.fromkeys(members, 0.0)
    placed = rounds = rejected = 0
    elapsed = 0.0
    while rounds < max_sessions:
        snapshot = cluster.snapshot()
        results = []
        slowest = 0.0
        for member in members:
            owns = None if replicas == 1 else _owner(ring, member)
            started, started_cpu = time.perf_counter(), time.process_time()
            session_id = f"bench-{rounds}-{member}"
            results.append(run_session(snapshot, conf, seed=seed + rounds, session_id=session_id, owns=owns))
            cpu[member] += time.process_time() - started_cpu
            slowest = max(slowest, time.perf_counter() - started)
        elapsed += slowest
        rounds += 1
        binds = 0
        for result in results:
            accepted, refused = _commit(result, cluster, binder)
            binds += accepted
            rejected += refused
        placed += binds
        if progress is not None:
            progress(rounds, placed, elapsed)
        if placed == len(workload.pods):
            break  # every pod is placed; no further session is needed to confirm it
        if not binds and rounds > 1:
            break  # nothing placeable is left
    owns = None if replicas == 1 else _owner(ring, members[0])
    settled = cluster.snapshot()
    started = time.perf_counter()
    run_session(settled, conf, seed=seed + rounds, session_id="bench-settled", owns=owns)
    settled_ms = (time.perf_counter() - started) * 1000
    # The same session's CPU, the median of a few (a shared machine moves wall time a lot), and that of
    # one acting for no PodGroup: a replica's session acts only for its PodGroups with something to
    # decide (services/scheduler/focus.py), so answering a few of them over a settled cluster costs
    # about this, every other pod only counted.
    settled_cpu = _median_cpu_ms(lambda: run_session(settled, conf, session_id="bench-settled", owns=owns))
    focused_cpu = _median_cpu_ms(lambda: run_session(settled, conf, session_id="bench-focus", owns=_nothing))
    return {
        "nodes": nodes,
        "pods": pods,
        "replicas": replicas,
        "finished": finished,
        "placed": placed,
        "sessions": rounds,
        "seconds": round(elapsed, 3),
        "placements_per_s": round(placed / elapsed, 1) if elapsed else 0.0,
        "session_cpu_s": [round(cpu[m], 3) for m in members],
        "rejected_plans": rejected,
        "settled_session_ms": round(settled_ms, 1),
        "settled_session_cpu_ms": round(settled_cpu, 1),
        "settled_focused_session_cpu_ms": round(focused_cpu, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def _median_cpu_ms(session: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.process_time()
        session()
        times.append((time.process_time() - started) * 1000)
    return statistics.median(times)


def _nothing(key: str) -> bool:
    return False


def _owner(ring: Ring, member: str) -> Callable[[str], bool]:
    answers: dict[str, bool] = {}

    def owns(key: str) -> bool:
        answer = answers.get(key)
        if answer is None:
            answer = answers[key] = ring.owns(member, key)
        return answer

    return owns


def _commit(result: SessionResult, cluster: _Cluster, binder: BenchBinder) -> tuple[int, int]:
    """Apply what the binder accepts of one session's result, as the log's events would; returns the
    binds committed and the plans refused."""
    accepted = refused = 0
    pods = cluster.objects.pods
    for plan in result.plans:
        if not binder.commit(plan, pods):
            refused += 1
            continue
        for bind in plan.binds:
            pod = pods[bind.task]
            running = PodStatus(phase="Running")
            cluster.put(replace(pod, spec=replace(pod.spec, node_name=bind.node), status=running))
        accepted += len(plan.binds)
    groups = cluster.objects.podgroups
    for key, update in result.podgroups.items():
        pg = groups[key]
        if pg.status.phase != update.phase:
            cluster.put(replace(pg, status=replace(pg.status, phase=update.phase)))
    return accepted, refused
