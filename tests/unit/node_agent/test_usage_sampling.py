"""What a node agent measures (services/node_agent/usage/): process trees and cpu deltas read from /proc
trees written into temporary directories (real files, laid out as Linux lays them out), the machine's
cpu and memory, window averages, report entries, simulated usage and the timing of the samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.objects import Container, ObjectMeta, Pod, PodSpec, frozen_map
from contracts.resources import Resources
from contracts.usage import MAX_PODS_PER_NODE
from services.node_agent.config import MIN_USAGE_PERIOD_S, NodeAgentConfig
from services.node_agent.usage.process_usage import CpuMeter, ProcessUsageSource, pod_members
from services.node_agent.usage.procfs import parse_stat, read_processes
from services.node_agent.usage.sources import NodeSample, SimUsageSource
from services.node_agent.usage.window import UsageWindow, usage_entries

HZ = 100
PAGE = 4096


class FakeProc:
    """A /proc tree in a directory: /proc/<pid>/stat, /proc/stat, /proc/meminfo, /proc/uptime."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.machine(busy=0, idle=0)
        self.memory(total_kb=1000, available_kb=1000)
        self.uptime(0.0)

    def process(
        self,
        pid: int,
        *,
        ppid: int = 1,
        session: int | None = None,
        utime: int = 0,
        stime: int = 0,
        cutime: int = 0,
        cstime: int = 0,
        start: int = 0,
        rss: int = 0,
        comm: str = "sh",
    ) -> None:
        session = pid if session is None else session
        fields = [
            "S", ppid, session, session, 0, -1, 4194304, 0, 0, 0, 0,
            utime, stime, cutime, cstime, 20, 0, 1, 0, start, 1 << 20, rss,
        ]  # fmt: skip
        directory = self.root / str(pid)
        directory.mkdir(exist_ok=True)
        (directory / "stat").write_text(f"{pid} ({comm}) " + " ".join(map(str, fields)) + " 0 0 0\n")

    def exit(self, pid: int) -> None:
        (self.root / str(pid) / "stat").unlink()
        (self.root / str(pid)).rmdir()

    def machine(self, *, busy: int, idle: int, iowait: int = 0, cpus: int = 2) -> None:
        lines = [f"cpu  {busy} 0 0 {idle} {iowait} 0 0 0 0 0"]
        lines += [f"cpu{i} 0 0 0 0 0 0 0 0 0 0" for i in range(cpus)]
        (self.root / "stat").write_text("\n".join([*lines, "intr 0", "ctxt 0"]) + "\n")

    def memory(self, *, total_kb: int, available_kb: int) -> None:
        text = f"MemTotal: {total_kb} kB\nMemFree: 1 kB\nMemAvailable: {available_kb} kB\n"
        (self.root / "meminfo").write_text(text)

    def uptime(self, seconds: float) -> None:
        (self.root / "uptime").write_text(f"{seconds:.2f} 0.00\n")


@pytest.fixture
def proc(tmp_path: Path) -> FakeProc:
    return FakeProc(tmp_path / "proc")


def test_stat_fields_are_read_after_a_command_name_with_spaces_and_parentheses() -> None:
    text = "42 (my (odd) name) R 7 42 40 0 -1 0 0 0 0 0 11 22 33 44 20 0 1 0 555 0 66 0\n"
    stat = parse_stat(42, text)
    assert (stat.ppid, stat.session, stat.ticks, stat.start_ticks, stat.rss_pages) == (7, 40, 110, 555, 66)


def test_a_pods_processes_are_its_roots_sessions_and_descendants(proc: FakeProc) -> None:
    proc.process(50)  # the agent: parent of the roots, no pod's
    proc.process(100, ppid=50, start=500)  # pod a's container (its session's leader)
    proc.process(101, ppid=100, session=100)  # in its session
    proc.process(102, ppid=101, session=102)  # left the session (setsid): still a descendant
    proc.process(103, ppid=102, session=102)
    proc.process(200, ppid=50, start=600)  # a pid the runtime recorded with another start: reused
    proc.process(201, ppid=200, session=200)
    proc.process(300, ppid=1)  # unrelated
    roots = {"default/a": [(100, 500)], "default/b": [(200, 601)]}
    members = pod_members(read_processes(proc.root), roots)
    assert {pod: sorted(p.pid for p in procs) for pod, procs in members.items()} == {
        "default/a": [100, 101, 102, 103]
    }


