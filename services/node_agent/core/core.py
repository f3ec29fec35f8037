"""The node agent's pure core: which pods its nodes should run or stop, and which facts to publish.

It folds `PodCreated` (the spec: the runtime needs the containers), `PodBound` / `PodEvicting` /
`PodDeletionRequested` / `PodLost` for its nodes, and its own `NodeRegistered` / `PodRunning` /
`PodSucceeded` / `PodFailed` / `PodTerminated`. The runtime's reports come in through `observe`.
It has two outputs: `reconcile` gives the events to publish (level-triggered: what the observations imply
and the log does not yet say), `plan_actions` the runtime commands (Start / Stop) to issue.

The restart rule (at most one start per run, i.e. per binding): a Start is planned only for a run that
is not known to have been started by the log (`PodRunning` or an end published), by this agent's life
(a Start already issued, an observation) or by the runtime (its durable records, reported by
`running()`). After a restart the shell must, before its first `plan_actions`:

1. ask the runtime which runs are alive (`running()`: pod key -> run id) and fold that with `recover`;
2. fold every observation the runtime has queued (a runtime that keeps records re-reports the runs that
   ended while no agent was watching).

`recover` adopts live runs (they are `started`; a Stop is planned again if they should stop), turns live
runs the state does not want into orphans (stopped), marks runs that had started but are neither alive
nor ended as `lost` (a later exit report for them still wins) and lets a run with no trace anywhere be
started, since the runtime records a run before it spawns anything. The runtime ignores a Start for a
run id it already knows, so a mistake in that order costs a report, never a second copy.

A lost run is reported `PodTerminated` with reason `Lost`, not `PodFailed`: the pod's processes vanished
with the agent (a sim run always does), which says nothing about the workload, so the job-controller
creates the pod again, as it does for a pod of a lost node.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from contracts import payloads
from contracts.codec import decode, decode_object, encode_object
from contracts.events import NODE_AGENT
from contracts.job_shape import JOB_NAME
from contracts.objects import Node, Pod
from services.node_agent.core.state import (
    DELETED,
    ENDED,
    EVICTED,
    EXITED,
    FAILED,
    LOST,
    RUNNING,
    STARTED,
    STOPPED,
    SUCCEEDED,
    TERMINAL,
    TERMINATED,
    AgentState,
    Observation,
    Orphan,
    Run,
    RuntimeAction,
    Start,
    Stop,
    dump_state,
    load_state,
)
from shared.pod_decode import PodBytes, PodDecoder
from shared.runner_types import Event, Output, deterministic_id

# what an agent reports about a pod it runs
PhaseReport = payloads.PodRunning | payloads.PodSucceeded | payloads.PodFailed | payloads.PodTerminated

_PHASE_OF = {
    "PodRunning": RUNNING,
    "PodSucceeded": SUCCEEDED,
    "PodFailed": FAILED,
    "PodTerminated": TERMINATED,
}
DEFAULT_GRACE_S = 30.0


class NodeAgentCore:
    """The Core (shared.runner_types) of one node agent hosting `nodes` (names and allocatable from its
    configuration). `agent` names the agent: the checkpoint key must be unique per agent."""

    def __init__(
        self, agent: str, nodes: Sequence[Node], *, default_grace_s: float = DEFAULT_GRACE_S
    ) -> None:
        self.name = f"{NODE_AGENT}.{agent}"
        self.nodes: dict[str, Node] = {node.meta.name: node for node in nodes}
        # each node's registration, built once: comparing ids is all a full reconcile does per node
        self.registrations: dict[str, Output] = {
            name: _registration(node) for name, node in self.nodes.items()
        }
        self.default_grace_s = default_grace_s
        self.pod_decoder = PodDecoder()  # the specs and statuses of bound pods, decoded once per bytes
        self._handlers: dict[str, Callable[[AgentState, Event, str], None]] = {
            "PodCreated": self._created,
            "PodBound": self._bound,
            "PodEvicting": self._evicting,
            "PodDeletionRequested": self._deletion_requested,
            "PodLost": self._lost,
            "NodeRegistered": self._registered,
            **{name: self._own_phase for name in _PHASE_OF},
        }
        self.reads = frozenset(self._handlers)

    # --- the Core protocol ------------------------------------------------------------------------
    def initial(self) -> AgentState:
        return AgentState()

    def apply(self, state: AgentState, event: Event) -> AgentState:
        handler = self._handlers.get(event.type)
        if handler is not None:
            key = f"{event.namespace}/{event.name}"
            handler(state, event, key)
            if event.kind == "pod":
                state.wake.add(key)
        return state

    def registered_count(self, state: AgentState) -> int:
        """How many of the agent's nodes the log shows registered as configured."""
        return sum(state.registered.get(name) == output.id for name, output in self.registrations.items())

    def touched(self, state: AgentState, event: Event) -> list[str]:
        """Pod keys: a pod event may change what its run's facts are."""
        return [f"{event.namespace}/{event.name}"] if event.kind == "pod" else []

    def due(self, state: AgentState, now: float) -> list[str]:
        return []  # nothing the agent publishes waits on time: the runtime reports when runs end

    def reconcile(self, state: AgentState, now: float, keys: Collection[str] | None = None) -> list[Output]:
        """The facts of the runs of `keys` (pod keys) the log does not show yet; everything (keys None)
        also registers the nodes whose last registration differs from their configuration."""
        if keys is None:
            outputs = [
                output
                for name, output in self.registrations.items()
                if state.registered.get(name) != output.id
            ]
            runs: Iterable[tuple[str, Run]] = state.runs.items()
        else:
            outputs = []
            runs = ((key, run) for key in keys if (run := state.runs.get(key)) is not None)
        for key, run in runs:
            outputs.extend(self._due(key, run))
        return outputs

    def dump(self, state: AgentState) -> bytes:
        return dump_state(state)

    def load(self, data: bytes) -> AgentState:
        return load_state(data)

    # --- the runtime side -------------------------------------------------------------------------
    def observe(self, state: AgentState, observation: Observation, now: float) -> AgentState:
        """Fold a runtime report. A report about a run the state no longer wants: a live one is an
        orphan to stop, an ended one closes the orphan."""
        run = state.runs.get(observation.pod)
        state.wake.update((observation.pod, observation.run_id))
        if run is None or run.run_id != observation.run_id:
            if observation.kind == STARTED:
                state.orphans.setdefault(observation.run_id, Orphan(observation.pod, self.default_grace_s))
            else:
                state.orphans.pop(observation.run_id, None)
            return state
        if observation.kind == STARTED:
            if run.observed in ("", LOST):
                run.observed, run.started_at, run.start_issued = STARTED, now, True
        elif run.observed not in ENDED:  # the first end wins (a recovery may report it again)
            run.observed, run.finished_at = observation.kind, now
            run.exit_code, run.reason, run.message = (
                observation.exit_code,
                observation.reason,
                observation.message,
            )
        return state

    def recover(self, state: AgentState, alive: Mapping[str, str]) -> AgentState:
        """After a restart: `alive` is the runtime's `running()` (pod key -> run id of live runs)."""
        for key, run in state.runs.items():
            run.stop_issued = False  # the escalation of an earlier Stop died with the old agent
            if alive.get(key) == run.run_id:
                run.start_issued = True
                if run.observed in ("", LOST):
                    run.observed = STARTED
            elif run.observed in ENDED:
                continue  # observed before the restart, not yet published
            elif run.published == RUNNING or run.observed == STARTED:
                run.observed = LOST
            else:
                run.observed, run.start_issued = "", False
        wanted = {run.run_id for run in state.runs.values()}
        state.orphans = {
            run_id: Orphan(key, self.default_grace_s) for key, run_id in alive.items() if run_id not in wanted
        }
        state.wake.update(state.runs)
        state.wake.update(state.orphans)
        return state

    def plan_actions(self, state: AgentState) -> tuple[AgentState, list[RuntimeAction]]:
        """The runtime commands to issue now; the state records them as issued. Only the runs and orphans
        something happened to since the last call are looked at."""
        actions: list[RuntimeAction] = []
        woken, state.wake = state.wake, set()
        for key in sorted(woken):
            run = state.runs.get(key)
            if run is not None:
                if not run.stop_reason and run.pod is not None and _never_started(run):
                    run.start_issued = True
                    actions.append(Start(key, run.run_id, run.pod))
                elif run.stop_reason and run.observed == STARTED and not run.stop_issued:
                    run.stop_issued = True
                    actions.append(Stop(key, run.run_id, self._grace_s(run.pod)))
            orphan = state.orphans.get(key)
            if orphan is not None and not orphan.stop_issued:
                orphan.stop_issued = True
                actions.append(Stop(orphan.pod, key, orphan.grace_s))
        return state, actions

    def _bound_pod(self, encoded: Mapping[str, Any], parts: PodBytes | None, node: str) -> Pod | None:
        """The pod a PodCreated carries, bound to `node`: its spec and status shared with the pods that
        carry the same bytes (shared/pod_decode.py), or decoded in full without them (restored from a
        checkpoint, an unusual payload)."""
        if parts is not None:
            pod = self.pod_decoder.from_plain(encoded, parts, node_name=node)
            if pod is not None:
                return pod
        return _bound_pod_in_full(encoded, node)

    # --- folding events ---------------------------------------------------------------------------
    def _created(self, state: AgentState, event: Event, key: str) -> None:
        # kept encoded: most pods are bound to another agent's nodes, and decoding is the costly part
        state.specs[key] = event.payload_as(payloads.PodCreated).object
        parts = self.pod_decoder.pod_bytes(event)
        if parts is None:
            state.spec_bytes.pop(key, None)
        else:
            state.spec_bytes[key] = parts

    def _bound(self, state: AgentState, event: Event, key: str) -> None:
        node = event.payload_as(payloads.PodBound).node
        previous = state.runs.pop(key, None)
        if previous is not None:
            self._abandon(state, key, previous)
        if node not in self.nodes:
            return
        encoded = state.specs.get(key)
        pod = None if encoded is None else self._bound_pod(encoded, state.spec_bytes.get(key), node)
        state.runs[key] = Run(run_id=event.id, node=node, pod=pod)

    def _evicting(self, state: AgentState, event: Event, key: str) -> None:
        run = state.runs.get(key)
        if (
            run is not None
            and run.node == event.payload_as(payloads.PodEvicting).node
            and not run.stop_reason
        ):
            run.stop_reason = EVICTED

    def _deletion_requested(self, state: AgentState, event: Event, key: str) -> None:
        _forget_spec(state, key)
        run = state.runs.get(key)
        # a request naming another node (or none: made while the pod was unbound) is about another run
        asked = event.payload_as(payloads.PodDeletionRequested).node
        if run is not None and (asked is None or asked == run.node) and not run.stop_reason:
            run.stop_reason = DELETED

    def _lost(self, state: AgentState, event: Event, key: str) -> None:
        """The binder gave the pod up (its node was silent): whatever still runs here must go, silently,
        since the pod's fate is no longer this agent's to report. A report of the run that lands after
        the PodLost anyway (published before this agent folded it) is ignored by every reader."""
        run = state.runs.get(key)
        if run is not None and run.node == event.payload_as(payloads.PodLost).node:
            del state.runs[key]
            _forget_spec(state, key)  # that generation is over; its replacement brings its own spec
            self._abandon(state, key, run)

    def _registered(self, state: AgentState, event: Event, key: str) -> None:
        if event.name in self.nodes:
            state.registered[event.name] = event.id

    def _own_phase(self, state: AgentState, event: Event, key: str) -> None:
        run = state.runs.get(key)
        if run is None or run.run_id != event.causation_id:
            # about a run this agent gave up (lost, or bound elsewhere since): the spec kept now is a
            # later generation's, and the report changes nothing (as for every other reader)
            return
        phase = _PHASE_OF[event.type]
        if phase in (SUCCEEDED, FAILED):
            _forget_spec(state, key)  # finished for good: a retry is a new PodCreated
        run.published = phase
        if phase in TERMINAL:
            del state.runs[key]
            self._abandon(state, key, run)

    def _abandon(self, state: AgentState, key: str, run: Run) -> None:
        if run.observed == STARTED:
            state.orphans[run.run_id] = Orphan(key, self._grace_s(run.pod))
            state.wake.add(run.run_id)

    # --- outputs ----------------------------------------------------------------------------------
    def _due(self, key: str, run: Run) -> list[Output]:
        end = _ending(run)
        outputs = []
        if run.published == "" and (
            run.observed == STARTED or (end is not None and run.started_at is not None)
        ):
            outputs.append(
                self._pod_event(key, run, payloads.PodRunning(node=run.node, started_at=run.started_at))
            )
        if end is not None:
            outputs.append(self._pod_event(key, run, end))
        return outputs

    def _pod_event(self, key: str, run: Run, report: PhaseReport) -> Output:
        namespace, name = key.split("/", 1)
        job = run.pod.meta.annotations.get(JOB_NAME) if run.pod is not None else None
        event_type = type(report).__name__
        return Output(
            type=event_type,
            kind="pod",
            namespace=namespace,
            name=name,
            payload=report,
            id=deterministic_id(NODE_AGENT, event_type, key, run.run_id),
            causation_id=run.run_id,
            correlation_id=f"{namespace}/{job}" if job else key,
        )

    def _grace_s(self, pod: Pod | None) -> float:
        grace = None if pod is None else pod.spec.termination_grace_period_seconds
        return self.default_grace_s if grace is None else float(grace)


