"""Per-pod directories of the process runtime and the run record kept in each.

Layout under the agent's data dir:

    pods/<namespace>/<pod>/                  the pod's working directory (and its extra files)
    pods/<namespace>/<pod>/<container>.log   stdout and stderr of the container (for `lahar logs`)
    pods/<namespace>/<pod>/.lahar/run.json   the run record: run id, pod, step, pids, outcome
    pods/<namespace>/<pod>/.lahar/<container>.exit   the exit code, written by the container's shim

The run record is the pidfile: a restarted agent finds the runs an earlier one left, checks their pids
and adopts or reports them. It is written before anything is spawned (so a run with no record was never
started) and replaced atomically (write, then rename). Directories are kept after a pod ends, for its logs.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

_STATE = ".lahar"
_RECORD = "run.json"


@dataclass(slots=True)
class RunRecord:
    run_id: str
    pod: dict[str, Any]  # contracts.codec.encode(Pod), so a restarted agent can finish the run
    env: dict[str, str]  # the extra env the run was started with
    step: int = 0  # init containers are steps 0..n-1, the app containers (with sidecars) step n
    launching: bool = False  # set while a step's processes are being spawned
    procs: dict[str, list[int]] = field(default_factory=dict)  # container -> [pid, start time in ticks]
    outcome: dict[str, Any] | None = None  # Observation fields (kind, exit_code, reason, message)


def pod_dir(data_dir: Path, pod: str) -> Path:
    """The directory of a pod, from its key `namespace/name`."""
    parts = pod.split("/")
    if len(parts) != 2 or any(part in ("", ".", "..") or "\0" in part for part in parts):
        raise ValueError(f"not a pod key (namespace/name): {pod!r}")
    return data_dir / "pods" / parts[0] / parts[1]


def log_path(directory: Path, container: str) -> Path:
    return directory / f"{container}.log"


def exit_path(directory: Path, container: str) -> Path:
    return directory / _STATE / f"{container}.exit"


def prepare(directory: Path, files: Mapping[str, bytes]) -> None:
    """Make the pod's directory ready for a new run: forget the previous run's record and exit codes (its
    logs are overwritten as containers start) and write the extra files."""
    state = directory / _STATE
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    root = directory.resolve()
    for relative, content in files.items():
        target = (directory / relative).resolve()
        if Path(relative).is_absolute() or not target.is_relative_to(root) or target == root:
            raise ValueError(f"extra file outside the pod directory: {relative!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def write_record(directory: Path, record: RunRecord) -> None:
    path = directory / _STATE / _RECORD
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(asdict(record)))
    os.replace(temporary, path)


def read_record(directory: Path) -> RunRecord | None:
    try:
        return RunRecord(**json.loads((directory / _STATE / _RECORD).read_text()))
    except (OSError, ValueError, TypeError):
        return None  # absent or damaged: no run to adopt


def records(data_dir: Path) -> Iterator[tuple[str, Path, RunRecord]]:
    """Every run record under the data dir, as (pod key, pod directory, record)."""
    for path in sorted((data_dir / "pods").glob(f"*/*/{_STATE}/{_RECORD}")):
        directory = path.parent.parent
        record = read_record(directory)
        if record is not None:
            yield f"{directory.parent.name}/{directory.name}", directory, record


def read_exit_code(directory: Path, container: str) -> int | None:
    try:
        return int(exit_path(directory, container).read_text().strip())
    except (OSError, ValueError):
        return None
