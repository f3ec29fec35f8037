"""The process runtime against real processes: environment, working directory, files, logs, exit codes,
init containers, SIGTERM then SIGKILL on the process group, and a restarted agent finding its pods."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from support.waiting import Eventually

from contracts.codec import encode
from contracts.objects import Container, EnvVar, ObjectMeta, Pod, PodSpec
from services.node_agent.core.state import Observation
from services.node_agent.runtime import workdir
from services.node_agent.runtime.leftovers import stop_leftover_pods, unfinished_groups
from services.node_agent.runtime.process import ProcessRuntime


def sh(name: str, script: str, **fields: object) -> Container:
    return Container(name, command=("sh", "-c", script), **fields)  # type: ignore[arg-type]


def pod(name: str, *containers: Container, init: tuple[Container, ...] = (), grace: int | None = None) -> Pod:
    spec = PodSpec(containers=containers, init_containers=init, termination_grace_period_seconds=grace)
    return Pod(meta=ObjectMeta(name=name), spec=spec)


def gone(pid: int) -> bool:
    """Exited: no process, or a zombie nobody reaped (this machine's init may never reap orphans)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    for _, _, record in workdir.records(tmp_path):  # whatever a failed test left running
        for pid, _ in record.procs.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


@pytest.fixture
async def runtime(data_dir: Path) -> AsyncIterator[ProcessRuntime]:
    runtime = ProcessRuntime(data_dir)
    yield runtime
    await runtime.close()


async def report(runtime: ProcessRuntime, timeout_s: float = 10.0) -> Observation:
    return await asyncio.wait_for(runtime.observations.get(), timeout_s)


async def run_to_end(runtime: ProcessRuntime, spec: Pod, run_id: str = "r1", **extra: object) -> Observation:
    await runtime.start(spec, run_id, **extra)  # type: ignore[arg-type]
    while (observation := await report(runtime)).kind == "started":
        pass
    return observation


async def test_env_working_dir_and_files_are_visible_to_the_command(
    runtime: ProcessRuntime, data_dir: Path
) -> None:
    script = 'echo "$FOO $BAR $EXTRA $HOSTNAME" > out.txt; pwd > cwd.txt; cat conf/hosts'
    container = sh("main", script, env=(EnvVar("FOO", "from-container"), EnvVar("BAR", "bar")))
    env = {"FOO": "from-pod", "EXTRA": "extra"}
    files = {"conf/hosts": b"10.0.0.1 worker-0\n"}
    ended = await run_to_end(runtime, pod("p", container), env=env, files=files)
    assert (ended.kind, ended.exit_code) == ("exited", 0)
    directory = data_dir / "pods" / "default" / "p"
    assert (directory / "out.txt").read_text() == "from-container bar extra p\n"
    assert Path((directory / "cwd.txt").read_text().strip()).resolve() == directory.resolve()
    assert (directory / "main.log").read_text() == "10.0.0.1 worker-0\n"


async def test_stdout_and_stderr_are_captured_per_container(runtime: ProcessRuntime, data_dir: Path) -> None:
    spec = pod("logs", sh("a", "echo out-a; echo err-a >&2"), sh("b", "echo out-b"))
    await run_to_end(runtime, spec)
    directory = data_dir / "pods" / "default" / "logs"
    assert sorted((directory / "a.log").read_text().split()) == ["err-a", "out-a"]
    assert (directory / "b.log").read_text() == "out-b\n"


@pytest.mark.parametrize(
    ("containers", "expected"),
    [
        ((sh("main", "exit 0"),), ("exited", 0, "")),
        ((sh("main", "exit 3"),), ("exited", 3, "")),
        ((sh("main", "kill -9 $$"),), ("exited", 137, "")),  # killed by signal N: 128 + N
        ((Container("main", args=("sh", "-c", "exit 4")),), ("exited", 4, "")),  # args alone are the command
        ((Container("main"),), ("exited", 128, "StartError")),
        ((sh("a", "exit 0"), Container("b")), ("exited", 128, "StartError")),  # nothing starts at all
        ((sh("a", "exit 0"), sh("b", "exit 5"), sh("c", "exit 6")), ("exited", 5, "")),
        ((sh("main", "exit 0", working_dir="missing"),), ("exited", 128, "StartError")),
    ],
    ids=[
        "zero",
        "non-zero",
        "signal",
        "args",
        "no-command",
        "one-without-command",
        "first-non-zero",
        "bad-dir",
    ],
)
async def test_exit_codes(
    runtime: ProcessRuntime, containers: tuple[Container, ...], expected: tuple[str, int, str]
) -> None:
    ended = await run_to_end(runtime, pod("codes", *containers))
    assert (ended.kind, ended.exit_code, ended.reason) == expected


async def test_containers_run_together_after_the_init_containers(
    runtime: ProcessRuntime, data_dir: Path
) -> None:
    # b can only finish once a runs, and a only once b runs; the init containers ran first, in order
    a = sh("a", "touch a.up; until [ -f b.up ]; do sleep 0.01; done; cat order")
    b = sh("b", "touch b.up; until [ -f a.up ]; do sleep 0.01; done")
    init = (sh("first", "echo first > order"), sh("second", "echo second >> order"))
    ended = await asyncio.wait_for(run_to_end(runtime, pod("together", a, b, init=init)), 10)
    assert (ended.kind, ended.exit_code) == ("exited", 0)
    assert (data_dir / "pods" / "default" / "together" / "a.log").read_text() == "first\nsecond\n"


async def test_a_failed_init_container_fails_the_pod_before_the_containers_start(
    runtime: ProcessRuntime, data_dir: Path
) -> None:
    spec = pod("init-fails", sh("main", "echo ran"), init=(sh("setup", "exit 9"),))
    await runtime.start(spec, "r1")
    ended = await report(runtime)  # no "started": the app containers never ran
    assert (ended.kind, ended.exit_code) == ("exited", 9)
    assert not (data_dir / "pods" / "default" / "init-fails" / "main.log").exists()


async def test_sidecars_run_with_the_containers_and_are_stopped_after_them(
    runtime: ProcessRuntime, data_dir: Path
) -> None:
    sidecar = sh("proxy", "echo $$ > proxy.pid; exec sleep 300", restart_policy="Always")
    main = sh("main", "until [ -s proxy.pid ]; do sleep 0.01; done")  # needs the sidecar running
    ended = await asyncio.wait_for(run_to_end(runtime, pod("sidecar", main, init=(sidecar,), grace=1)), 10)
    assert (ended.kind, ended.exit_code) == ("exited", 0)
    assert gone(int((data_dir / "pods" / "default" / "sidecar" / "proxy.pid").read_text()))


async def test_stop_sends_sigterm_then_sigkill_to_the_whole_group(
    runtime: ProcessRuntime, data_dir: Path, eventually: Eventually
) -> None:
    script = "trap '' TERM; sleep 300 & echo $! > child.pid; echo ready; wait; wait"
    await runtime.start(pod("stubborn", sh("main", script)), "r1")
    assert (await report(runtime)).kind == "started"
    log = data_dir / "pods" / "default" / "stubborn" / "main.log"
    await eventually(lambda: log.exists() and "ready" in log.read_text(), what="the trap to be set")
    child = int((log.parent / "child.pid").read_text())
    loop = asyncio.get_running_loop()
    began = loop.time()
    await runtime.stop("default/stubborn", "r1", grace_s=0.5)
    stopped = await report(runtime, timeout_s=10)
    elapsed = loop.time() - began
    assert (stopped.pod, stopped.run_id, stopped.kind) == ("default/stubborn", "r1", "stopped")
    assert 0.5 <= elapsed < 8, "SIGTERM is ignored, so only the SIGKILL after the grace period ends it"
    assert gone(child)
    assert await runtime.running() == {}


async def test_a_process_that_honours_sigterm_stops_at_once_with_its_children(
    runtime: ProcessRuntime, data_dir: Path, eventually: Eventually
) -> None:
    await runtime.start(pod("polite", sh("main", "sleep 300 & echo $! > child.pid; wait")), "r1")
    assert (await report(runtime)).kind == "started"
    pid_file = data_dir / "pods" / "default" / "polite" / "child.pid"
    await eventually(lambda: pid_file.exists() and pid_file.read_text().strip(), what="the child's pid")
    loop = asyncio.get_running_loop()
    began = loop.time()
    await runtime.stop("default/polite", "r1", grace_s=30)
    assert (await report(runtime)).kind == "stopped"
    assert loop.time() - began < 5, "no grace period is waited out when everything has exited"
    assert gone(int(pid_file.read_text()))


async def test_a_run_starts_once_and_unknown_runs_stop_at_once(runtime: ProcessRuntime) -> None:
    spec = pod("once", sh("main", "echo x >> runs.txt"))
    await runtime.start(spec, "r1")
    await runtime.start(spec, "r1")
    reports = [await report(runtime) for _ in range(2)]
    await runtime.start(spec, "r1")  # ended: its end is not reported twice by one runtime, nor run again
    await runtime.stop("default/other", "r7", grace_s=1)
    reports.append(await report(runtime))
    assert [(r.run_id, r.kind) for r in reports] == [("r1", "started"), ("r1", "exited"), ("r7", "stopped")]
    assert (runtime.data_dir / "pods" / "default" / "once" / "runs.txt").read_text() == "x\n"


async def test_a_fresh_runtime_adopts_live_pods_and_reports_their_exit(data_dir: Path) -> None:
    first = ProcessRuntime(data_dir)
    script = "echo ready; until [ -f go ]; do sleep 0.02; done; exit 7"
    await first.start(pod("long", sh("main", script)), "r1")
    assert (await report(first)).kind == "started"
    await first.close()  # the agent goes away; its pod does not

    second = ProcessRuntime(data_dir)
    assert await second.running() == {"default/long": "r1"}
    record = workdir.read_record(data_dir / "pods" / "default" / "long")
    assert record is not None
    ((pid, _),) = record.procs.values()
    assert not gone(pid)
    assert (await report(second)).kind == "started"
    (data_dir / "pods" / "default" / "long" / "go").touch()
    ended = await report(second)
    assert (ended.pod, ended.run_id, ended.kind, ended.exit_code) == ("default/long", "r1", "exited", 7)
    await second.close()


async def test_a_fresh_runtime_stops_an_adopted_pod(data_dir: Path) -> None:
    first = ProcessRuntime(data_dir)
    await first.start(pod("orphan", sh("main", "sleep 300 & wait")), "r1")
    assert (await report(first)).kind == "started"
    await first.close()

    second = ProcessRuntime(data_dir)
    assert await second.running() == {"default/orphan": "r1"}
    await second.stop("default/orphan", "r1", grace_s=5)
    while (ended := await report(second)).kind == "started":  # re-reported if it got that far
        pass
    assert (ended.run_id, ended.kind) == ("r1", "stopped")
    record = workdir.read_record(data_dir / "pods" / "default" / "orphan")
    assert record is not None and all(gone(pid) for pid, _ in record.procs.values())
    await second.close()


async def test_an_exit_while_no_agent_watched_is_reported_by_the_next_one(
    data_dir: Path, eventually: Eventually
) -> None:
    first = ProcessRuntime(data_dir)
    await first.start(pod("brief", sh("main", "until [ -f go ]; do sleep 0.02; done; exit 3")), "r1")
    assert (await report(first)).kind == "started"
    await first.close()
    directory = data_dir / "pods" / "default" / "brief"
    (directory / "go").touch()
    record = workdir.read_record(directory)
    assert record is not None
    await eventually(lambda: all(gone(pid) for pid, _ in record.procs.values()), what="the pod to exit")

    second = ProcessRuntime(data_dir)
    assert await second.running() == {"default/brief": "r1"}  # taken up until its end is read
    reports = [await report(second) for _ in range(2)]
    assert [(r.kind, r.exit_code) for r in reports] == [("started", None), ("exited", 3)]
    await second.close()

    third = ProcessRuntime(data_dir)  # an ended run is reported again, once, for a core that missed it
    assert await third.running() == {}
    ended = await report(third)
    assert (ended.run_id, ended.kind, ended.exit_code) == ("r1", "exited", 3)
    assert await third.running() == {}
    assert third.observations.empty()


async def test_a_run_interrupted_while_launching_is_killed_and_reported(data_dir: Path) -> None:
    # what a crash in the middle of spawning leaves: a record still "launching", one process recorded
    directory = workdir.pod_dir(data_dir, "default/cut")
    workdir.prepare(directory, {})
    sleeper = await asyncio.create_subprocess_exec("sleep", "300", start_new_session=True)
    stat = Path(f"/proc/{sleeper.pid}/stat").read_text()
    ticks = int(stat[stat.rindex(")") + 2 :].split()[19])
    spec = pod("cut", sh("a", "exit 0"), sh("b", "exit 0"))
    record = workdir.RunRecord("r1", encode(spec), {}, launching=True, procs={"a": [sleeper.pid, ticks]})
    workdir.write_record(directory, record)

    runtime = ProcessRuntime(data_dir)
    assert await runtime.running() == {"default/cut": "r1"}
    ended = await report(runtime)
    assert (ended.kind, ended.exit_code, ended.reason) == ("exited", None, "Unknown")
    assert await asyncio.wait_for(sleeper.wait(), 10) in (-signal.SIGTERM, -signal.SIGKILL)
    await runtime.close()


async def test_extra_files_must_stay_in_the_pod_directory(runtime: ProcessRuntime) -> None:
    ended = await run_to_end(runtime, pod("escape", sh("main", "exit 0")), files={"../x": b"no"})
    assert (ended.kind, ended.exit_code, ended.reason) == ("exited", 128, "StartError")


async def test_when_the_stack_goes_down_the_pods_an_agent_left_are_stopped(data_dir: Path) -> None:
    """`lahar down`: nothing will adopt them, so they are ended rather than orphaned to init."""
    first = ProcessRuntime(data_dir)
    await first.start(pod("left", sh("main", "sleep 300 & wait"), grace=1), "r1")
    assert (await report(first)).kind == "started"
    await run_to_end(first, pod("done", sh("main", "true")), "r2")  # ended: no process to signal
    await first.close()  # the agent goes away; its pod does not
    record = workdir.read_record(data_dir / "pods" / "default" / "left")
    assert record is not None
    ((pid, _),) = record.procs.values()
    assert not gone(pid) and len(unfinished_groups(data_dir)) == 1

    assert await asyncio.to_thread(stop_leftover_pods, data_dir, 5.0) == 1
    assert gone(pid) and unfinished_groups(data_dir) == []
    assert await asyncio.to_thread(stop_leftover_pods, data_dir, 5.0) == 0  # again: nothing left
