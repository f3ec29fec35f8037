"""The node agent's pure core: runtime commands and phase events for the pods bound to its nodes.

Each case is a list of steps; a step is one or more commands (`;`-separated) followed by one agent cycle:
plan the runtime actions, reconcile, and append the outputs to the log, folding them back in as the
service loop would. The transcript of each cycle is compared with the expected one. Run ids are the ids
of the PodBound events; the harness numbers pod events `e1`, `e2`, ... in log order (node events apart).
"""

from __future__ import annotations

from typing import Any

import pytest

from contracts import payloads
from contracts.codec import encode_object
from contracts.objects import Container, Node, ObjectMeta, Pod, PodSpec, frozen_map
from contracts.resources import Resources
from services.node_agent.core.core import NodeAgentCore
from services.node_agent.core.state import Observation, Start, Stop
from shared.runner_types import Event, Output

CPU4 = Resources.parse({"cpu": "4"})


def node(name: str, allocatable: Resources = CPU4) -> Node:
    return Node(meta=ObjectMeta(name=name, namespace=""), allocatable=allocatable, capacity=allocatable)


def pod(name: str, grace: int | None = None, job: str = "") -> Pod:
    return Pod(
        meta=ObjectMeta(name=name, annotations=frozen_map({"volcano.sh/job-name": job} if job else None)),
        spec=PodSpec(
            containers=(Container("main", command=("true",)),), termination_grace_period_seconds=grace
        ),
    )


class Agent:
    """A node agent over an in-memory log."""

    def __init__(self, nodes: tuple[Node, ...] = (node("n1"), node("n2"))) -> None:
        self.core = NodeAgentCore("a1", nodes)
        self.state = self.core.initial()
        self.log: list[Event] = []
        self.pod_events = 0

    def append(
        self,
        event_type: str,
        kind: str,
        name: str,
        payload: dict[str, Any],
        causation: str | None = None,
        event_id: str | None = None,
    ) -> Event:
        seq = len(self.log) + 1
        namespace = None if kind == "node" else "default"
        self.pod_events += kind == "pod"
        event = Event(
            seq=seq,
            type=event_type,
            kind=kind,
            namespace=namespace,
            name=name,
            payload=payload,
            id=f"e{self.pod_events}" if kind == "pod" else event_id or f"node-{seq}",
            time=float(seq),
            correlation_id=name,
            causation_id=causation,
            traceparent=None,
        )
        self.log.append(event)
        self.state = self.core.apply(self.state, event)
        return event

    def run_id(self, name: str) -> str:
        return self.state.runs[f"default/{name}"].run_id

    def observe(self, name: str, kind: str, code: str = "", reason: str = "", run: str = "") -> None:
        exit_code = int(code) if code else None
        observation = Observation(f"default/{name}", run or self.run_id(name), kind, exit_code, reason)
        self.state = self.core.observe(self.state, observation, now=100.0)

    def restart(self, alive: str, from_log_only: bool) -> None:
        """A new agent process: state from the checkpoint (the current state) or from the log alone."""
        runs = {key: run.run_id for key, run in self.state.runs.items()}
        if from_log_only:
            self.state = self.core.initial()
            for event in self.log:
                self.state = self.core.apply(self.state, event)
        else:
            self.state = self.core.load(self.core.dump(self.state))
        live = {f"default/{name}": runs[f"default/{name}"] for name in alive.split(",") if name}
        self.state = self.core.recover(self.state, live)

    def command(self, text: str) -> None:
        verb, *args = text.split()
        options = dict(arg.split("=", 1) for arg in args if "=" in arg)
        args = [arg for arg in args if "=" not in arg]
        if verb == "create":
            grace = int(options["grace"]) if "grace" in options else None
            created = pod(args[0], grace, options.get("job", ""))
            self.append("PodCreated", "pod", args[0], {"object": encode_object(created)})
        elif verb == "bind":
            self.append("PodBound", "pod", args[0], {"node": args[1], "plan": "p"})
        elif verb == "evict":
            self.append("PodEvicting", "pod", args[0], {"node": args[1], "reason": "preempt", "plan": "p"})
        elif verb == "delete":
            where = {"node": args[1]} if len(args) > 1 else {}
            self.append("PodDeletionRequested", "pod", args[0], {"reason": "JobDeleted", **where})
        elif verb == "lost":
            self.append("PodLost", "pod", args[0], {"node": args[1], "reason": "NodeLost"})
        elif verb in ("started", "exited", "stopped"):
            self.observe(args[0], verb, *args[1:], run=options.get("run", ""))
        elif verb in ("restart", "replay"):
            self.restart(options.get("alive", ""), from_log_only=verb == "replay")
        else:
            assert verb == "tick", verb

    def cycle(self, now: float = 200.0) -> list[str]:
        self.state, actions = self.core.plan_actions(self.state)
        transcript = [describe_action(action) for action in actions]
        for output in self.core.reconcile(self.state, now):
            if output.kind == "pod":
                transcript.append(describe_output(output))
            self.append(
                output.type, output.kind, output.name, output.plain_payload, output.causation_id, output.id
            )
        return transcript