def _registration(node: Node) -> Output:
    encoded = encode_object(node)
    digest = hashlib.sha256(json.dumps(encoded, sort_keys=True).encode()).hexdigest()[:16]
    name = node.meta.name
    return Output(
        type="NodeRegistered",
        kind="node",
        namespace=None,
        name=name,
        payload=payloads.NodeRegistered(object=encoded),
        id=deterministic_id(NODE_AGENT, "NodeRegistered", name, digest),
        causation_id=None,
        correlation_id=name,
    )


def _forget_spec(state: AgentState, key: str) -> None:
    state.specs.pop(key, None)
    state.spec_bytes.pop(key, None)


def _bound_pod_in_full(encoded: Mapping[str, Any], node: str) -> Pod | None:
    """The pod a PodCreated carries, bound to `node` (None: the object is not a Pod). The node is set in
    the encoded spec, so the pod is decoded once and not copied twice more with `replace`."""
    obj = encoded.get("object")
    if encoded.get("kind") == Pod.kind and isinstance(obj, Mapping):
        spec = obj.get("spec", {})
        if isinstance(spec, Mapping):
            return decode(Pod, {**obj, "spec": {**spec, "node_name": node}})
    decoded = decode_object(encoded)  # not a Pod, or a malformed one: decoding says what is wrong
    return replace(decoded, spec=replace(decoded.spec, node_name=node)) if isinstance(decoded, Pod) else None


