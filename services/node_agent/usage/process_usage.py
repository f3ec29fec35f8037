"""The process runtime's usage: each pod's process tree, and the machine as the node.

A pod's processes are its containers' processes (each started in a session of its own by
runtime/process.py), everything in their sessions and every descendant of them (a process that left
the session still has its parent chain). A root counts only while its start time is the one recorded,
so a reused pid is never taken for a pod's. A pod's cpu is the rate of its processes' ticks (utime +
stime + cutime + cstime, procfs.ProcStat) between two samples, or since its first process started at its
first sample; its memory is its processes' resident set size.

The node's usage is the machine's (/proc/stat, /proc/meminfo), not the sum of its pods: a load-aware
scheduler must see what else runs there too (the agent itself, the system, other tenants of the host),
and a descheduler's thresholds are about the machine (docs/usage.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from services.node_agent.usage import procfs
from services.node_agent.usage.procfs import MachineCpu, ProcStat
from services.node_agent.usage.sources import NodeSample

# pod key -> (pid, start ticks) of each of its containers' processes, as the runtime recorded them
Roots = Mapping[str, Sequence[tuple[int, int]]]


def pod_members(procs: Mapping[int, ProcStat], roots: Roots) -> dict[str, list[ProcStat]]:
    """Each pod's live processes."""
    owner: dict[int, str] = {}  # a valid root's pid (also its session id) -> its pod
    for pod, pids in roots.items():
        for pid, start in pids:
            proc = procs.get(pid)
            if proc is not None and proc.start_ticks == start:
                owner[pid] = pod
    resolved: dict[int, str | None] = {}
    members: dict[str, list[ProcStat]] = {}
    for pid, proc in procs.items():
        member_of = _pod_of(pid, procs, owner, resolved)
        if member_of is not None:
            members.setdefault(member_of, []).append(proc)
    return members


def _pod_of(
    pid: int, procs: Mapping[int, ProcStat], owner: Mapping[int, str], resolved: dict[int, str | None]
) -> str | None:
    """The pod whose root, session or ancestor the process is (walks parents once, remembering)."""
    chain: list[int] = []
    found: str | None = None
    while True:
        if pid in resolved:
            found = resolved[pid]
            break
        if pid in owner:
            found = owner[pid]
            break
        proc = procs.get(pid)
        if proc is None or pid <= 1 or pid in chain:
            break
        chain.append(pid)
        if proc.session in owner:
            found = owner[proc.session]
            break
        pid = proc.ppid
    for visited in chain:
        resolved[visited] = found
    return found


class CpuMeter:
    """Cpu rates from cumulative tick counts: each key's rate since its previous reading."""

    def __init__(self, ticks_per_s: int = procfs.CLOCK_TICKS) -> None:
        self.ticks_per_s = ticks_per_s
        self._last: dict[str, tuple[int, float]] = {}

    def rate_milli(self, key: str, ticks: int, now_s: float, since_s: float) -> int:
        """Milli-cores over the time since `key`'s previous reading, or since `since_s` (when it started,
        on the same clock as `now_s`) at its first one. Ticks that went down (a process ended unreaped)
        count as none."""
        last_ticks, last_s = self._last.get(key, (0, since_s))
        self._last[key] = (ticks, now_s)
        elapsed = now_s - last_s
        if elapsed <= 0:
            return 0
        return round(max(0, ticks - last_ticks) / self.ticks_per_s / elapsed * 1000)

    def keep(self, keys: Iterable[str]) -> None:
        """Forget every key but these (pods that ended)."""
        kept = set(keys)
        self._last = {key: value for key, value in self._last.items() if key in kept}


def machine_cpu_milli(previous: MachineCpu | None, current: MachineCpu) -> int:
    """The machine's busy milli-cores between two readings of /proc/stat (since boot at the first)."""
    busy = current.busy_ticks - (previous.busy_ticks if previous else 0)
    total = current.total_ticks - (previous.total_ticks if previous else 0)
    if total <= 0:
        return 0
    return round(max(0, busy) / total * current.cpus * 1000)


class ProcessUsageSource:
    """The process runtime's one node. `roots()` gives the processes of the pods the runtime drives."""

    def __init__(
        self,
        node: str,
        roots: Callable[[], Roots],
        *,
        proc: Path = procfs.PROC,
        ticks_per_s: int = procfs.CLOCK_TICKS,
        page_bytes: int = procfs.PAGE_BYTES,
    ) -> None:
        self.node = node
        self.roots = roots
        self.proc = proc
        self.page_bytes = page_bytes
        self.meter = CpuMeter(ticks_per_s)
        self._machine: MachineCpu | None = None

    def sample(self) -> dict[str, NodeSample]:
        procs = procfs.read_processes(self.proc)
        uptime = procfs.read_uptime_s(self.proc)
        pods = {}
        for pod, processes in pod_members(procs, self.roots()).items():
            ticks = sum(p.ticks for p in processes)
            started = min(p.start_ticks for p in processes) / self.meter.ticks_per_s
            cpu = self.meter.rate_milli(pod, ticks, uptime, started)
            pods[pod] = (cpu, sum(p.rss_pages for p in processes) * self.page_bytes)
        self.meter.keep(pods)
        machine = procfs.read_machine_cpu(self.proc)
        cpu = machine_cpu_milli(self._machine, machine)
        self._machine = machine
        return {self.node: NodeSample(cpu, procfs.read_memory_used_bytes(self.proc), pods)}