def describe_action(action: Start | Stop) -> str:
    name = action.pod.split("/")[1]
    if isinstance(action, Start):
        assert action.spec.spec.node_name, "a started pod knows its node"
        return f"Start {name} {action.run_id}"
    return f"Stop {name} {action.run_id} {action.grace_s:g}"


def describe_output(output: Output) -> str:
    report = output.payload
    details = [output.name, output.causation_id]
    if isinstance(report, payloads.PodSucceeded | payloads.PodFailed):
        details.append(str(report.exit_code))
    if isinstance(report, payloads.PodFailed | payloads.PodTerminated):
        details.append(report.reason)
    return " ".join([output.type, *details])


CASES: dict[str, list[tuple[str, list[str]]]] = {
    "succeeds": [
        ("create p1", []),
        ("bind p1 n1", ["Start p1 e2"]),
        ("tick", []),
        ("started p1", ["PodRunning p1 e2"]),
        ("exited p1 0", ["PodSucceeded p1 e2 0"]),
        ("tick", []),
    ],
    "fails with its exit code": [
        ("create p1; bind p1 n2", ["Start p1 e2"]),
        ("started p1", ["PodRunning p1 e2"]),
        ("exited p1 3", ["PodFailed p1 e2 3 Error"]),
    ],
    "a pod that cannot start fails with the runtime's reason": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("exited p1 128 StartError", ["PodFailed p1 e2 128 StartError"]),
    ],
    "a fast pod is reported running, then finished": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("started p1; exited p1 0", ["PodRunning p1 e2", "PodSucceeded p1 e2 0"]),
    ],
    "eviction stops the pod with the pod's grace period": [
        ("create p1 grace=5; bind p1 n1", ["Start p1 e2"]),
        ("started p1", ["PodRunning p1 e2"]),
        ("evict p1 n1", ["Stop p1 e2 5"]),
        ("tick", []),
        ("stopped p1", ["PodTerminated p1 e2 Evicted"]),
    ],
    "a stop during the start waits for the start": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("delete p1 n1", []),
        ("started p1", ["Stop p1 e2 30", "PodRunning p1 e2"]),
        ("stopped p1", ["PodTerminated p1 e2 Deleted"]),
    ],
    "a pod stopped before it was started never starts": [
        ("create p1; bind p1 n1; evict p1 n1", ["PodTerminated p1 e2 Evicted"]),
        ("tick", []),
    ],
    "the runtime's end wins over an eviction it raced with": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("started p1; exited p1 0; evict p1 n1", ["PodRunning p1 e2", "PodSucceeded p1 e2 0"]),
    ],
    "pods of other nodes are ignored": [
        ("create p1; bind p1 n9", []),
        ("evict p1 n9; delete p1", []),
        ("started p1 run=e2", ["Stop p1 e2 30"]),  # a live run nobody wants is stopped
    ],
    "an eviction or a deletion naming another node leaves the run alone": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("started p1; evict p1 n2; delete p1 n2", ["PodRunning p1 e2"]),
        ("delete p1 n1", ["Stop p1 e2 30"]),
    ],
    "a bound pod with no spec is reported, not waited on": [
        ("bind p1 n1", ["PodFailed p1 e1 None SpecMissing"]),
    ],
    "a lost pod is stopped silently": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("started p1", ["PodRunning p1 e2"]),
        ("lost p1 n1", ["Stop p1 e2 30"]),
        ("stopped p1 run=e2", []),
        ("tick", []),
    ],
    "a pod bound again gets a new run; the old one is stopped": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("started p1", ["PodRunning p1 e2"]),
        ("bind p1 n2", ["Start p1 e4", "Stop p1 e2 30"]),
        ("stopped p1 run=e2; started p1", ["PodRunning p1 e4"]),
    ],
    "a new run after the pod terminated": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("started p1; evict p1 n1", ["Stop p1 e2 30", "PodRunning p1 e2"]),
        ("stopped p1", ["PodTerminated p1 e2 Evicted"]),
        ("bind p1 n2", ["Start p1 e6"]),
    ],
    # restarts: the runtime's running() decides, the log and checkpoint never cause a second start
    "restart: a live pod is adopted, not started again": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("started p1", ["PodRunning p1 e2"]),
        ("restart alive=p1", []),
        ("exited p1 0", ["PodSucceeded p1 e2 0"]),
    ],
    "replay from the log: a live pod that was never reported running is adopted": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("replay alive=p1", ["PodRunning p1 e2"]),
    ],
    "replay from the log: a run the runtime never saw is started": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("replay alive=", ["Start p1 e2"]),
    ],
    "restart: a running pod that is gone is lost, to be created again": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("started p1", ["PodRunning p1 e2"]),
        ("replay alive=", ["PodTerminated p1 e2 Lost"]),
    ],
    "restart: a recorded exit reported after recovery wins over lost": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("started p1", ["PodRunning p1 e2"]),
        ("replay alive=; exited p1 0", ["PodSucceeded p1 e2 0"]),
    ],
    "restart: an end observed but not yet published is kept": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("started p1", ["PodRunning p1 e2"]),
        ("exited p1 2; restart alive=", ["PodFailed p1 e2 2 Error"]),
    ],
    "restart: the stop of a live pod is issued again": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("started p1; evict p1 n1", ["Stop p1 e2 30", "PodRunning p1 e2"]),
        ("restart alive=p1", ["Stop p1 e2 30"]),
        ("stopped p1", ["PodTerminated p1 e2 Evicted"]),
    ],
    "duplicate and stale reports change nothing": [
        ("create p1; bind p1 n1", ["Start p1 e2"]),
        ("started p1; started p1", ["PodRunning p1 e2"]),
        ("exited p1 0; exited p1 1; stopped p1", ["PodSucceeded p1 e2 0"]),
        ("exited p1 0 run=e2; stopped p1 run=e2", []),
    ],
}