def test_pod_cpu_is_the_rate_of_its_ticks_and_memory_its_resident_pages(proc: FakeProc) -> None:
    roots = {"default/a": [(100, 9000)]}
    source = ProcessUsageSource("n1", lambda: roots, proc=proc.root, ticks_per_s=HZ, page_bytes=PAGE)
    # started 90 s after boot; at 100 s it has used 5 s of cpu: half a core since it started
    proc.uptime(100.0)
    proc.process(100, start=9000, utime=300, stime=200, rss=256)
    proc.process(101, ppid=100, session=100, start=9500, rss=768)
    first = source.sample()["n1"]
    assert first.pods == {"default/a": (500, 1024 * PAGE)}
    # 10 s later: the child used 2 s and ended, reaped by its parent (its time moves to cutime), the
    # parent 1 s more: 3 s in 10 s
    proc.uptime(110.0)
    proc.exit(101)
    proc.process(100, start=9000, utime=400, stime=200, cutime=200, rss=256)
    assert source.sample()["n1"].pods == {"default/a": (300, 256 * PAGE)}
    # ticks that went down (a process ended and nobody reaped it) count as none, not as negative
    proc.uptime(120.0)
    proc.process(100, start=9000, utime=100, rss=256)
    assert source.sample()["n1"].pods["default/a"][0] == 0


def test_the_node_is_the_machine_cpu_since_boot_then_between_samples(proc: FakeProc) -> None:
    source = ProcessUsageSource("n1", dict, proc=proc.root, ticks_per_s=HZ, page_bytes=PAGE)
    proc.machine(busy=200, idle=800, cpus=2)
    proc.memory(total_kb=1000, available_kb=400)
    first = source.sample()["n1"]
    assert (first.cpu_milli, first.memory_bytes, first.pods) == (400, 600 * 1024, {})
    # +300 busy of +1000 ticks (iowait counts as idle) on 2 cpus: 0.6 cores
    proc.machine(busy=500, idle=1200, iowait=300, cpus=2)
    assert source.sample()["n1"].cpu_milli == 600


def test_a_pod_that_ended_is_forgotten_and_measured_from_its_start_if_it_runs_again() -> None:
    meter = CpuMeter(ticks_per_s=HZ)
    assert meter.rate_milli("a", 100, now_s=10.0, since_s=9.0) == 1000
    meter.keep([])
    assert meter.rate_milli("a", 100, now_s=20.0, since_s=18.0) == 500
    assert meter.rate_milli("a", 100, now_s=20.0, since_s=0.0) == 0  # no time passed


WINDOW_CASES = [
    # (samples (time, cpu, memory), window, expected averages after the last)
    pytest.param([(0, 100, 10)], 120, (100, 10), id="one-sample"),
    pytest.param([(0, 100, 10), (10, 300, 30)], 120, (200, 20), id="mean"),
    pytest.param([(0, 100, 10), (60, 200, 20), (120, 300, 30)], 120, (250, 25), id="oldest-leaves-at-window"),
    pytest.param([(0, 100, 10), (500, 300, 30)], 120, (300, 30), id="only-the-latest-left"),
    pytest.param([(0, 1, 1), (1, 2, 2)], 0.5, (2, 2), id="window-shorter-than-period"),
]


@pytest.mark.parametrize(("samples", "window_s", "expected"), WINDOW_CASES)
def test_window_averages(samples: list[tuple[float, int, int]], window_s: float, expected: tuple) -> None:
    window = UsageWindow(window_s)
    for time, cpu, memory in samples:
        averages = window.add("n", time, cpu, memory)
    assert averages == expected


