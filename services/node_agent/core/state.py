"""The node agent's state: what the log says about the pods bound to its nodes, what the runtime has reported
about them in this agent's life, and the commands that pass between the core and the runtime.

A *run* is one binding of a pod to one of the agent's nodes (one `PodBound` event; its id is the run id).
The same pod may be bound again later (after an eviction, say); that is a new run with a new id. Every
event the agent publishes about a run carries the run id as its causation id, which is how the agent
recognises its own facts when it folds them back.

The state is plain mutable data owned by the service loop; the core's functions update it in place and
return it (copying thousands of runs per event would make the fold quadratic).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack

from contracts.codec import decode, encode
from contracts.objects import Pod
from shared.pod_decode import PodBytes

# what the log says was published for a run
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
TERMINATED = "Terminated"
TERMINAL = frozenset({SUCCEEDED, FAILED, TERMINATED})

# what the runtime reported (Observation.kind), plus LOST: the runtime no longer knows a run it had started
STARTED = "started"
EXITED = "exited"
STOPPED = "stopped"
LOST = "lost"
ENDED = frozenset({EXITED, STOPPED})

# stop reasons (PodTerminated.reason)
EVICTED = "Evicted"
DELETED = "Deleted"


@dataclass(frozen=True, slots=True)
class Observation:
    """A runtime's report about one run: `started` (its app containers run), `exited` (with the pod's exit
    code: the first non-zero one in container order, else 0; `reason` "StartError" when it could not be
    started at all) or `stopped` (it ended after a Stop)."""

    pod: str  # namespace/name
    run_id: str
    kind: str  # started | exited | stopped
    exit_code: int | None = None
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class Start:
    """Start the pod's containers for this run (the runtime ignores a run id it has already started)."""

    pod: str
    run_id: str
    spec: Pod


@dataclass(frozen=True, slots=True)
class Stop:
    """Stop the run's processes: SIGTERM, then SIGKILL once `grace_s` has passed."""

    pod: str
    run_id: str
    grace_s: float


RuntimeAction = Start | Stop


@dataclass(slots=True)
class Run:
    run_id: str
    node: str
    pod: Pod | None  # None: the log bound a pod whose PodCreated the agent never saw
    stop_reason: str = ""  # "" while the pod should run; Evicted | Deleted once it should stop
    published: str = ""  # "" | Running | Succeeded | Failed | Terminated (from the agent's own events)
    observed: str = ""  # "" | started | exited | stopped | lost (from the runtime)
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    started_at: float | None = None
    finished_at: float | None = None
    start_issued: bool = False
    stop_issued: bool = False


@dataclass(slots=True)
class Orphan:
    """A live run nobody wants any more (its pod was bound again, lost, or is unknown): it is stopped."""

    pod: str
    grace_s: float
    stop_issued: bool = False


@dataclass(slots=True)
class AgentState:
    # node name -> id of its last NodeRegistered (the id names the registered content)
    registered: dict[str, str] = field(default_factory=dict)
    # pods created and not finished, on any node, as encoded in their PodCreated (decoded when bound here)
    specs: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    # the bytes of those pods' specs and statuses, which name their shared decoded values
    # (shared/pod_decode.py); not checkpointed: a pod restored without them is decoded in full
    spec_bytes: dict[str, PodBytes] = field(default_factory=dict, compare=False)
    runs: dict[str, Run] = field(default_factory=dict)  # pod key -> its current run on one of our nodes
    orphans: dict[str, Orphan] = field(default_factory=dict)  # run id -> orphan
    # pod keys and orphan run ids whose runtime actions may have changed (plan_actions looks only at
    # these); not checkpointed: a restart recovers every run and wakes them all
    wake: set[str] = field(default_factory=set, compare=False)


_RUN_SCALARS = (
    "run_id",
    "node",
    "stop_reason",
    "published",
    "observed",
    "exit_code",
    "reason",
    "message",
    "started_at",
    "finished_at",
    "start_issued",
    "stop_issued",
)


CHECKPOINT_VERSION = 2


def dump_state(state: AgentState) -> bytes:
    data: dict[str, Any] = {
        "version": CHECKPOINT_VERSION,
        "registered": state.registered,
        "specs": state.specs,
        "runs": {
            key: {
                **{name: getattr(run, name) for name in _RUN_SCALARS},
                "pod": None if run.pod is None else encode(run.pod),
            }
            for key, run in state.runs.items()
        },
        "orphans": {run_id: [o.pod, o.grace_s, o.stop_issued] for run_id, o in state.orphans.items()},
    }
    packed: bytes = msgpack.packb(data, use_bin_type=True)  # msgpack is untyped
    return packed


def load_state(blob: bytes) -> AgentState:
    data = msgpack.unpackb(blob, raw=False)
    if data.get("version") != CHECKPOINT_VERSION:
        # an older layout is only a cache of the log: the loop replays instead
        raise ValueError(f"unsupported node agent checkpoint version {data.get('version')!r}")
    runs = {}
    for key, fields in data["runs"].items():
        pod = fields.pop("pod")
        runs[key] = Run(pod=None if pod is None else decode(Pod, pod), **fields)
    orphans = {run_id: Orphan(*values) for run_id, values in data["orphans"].items()}
    # what this process has issued is unknown: every run and orphan is looked at again
    return AgentState(
        registered=dict(data["registered"]),
        specs=dict(data["specs"]),
        runs=runs,
        orphans=orphans,
        wake={*runs, *orphans},
    )
