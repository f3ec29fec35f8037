"""What a runtime does for the node agent: start and stop runs, say which are alive, report what happens.

A runtime only does I/O; every decision is the core's. Reports are `Observation`s on the runtime's
`observations` queue: `started` once a run's app containers run, then exactly one end, `exited` (the pod's
exit code) or `stopped` (it ended after a Stop). A Start for a run id the runtime already knows is
ignored, which makes "at most one start per run" hold even if the shell replans after a restart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Protocol

from contracts.objects import FROZEN_EMPTY, Pod
from services.node_agent.core.state import Observation


class Runtime(Protocol):
    observations: asyncio.Queue[Observation]

    async def start(
        self,
        pod: Pod,
        run_id: str,
        *,
        env: Mapping[str, str] = FROZEN_EMPTY,
        files: Mapping[str, bytes] = FROZEN_EMPTY,
    ) -> None:
        """Begin the run and return; what happens is reported. Init containers run first, one by one,
        then the others together. `env` is added to every container's environment (the container's own
        variables win); `files` ({relative path: bytes}) are written into the pod's directory first. A
        pod that cannot be started is reported `exited` with reason "StartError"."""
        ...

    async def stop(self, pod: str, run_id: str, grace_s: float) -> None:
        """Send the run's processes SIGTERM and return; SIGKILL follows after `grace_s`, and `stopped` is
        reported once nothing of the run is left. A run the runtime is not running is reported `stopped`
        at once (the core keeps the first end it hears of)."""
        ...

    async def running(self) -> dict[str, str]:
        """Pod key -> run id of every run the runtime is driving (its processes alive, or its next step
        about to start). A fresh runtime finds the runs an earlier agent left (from its records), drives
        them from then on and queues the ends that happened while no agent was watching."""
        ...

    async def close(self) -> None:
        """Stop watching; runs go on (they outlive the agent, and the next one adopts them)."""
        ...