def _never_started(run: Run) -> bool:
    return run.published == "" and run.observed == "" and not run.start_issued


def _ending(run: Run) -> PhaseReport | None:
    """The end event a run's observations imply, if any. A run that never started and should stop ends
    at once; a run whose pod spec is missing cannot start, which is reported rather than waited on."""
    node, finished = run.node, run.finished_at
    if run.observed == EXITED:
        if run.exit_code == 0:
            return payloads.PodSucceeded(node=node, exit_code=0, finished_at=finished)
        reason = run.reason or "Error"
        return payloads.PodFailed(
            node=node, exit_code=run.exit_code, reason=reason, message=run.message, finished_at=finished
        )
    if run.observed == STOPPED:
        return payloads.PodTerminated(node=node, reason=run.stop_reason or "Stopped", finished_at=finished)
    if run.observed == LOST:
        return payloads.PodTerminated(node=node, reason=run.stop_reason or "Lost", finished_at=finished)
    if _never_started(run):
        if run.stop_reason:
            return payloads.PodTerminated(node=node, reason=run.stop_reason, finished_at=finished)
        if run.pod is None:
            message = "bound before the agent saw the pod's PodCreated"
            return payloads.PodFailed(
                node=node, exit_code=None, reason="SpecMissing", message=message, finished_at=finished
            )
    return None