def test_entries_average_a_pod_over_the_samples_that_saw_it_and_forget_ended_pods() -> None:
    window = UsageWindow(120.0)
    usage_entries({"n": NodeSample(0, 0, {})}, window, 0.0)
    usage_entries({"n": NodeSample(1000, 100, {"d/a": (1000, 100)})}, window, 10.0)
    (node,) = usage_entries({"n": NodeSample(3000, 300, {"d/a": (3000, 300)})}, window, 20.0)
    assert (node.cpu_milli, node.cpu_avg_milli, node.memory_avg_bytes) == (3000, 1333, 133)
    assert [(p.pod, p.cpu_avg_milli, p.memory_avg_bytes) for p in node.pods] == [("d/a", 2000, 200)]
    usage_entries({"n": NodeSample(0, 0, {})}, window, 30.0)
    (node,) = usage_entries({"n": NodeSample(500, 5, {"d/a": (500, 5)})}, window, 40.0)
    assert node.pods[0].cpu_avg_milli == 500  # ran again: a new series
    assert len(window) == 2


def test_a_node_with_more_pods_than_a_report_holds_lists_its_busiest_in_key_order() -> None:
    pods = {f"d/p{i:05d}": (i, 0) for i in range(MAX_PODS_PER_NODE + 5)}
    (node,) = usage_entries({"n": NodeSample(0, 0, pods)}, UsageWindow(120.0), 0.0)
    listed = [p.pod for p in node.pods]
    assert listed == sorted(listed) and len(listed) == MAX_PODS_PER_NODE
    assert "d/p00000" not in listed and f"d/p{MAX_PODS_PER_NODE + 4:05d}" in listed


def sim_pod(name: str, *, annotation: str = "", cpu: str = "500m", memory: str = "1Gi") -> Pod:
    notes = {"lahar.dev/sim-usage": annotation} if annotation else {}
    container = Container("c", requests=Resources.parse({"cpu": cpu, "memory": memory}))
    meta = ObjectMeta(name=name, namespace="default", annotations=frozen_map(notes))
    return Pod(meta=meta, spec=PodSpec(containers=(container,)))


def test_a_hollow_node_uses_what_its_pods_say_else_their_requests() -> None:
    running = [
        ("sim-0", sim_pod("a", annotation="cpu=1500m,memory=2Gi")),
        ("sim-0", sim_pod("b")),
        ("sim-0", sim_pod("c", annotation="cpu=2")),  # memory from its request
        ("sim-1", sim_pod("d", annotation="cpu=lots")),  # malformed: its requests
        ("elsewhere", sim_pod("e")),  # not this agent's node
    ]
    samples = SimUsageSource(["sim-0", "sim-1", "sim-2"], lambda: running).sample()
    assert samples["sim-0"] == NodeSample(
        4000,
        (2 << 30) + (1 << 30) + (1 << 30),
        {"default/a": (1500, 2 << 30), "default/b": (500, 1 << 30), "default/c": (2000, 1 << 30)},
    )
    assert samples["sim-1"].pods == {"default/d": (500, 1 << 30)}
    assert samples["sim-2"] == NodeSample(0, 0, {})


def test_the_sim_runtime_scales_the_usage_period_and_window_by_its_time_scale() -> None:
    assert NodeAgentConfig(runtime="sim", time_scale=0.1).usage_timing_s() == (1.0, 12.0)
    assert NodeAgentConfig(runtime="sim", time_scale=0).usage_timing_s() == (
        MIN_USAGE_PERIOD_S,
        MIN_USAGE_PERIOD_S,
    )
    assert NodeAgentConfig(runtime="process", data_dir="d", time_scale=0.1).usage_timing_s() == (10.0, 120.0)
    with pytest.raises(ValueError, match="usage_period_s: expected a positive number"):
        NodeAgentConfig(runtime="sim", usage_period_s=0)
