"""Readings of a Linux /proc tree: every process's cpu ticks, start and resident memory, the machine's cpu
ticks and memory. `proc` is the tree's root (`/proc`; tests give a directory of their own with the same
files). Only reads: every figure's arithmetic is in process_usage.py.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # the unit of /proc's cpu times (USER_HZ, 100 on Linux)
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True, slots=True)
class ProcStat:
    """One process, from /proc/<pid>/stat. `ticks` is its cpu time and that of the children it has
    reaped (utime + stime + cutime + cstime): when a child of a pod's process ends, its time moves into
    its parent's, so a pod's total never drops as long as its processes reap their children."""

    pid: int
    ppid: int
    session: int
    ticks: int
    start_ticks: int  # clock ticks after boot when it started
    rss_pages: int  # resident set size, the same figure as /proc/<pid>/statm's second field


def parse_stat(pid: int, text: str) -> ProcStat:
    """/proc/<pid>/stat's fields after the command name (which may hold spaces and parentheses)."""
    fields = text[text.rindex(")") + 2 :].split()
    # fields[0] is stat's 3rd field (state): stat's field n is fields[n - 3]
    return ProcStat(
        pid=pid,
        ppid=int(fields[1]),
        session=int(fields[3]),
        ticks=int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14]),
        start_ticks=int(fields[19]),
        rss_pages=int(fields[21]),
    )


def read_processes(proc: Path = PROC) -> dict[int, ProcStat]:
    """Every process there is; one that ends while being read is left out."""
    found = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        pid = int(entry.name)
        found[pid] = parse_stat(pid, text)
    return found


def read_uptime_s(proc: Path = PROC) -> float:
    """Seconds since boot: the clock process start times count in."""
    return float((proc / "uptime").read_text().split()[0])


@dataclass(frozen=True, slots=True)
class MachineCpu:
    """The aggregate `cpu` line of /proc/stat: ticks spent busy and in total, over every cpu."""

    busy_ticks: int
    total_ticks: int
    cpus: int


def read_machine_cpu(proc: Path = PROC) -> MachineCpu:
    busy = total = cpus = 0
    for line in (proc / "stat").read_text().splitlines():
        name, *values = line.split()
        if name == "cpu":
            # user nice system idle iowait irq softirq steal (guest time is already in user and nice)
            ticks = [int(v) for v in values[:8]]
            total = sum(ticks)
            busy = total - ticks[3] - (ticks[4] if len(ticks) > 4 else 0)
        elif name.startswith("cpu") and name[3:].isdigit():
            cpus += 1
    return MachineCpu(busy, total, max(cpus, 1))


def read_memory_used_bytes(proc: Path = PROC) -> int:
    """MemTotal - MemAvailable: what the machine's memory holds that it could not hand out now (the
    figure `1 - MemAvailable/MemTotal` of a load-aware descheduler's query)."""
    values = {}
    for line in (proc / "meminfo").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("MemTotal", "MemAvailable"):
            values[name] = int(rest.split()[0]) * 1024  # kB
    return max(0, values["MemTotal"] - values.get("MemAvailable", values["MemTotal"]))