@pytest.mark.parametrize("steps", CASES.values(), ids=CASES.keys())
def test_lifecycle(steps: list[tuple[str, list[str]]]) -> None:
    agent = Agent()
    agent.cycle()
    for step, expected in steps:
        for command in step.split(";"):
            agent.command(command.strip())
        assert agent.cycle() == expected, step


def test_a_late_report_of_a_lost_run_does_not_take_the_spec_of_its_replacement() -> None:
    """The run's success is decided, then the binder's PodLost lands before it, then the pod's next
    generation is created, and only then the success (published before the agent folded the PodLost).
    The next generation, bound here, starts with its spec, and the old run's report changes nothing."""
    agent = Agent()
    agent.cycle()
    for command in ("create p1", "bind p1 n1"):
        agent.command(command)
    assert agent.cycle() == ["Start p1 e2"]
    agent.command("started p1")
    agent.command("exited p1 0")
    late = [o for o in agent.core.reconcile(agent.state, 200.0) if o.type == "PodSucceeded"]
    agent.command("lost p1 n1")
    agent.command("create p1")
    for output in late:
        agent.append(output.type, output.kind, output.name, output.plain_payload, output.causation_id)
    agent.command("bind p1 n1")
    assert agent.cycle() == ["Start p1 e6"]
    assert agent.state.runs["default/p1"].published == ""


def test_orphan_found_alive_after_restart_is_stopped() -> None:
    agent = Agent()
    for command in ("create p1", "bind p1 n1"):
        agent.command(command)
    agent.cycle()
    agent.state = agent.core.recover(agent.state, {"default/p1": "e2", "default/gone": "old-run"})
    assert agent.cycle() == ["Stop gone old-run 30", "PodRunning p1 e2"]
    agent.state = agent.core.observe(agent.state, Observation("default/gone", "old-run", "stopped"), 1.0)
    assert agent.state.orphans == {}


def test_nodes_are_registered_once_and_again_when_their_configuration_changes() -> None:
    agent = Agent(nodes=(node("n1"), node("n2")))
    first = agent.core.reconcile(agent.state, 0.0)
    assert [(o.type, o.kind, o.namespace, o.name) for o in first] == [
        ("NodeRegistered", "node", None, "n1"),
        ("NodeRegistered", "node", None, "n2"),
    ]
    assert first[0].payload == payloads.NodeRegistered(object=encode_object(node("n1")))
    assert [o.id for o in agent.core.reconcile(agent.state, 1.0)] == [o.id for o in first]  # deterministic
    agent.cycle()
    assert agent.core.reconcile(agent.state, 2.0) == []

    bigger = NodeAgentCore("a1", (node("n1", Resources.parse({"cpu": "8"})), node("n2")))
    state = bigger.load(agent.core.dump(agent.state))
    again = bigger.reconcile(state, 3.0)
    assert [o.name for o in again] == ["n1"]
    assert again[0].id != first[0].id


def test_outputs_carry_the_run_and_the_job() -> None:
    agent = Agent()
    agent.command("create p1 job=train")
    agent.command("bind p1 n1")
    agent.cycle()
    agent.command("started p1")
    (running,) = agent.core.reconcile(agent.state, 5.0)
    assert running.type == "PodRunning"
    assert (running.namespace, running.name, running.causation_id) == ("default", "p1", "e2")
    assert running.correlation_id == "default/train"
    assert running.payload == payloads.PodRunning(node="n1", started_at=100.0)
    assert running.expected_last_subject_seq is None


def test_each_agent_has_its_own_checkpoint_key() -> None:
    assert NodeAgentCore("a1", ()).name != NodeAgentCore("a2", ()).name


def test_dump_and_load_keep_everything() -> None:
    agent = Agent()
    for step in ("create p1 grace=7", "create p2", "create p3", "bind p1 n1", "bind p2 n2", "bind p3 n9"):
        agent.command(step)
    agent.cycle()
    agent.command("started p1")
    agent.command("evict p1 n1")
    agent.command("exited p2 4")
    agent.command("started p9 run=x")  # an orphan
    blob = agent.core.dump(agent.state)
    loaded = agent.core.load(blob)
    assert loaded == agent.state
    assert agent.core.dump(loaded) == blob
    assert agent.core.plan_actions(loaded)[1] == [
        Stop("default/p1", "e4", 7.0),
        Stop("default/p9", "x", 30.0),
    ]
