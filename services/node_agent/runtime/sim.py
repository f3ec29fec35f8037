"""The sim runtime: hollow nodes whose pods only pretend to run, thousands per process, for scale tests.

A started pod "runs" for its simulated duration (the `lahar.dev/sim-duration` annotation, else a
`sleep N` in its command, else 60 s: the simulator's own rule) times `time_scale`, then exits with the
`lahar.dev/sim-exit-code` annotation (default 0); meanwhile it uses what `lahar.dev/sim-usage` says, else
its requests (services/node_agent/usage/sources.py). A malformed one of these three (admission refuses them,
contracts/sim_annotations.py, but an old log may hold one) fails the pod at start: reason StartError, exit
code 128, the simulator's rule too.
A run is one timer on the event loop, so thousands cost little. Runs live in the agent's process
(`close` ends them) and nothing is recorded: a restarted agent finds no runs, and the core reports the
ones that had started as terminated (reason Lost), so their pods are created again.

What a pod's run is (its start problem, duration and exit code) follows from its sim-* annotations, its
generation and, without a sim-duration, its containers' commands; the pods of a gang share these, so a
run's shape is worked out once per distinct set of them (parsing the annotations was a large part of a
start), not once per pod.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Mapping
from typing import NamedTuple

from contracts.job_shape import POD_GENERATION
from contracts.objects import FROZEN_EMPTY, Node, ObjectMeta, Pod, frozen_map
from contracts.resources import Resources
from contracts.sim_annotations import SIM_PREFIX
from services.node_agent.core.state import EXITED, STARTED, STOPPED, Observation
from services.node_agent.node_labels import node_labels
from services.simulator.nodes import START_ERROR_CODE
from services.simulator.world import pod_duration, pod_exit_code, start_problem

_SHAPES_KEPT = 1024  # distinct run shapes remembered (a workload has a few per job template)


class RunShape(NamedTuple):
    """What starting a pod amounts to: a problem (it fails at start), else how long it runs (unscaled)
    and the code it exits with."""

    problem: str | None
    duration_s: float
    exit_code: int


def shape_key(pod: Pod) -> Hashable:
    """Everything a run's shape depends on (see run_shape): pods with equal keys run alike."""
    annotations = pod.meta.annotations
    knobs = tuple((key, annotations.get(key)) for key in annotations if key.startswith(SIM_PREFIX))
    commands = tuple((c.command, c.args) for c in pod.spec.containers)
    return knobs, annotations.get(POD_GENERATION), commands


def run_shape(pod: Pod) -> RunShape:
    """The simulator's rules (services/simulator/world.py) for one pod."""
    problem = start_problem(pod)
    if problem is not None:
        return RunShape(problem, 0.0, START_ERROR_CODE)
    return RunShape(None, pod_duration(pod), pod_exit_code(pod))


class SimRuntime:
    """`time_scale` multiplies every duration: 0.01 makes a 60 s pod last 0.6 s."""

    def __init__(self, *, time_scale: float = 1.0) -> None:
        self.time_scale = time_scale
        self.observations: asyncio.Queue[Observation] = asyncio.Queue()
        self._runs: dict[str, tuple[str, asyncio.TimerHandle]] = {}  # pod key -> (run id, its exit)
        self._ended: set[str] = set()  # run ids, so that a repeated Start cannot run a pod twice
        self._shapes: dict[Hashable, RunShape] = {}  # shape_key -> its shape

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
        if run_id in self._ended or (current is not None and current[0] == run_id):
            return
        if current is not None:
            self._end(key, current[0], STOPPED)  # an abandoned run of the same pod
        shape = self._shape(pod)
        if shape.problem is not None:  # admission refuses these; an old log or a direct write may not have
            self._ended.add(run_id)
            self._report(key, run_id, EXITED, shape.exit_code, "StartError", shape.problem)
            return
        duration = shape.duration_s * self.time_scale
        loop = asyncio.get_running_loop()
        handle = loop.call_later(max(duration, 0.0), self._end, key, run_id, EXITED, shape.exit_code)
        self._runs[key] = (run_id, handle)
        self._report(key, run_id, STARTED)

    def _shape(self, pod: Pod) -> RunShape:
        key = shape_key(pod)
        shape = self._shapes.get(key)
        if shape is None:
            if len(self._shapes) >= _SHAPES_KEPT:
                self._shapes.clear()  # a workload of ever new shapes: start over rather than grow
            shape = self._shapes[key] = run_shape(pod)
        return shape

    async def stop(self, pod: str, run_id: str, grace_s: float) -> None:
        current = self._runs.get(pod)
        if current is not None and current[0] == run_id:
            self._end(pod, run_id, STOPPED)
        else:
            self._report(pod, run_id, STOPPED)

    async def running(self) -> dict[str, str]:
        return {key: run_id for key, (run_id, _) in self._runs.items()}

    async def close(self) -> None:
        for _, handle in self._runs.values():
            handle.cancel()
        self._runs.clear()

    def _end(self, pod: str, run_id: str, kind: str, exit_code: int | None = None) -> None:
        _, handle = self._runs.pop(pod)
        handle.cancel()
        self._ended.add(run_id)
        self._report(pod, run_id, kind, exit_code)

    def _report(
        self,
        pod: str,
        run_id: str,
        kind: str,
        exit_code: int | None = None,
        reason: str = "",
        message: str = "",
    ) -> None:
        self.observations.put_nowait(Observation(pod, run_id, kind, exit_code, reason, message))


def hollow_nodes(
    count: int, allocatable: Resources, *, prefix: str = "hollow", labels: Mapping[str, str] | None = None
) -> tuple[Node, ...]:
    """The nodes a sim agent hosts: `<prefix>-0` .. `<prefix>-<count-1>`, alike but for their hostname
    label (each carries a node's well-known labels, node_labels.py, besides `labels`)."""
    return tuple(
        Node(
            meta=ObjectMeta(
                name=f"{prefix}-{i}", namespace="", labels=frozen_map(node_labels(f"{prefix}-{i}", labels))
            ),
            allocatable=allocatable,
            capacity=allocatable,
        )
        for i in range(count)
    )
