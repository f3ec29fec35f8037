"""The process runtime: each container's command runs as a local process (Linux: it reads /proc).

A run's init containers run one by one, then its app containers (and sidecar init containers, those with
restartPolicy Always) together; the pod exits when every app container has exited, with the first
non-zero exit code in container order, else 0; sidecars and anything a container left behind are then
terminated. A container runs `command + args`, or `args` alone when it has no command; one with neither
fails the pod before anything starts (reason StartError, exit code 128, as Kubernetes reports it).

Every container is started in a session (and so a process group) of its own under a two-line `sh` shim
that waits for it and writes its exit code into the pod directory, so the code survives an agent crash.
Stop signals the groups, so children die too: SIGTERM, then SIGKILL after the grace period. Liveness is
read from /proc: zombies count as gone (the init of a container may never reap them), and a recorded pid
only counts as the run's while its start time matches, so a reused pid is never adopted.

A restarted agent learns from `running()` what an earlier one left in the same data dir: a run that had
not ended is adopted (its processes watched by polling, since they are not this agent's children; the
remaining steps are run) and ended runs are reported again. One agent per data dir.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from contracts.codec import decode, encode
from contracts.objects import FROZEN_EMPTY, Container, Pod
from services.node_agent.core.state import EXITED, STARTED, STOPPED, Observation
from services.node_agent.runtime import workdir
from services.node_agent.runtime.workdir import RunRecord

_SHIM = 'exit_file=$1; shift; "$@"; code=$?\necho "$code" > "$exit_file"; exit "$code"'
START_ERROR = 128
_KILL_WAIT_S = 5.0
_ADOPTED_POLL_S = 0.5  # only after an agent restart, for as long as the adopted processes live
_DEFAULT_GRACE_S = 30.0
_INHERITED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "USER")

Outcome = tuple[str, int | None, str, str]  # Observation kind, exit code, reason, message


@dataclass(eq=False)
class _Run:
    key: str
    directory: Path
    record: RunRecord
    pod: Pod
    children: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)
    stopping: bool = False
    escalation: asyncio.Task[None] | None = None
    task: asyncio.Task[None] | None = None

    def pgids(self) -> list[int]:
        return [pid for pid, _ in self.record.procs.values()]


class ProcessRuntime:
    """Runs pods as local processes under `data_dir`. `base_env` is every container's starting
    environment (default: PATH, HOME, LANG and a few more from the agent's own)."""

    def __init__(
        self, data_dir: Path, *, base_env: Mapping[str, str] | None = None, poll_s: float = 0.05
    ) -> None:
        self.data_dir = Path(data_dir)
        inherited = {name: os.environ[name] for name in _INHERITED_ENV if name in os.environ}
        self.base_env = dict(base_env) if base_env is not None else inherited
        self.poll_s = poll_s
        self.observations: asyncio.Queue[Observation] = asyncio.Queue()
        self._runs: dict[str, _Run] = {}
        self._reported: set[str] = set()  # run ids whose end this instance reported

    async def start(
        self,
        pod: Pod,
        run_id: str,
        *,
        env: Mapping[str, str] = FROZEN_EMPTY,
        files: Mapping[str, bytes] = FROZEN_EMPTY,
    ) -> None:
        key = pod.meta.key
        current = self._runs.get(key)
        if current is not None:
            if current.record.run_id == run_id:
                return
            await self._kill_now(current)  # an abandoned run of the pod would share its directory
        directory = workdir.pod_dir(self.data_dir, key)
        known = workdir.read_record(directory)
        if known is not None and known.run_id == run_id:
            self._recover(key, directory, known)
            return
        try:
            workdir.prepare(directory, files)
        except (OSError, ValueError) as exc:
            self._report(key, run_id, (EXITED, START_ERROR, "StartError", f"pod directory: {exc}"))
            return
        record = RunRecord(run_id=run_id, pod=encode(pod), env=dict(env))
        workdir.write_record(directory, record)  # before any spawn: a run without a record never started
        self._launch(_Run(key, directory, record, pod))

    async def stop(self, pod: str, run_id: str, grace_s: float) -> None:
        run = self._runs.get(pod)
        if run is None or run.record.run_id != run_id:
            self._report(pod, run_id, (STOPPED, None, "", ""))
        elif not run.stopping:
            run.stopping = True
            run.escalation = asyncio.create_task(self._terminate(run.pgids, grace_s))

    async def running(self) -> dict[str, str]:
        for key, directory, record in workdir.records(self.data_dir):
            if key not in self._runs:
                self._recover(key, directory, record)
        return {key: run.record.run_id for key, run in self._runs.items()}

    def process_roots(self) -> dict[str, list[tuple[int, int]]]:
        """Pod key -> (pid, start ticks) of each container process of every run it drives (each leads a
        session of its own): where the usage sampler finds a pod's processes."""
        return {
            key: [(pid, ticks) for pid, ticks in run.record.procs.values()] for key, run in self._runs.items()
        }

    async def close(self) -> None:
        tasks = [t for run in self._runs.values() for t in (run.task, run.escalation) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._runs.clear()

    # --- driving a run ----------------------------------------------------------------------------
    def _recover(self, key: str, directory: Path, record: RunRecord) -> None:
        """Adopt a run an earlier agent left unfinished, or report again how it ended."""
        if record.outcome is not None:
            if record.run_id not in self._reported:
                self._reported.add(record.run_id)
                ended = record.outcome
                self._report(
                    key, record.run_id, (ended["kind"], ended["exit_code"], ended["reason"], ended["message"])
                )
            return
        try:
            pod = decode(Pod, record.pod)
        except ValueError as exc:
            self._report(key, record.run_id, (EXITED, None, "Unknown", f"unreadable run record: {exc}"))
            return
        self._launch(_Run(key, directory, record, pod))

    def _launch(self, run: _Run) -> None:
        self._runs[run.key] = run
        run.task = asyncio.create_task(self._drive(run))

    async def _drive(self, run: _Run) -> None:
        try:
            outcome = await self._run_steps(run)
        except Exception as exc:  # a broken data dir must end the run, not strand it
            await self._terminate(run.pgids, 0)
            outcome = (EXITED, None, "Unknown", f"runtime: {exc!r}")
        if run.stopping:
            assert run.escalation is not None
            await run.escalation
            outcome = (STOPPED, None, "", "")
        run.record.outcome = dict(zip(("kind", "exit_code", "reason", "message"), outcome, strict=True))
        workdir.write_record(run.directory, run.record)
        if self._runs.get(run.key) is run:
            del self._runs[run.key]
        self._reported.add(run.record.run_id)
        self._report(run.key, run.record.run_id, outcome)

    async def _run_steps(self, run: _Run) -> Outcome:
        steps = _steps(run.pod)
        main = len(steps) - 1
        if run.record.launching:
            await self._terminate(run.pgids, 0)
            return EXITED, None, "Unknown", "the agent stopped while launching the pod's containers"
        if run.record.step == 0 and not run.record.procs:
            missing = [c.name for step in steps for c in step if not _argv(c)]
            if missing:
                return EXITED, START_ERROR, "StartError", f"no command or args in container(s) {missing}"
        app_names = {c.name for c in run.pod.spec.containers}
        code: int | None = 0
        for index in range(run.record.step, len(steps)):
            if run.stopping:
                break
            apps = [c.name for c in steps[index] if index < main or c.name in app_names]
            if index == run.record.step and run.record.procs:
                if index == main:
                    self._report(run.key, run.record.run_id, (STARTED, None, "", ""))
                codes = await self._watch_adopted(run, apps)
            else:
                error = await self._spawn(run, index, steps[index])
                if error is not None:
                    return EXITED, START_ERROR, "StartError", error
                if index == main:
                    self._report(run.key, run.record.run_id, (STARTED, None, "", ""))
                codes = await _wait(run.children, apps)
            if not run.stopping:
                await self._terminate(run.pgids, _grace_s(run.pod))  # sidecars, leftovers
            await _wait(run.children, list(run.children))
            code = next((c for c in codes if c != 0), 0)
            if index < main and code != 0:
                break
        return EXITED, code, "Unknown" if code is None else "", ""

    async def _spawn(self, run: _Run, index: int, containers: tuple[Container, ...]) -> str | None:
        record = run.record
        record.step, record.launching, record.procs = index, True, {}
        run.children = {}
        workdir.write_record(run.directory, record)
        env = {**self.base_env, "HOSTNAME": run.pod.spec.hostname or run.pod.meta.name, **record.env}
        error = None
        try:
            for container in containers:
                with workdir.log_path(run.directory, container.name).open("wb") as log:
                    process = await asyncio.create_subprocess_exec(
                        *("/bin/sh", "-c", _SHIM, "lahar-shim"),
                        str(workdir.exit_path(run.directory, container.name)),
                        *_argv(container),
                        stdin=asyncio.subprocess.DEVNULL,
                        stdout=log,
                        stderr=asyncio.subprocess.STDOUT,
                        cwd=run.directory / container.working_dir,
                        env={**env, **{var.name: var.value for var in container.env}},
                        start_new_session=True,
                    )
                run.children[container.name] = process
                record.procs[container.name] = [process.pid, _start_ticks(process.pid)]
                workdir.write_record(run.directory, record)  # still launching: a restart kills these
                if run.stopping:  # the Stop's SIGTERM went out before this process existed
                    signal_group(process.pid, signal.SIGTERM)
        except OSError as exc:
            await self._terminate(run.pgids, 0)
            error = f"container {container.name}: {exc}"
        record.launching = False
        workdir.write_record(run.directory, record)
        return error

    async def _watch_adopted(self, run: _Run, apps: list[str]) -> list[int | None]:
        """Processes of an earlier agent are not our children: poll until they are gone, then read the
        codes their shims wrote (None when a shim was killed before it could)."""
        procs = [run.record.procs[name] for name in apps if name in run.record.procs]
        while any(alive(pid, ticks) for pid, ticks in procs):
            await asyncio.sleep(_ADOPTED_POLL_S)
        return [workdir.read_exit_code(run.directory, name) for name in apps]

    async def _kill_now(self, run: _Run) -> None:
        if not run.stopping:
            run.stopping = True
            run.escalation = asyncio.create_task(self._terminate(run.pgids, 0))
        assert run.task is not None
        await run.task

    async def _terminate(self, pgids: Callable[[], list[int]], grace_s: float) -> None:
        # only groups with live members are signalled: an emptied group's id may belong to another process
        for pgid in _live_groups(set(pgids())):
            signal_group(pgid, signal.SIGTERM)
        if not await self._emptied(pgids, grace_s):
            for pgid in _live_groups(set(pgids())):
                signal_group(pgid, signal.SIGKILL)
            await self._emptied(pgids, _KILL_WAIT_S)

    async def _emptied(self, pgids: Callable[[], list[int]], timeout_s: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while _live_groups(set(pgids())):
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(self.poll_s)
        return True

    def _report(self, pod: str, run_id: str, outcome: Outcome) -> None:
        kind, exit_code, reason, message = outcome
        self.observations.put_nowait(Observation(pod, run_id, kind, exit_code, reason, message))


def _steps(pod: Pod) -> list[tuple[Container, ...]]:
    inits = pod.spec.init_containers
    sidecars = tuple(c for c in inits if c.restart_policy == "Always")
    return [(c,) for c in inits if c.restart_policy != "Always"] + [sidecars + pod.spec.containers]


def _argv(container: Container) -> list[str]:
    return [*container.command, *container.args] if container.command else list(container.args)


def _grace_s(pod: Pod) -> float:
    grace = pod.spec.termination_grace_period_seconds
    return _DEFAULT_GRACE_S if grace is None else float(grace)


async def _wait(children: Mapping[str, asyncio.subprocess.Process], names: list[str]) -> list[int | None]:
    codes = await asyncio.gather(*(children[name].wait() for name in names))
    return [128 - code if code < 0 else code for code in codes]  # killed by signal N: 128 + N


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/<pid>/stat from the state on (the command name may hold spaces)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _start_ticks(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[19]) if fields else -1


def alive(pid: int, ticks: int) -> bool:
    """The process pid is the one started at `ticks` (not a reused pid) and has not exited."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X") and int(fields[19]) == ticks


def _live_groups(pgids: set[int]) -> set[int]:
    """Which of these process groups still have a member that is not a zombie."""
    if not pgids:
        return set()
    live = set()
    for entry in os.scandir("/proc"):
        fields = _stat(entry.name) if entry.name.isdigit() else None
        if fields and fields[0] not in ("Z", "X") and int(fields[2]) in pgids:
            live.add(int(fields[2]))
    return live
