"""What one pod costs the node agent's shell and core does not grow with the runs and nodes it hosts
(docs/scaling.md, "Node agent"): the work of a binding (fold, reconcile, the Start the loop's hook
issues, the sim runtime's report folded, the PodRunning decided) and of a run's end (the report folded,
the PodSucceeded decided) makes the same number of Python function calls whether the agent runs 5 other
pods on 10 hollow nodes or 150 on 300. The service is built on a real bus and etcd but not started: the
loop's steps are driven one by one, so only the agent's own work is counted."""

from __future__ import annotations

import time
from collections.abc import Coroutine
from typing import Any

from support.events import EventLog
from support.work import calls

from contracts.objects import Container, ObjectMeta, Pod, PodSpec, frozen_map
from contracts.sim_annotations import SIM_DURATION
from contracts.typed_events import encode_payload
from services.node_agent.config import NodeAgentConfig
from services.node_agent.core.state import EXITED, Observation
from services.node_agent.service import NodeAgentService, make_service
from shared.bus.jetstream import Bus
from shared.runner_types import Event, Output
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry


def run_now(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine that never waits (the sim runtime's steps) to its end, here and now."""
    try:
        coroutine.send(None)
    except StopIteration:
        return
    coroutine.close()
    raise AssertionError("the coroutine waited")


def pod(name: str) -> Pod:
    meta = ObjectMeta(name=name, namespace="team-a", annotations=frozen_map({SIM_DURATION: "1h"}))
    return Pod(meta=meta, spec=PodSpec(containers=(Container("main", command=("run",)),)))


class Agent:
    """A sim agent's service with its state folded by hand, as the loop folds it."""

    def __init__(self, service: NodeAgentService) -> None:
        self.service = service
        self.log = EventLog(time_from_seq=True)

    def event(self, event_type: str, key: str, payload: dict[str, Any]) -> Event:
        return self.log.event(event_type, key, payload)

    def fold(self, event: Event) -> None:
        service = self.service
        service.state = service.core.apply(service.state, event)
        service._dirty.update(service.core.touched(service.state, event))

    def settle(self) -> list[Output]:
        """What the loop does after a batch: reconcile the keys touched, then its hook (the runtime's
        actions, and the reports a sim runtime gives at once); returns the reconcile's outputs."""
        service = self.service
        while not service._queue.empty():  # the wake-ups a fold gave the loop: this is that loop
            service._queue.get_nowait()
        keys, service._dirty = service._dirty, set()
        outputs = service.core.reconcile(service.state, time.time(), keys)
        run_now(service.after_reconcile())
        return outputs

    def bind(self, name: str, node: str) -> Event:
        created = self.log.created(pod(name))
        self.fold(created)
        self.settle()
        bound = self.event("PodBound", f"team-a/{name}", {"node": node, "plan": "p"})
        return bound

    def published(self, outputs: list[Output]) -> None:
        """The agent's outputs come back from the log, each caused by its run."""
        for output in outputs:
            self.log.seq += 1
            event = Event(
                seq=self.log.seq,
                type=output.type,
                kind=output.kind,
                namespace=output.namespace,
                name=output.name,
                payload=encode_payload(output.payload),
                id=output.id,
                time=float(self.log.seq),
                correlation_id=output.correlation_id,
                causation_id=output.causation_id,
            )
            self.fold(event)


async def agent_running(bus: Bus, etcd: Etcd, others: int, nodes: int) -> Agent:
    config = NodeAgentConfig(runtime="sim", sim_nodes=nodes, sim_prefix="hollow")
    agent = Agent(make_service(config, bus, etcd, registry=Registry()))
    for i in range(others):
        agent.fold(agent.bind(f"other-{i}", f"hollow-{i + 1}"))
        agent.settle()  # the Start, and the sim runtime's report folded
        agent.published(agent.settle())  # the PodRunning
        agent.settle()
    return agent


def start_work(agent: Agent) -> tuple[list[str], int]:
    """The calls of binding the target pod up to its PodRunning, which then comes back from the log."""
    bound = agent.bind("target", "hollow-0")

    def work() -> list[Output]:
        agent.fold(bound)
        agent.settle()  # nothing to publish yet; the hook starts the pod and folds its report
        return agent.settle()  # the report's PodRunning

    outputs, count = calls(work)
    agent.published(outputs)
    agent.settle()
    return [o.type for o in outputs], count


def end_work(agent: Agent) -> tuple[list[str], int]:
    """The calls of the target's end, reported by the runtime, up to its PodSucceeded."""
    run = agent.service.state.agent.runs["team-a/target"]
    agent.service.runtime.observations.put_nowait(Observation("team-a/target", run.run_id, EXITED, 0))

    def work() -> list[Output]:
        agent.service._drain_runtime([])
        return agent.settle()

    outputs, count = calls(work)
    return [o.type for o in outputs], count


async def test_a_pods_start_and_end_cost_the_same_with_5_or_150_other_runs(bus: Bus, etcd: Etcd) -> None:
    starts, ends = [], []
    for others, nodes in ((5, 10), (150, 300)):
        agent = await agent_running(bus, etcd, others, nodes)
        try:
            assert len(agent.service.state.agent.runs) == others
            starts.append(start_work(agent))
            ends.append(end_work(agent))
        finally:
            await agent.service.runtime.close()
    assert [types for types, _ in starts] == [["PodRunning"]] * 2
    assert [types for types, _ in ends] == [["PodSucceeded"]] * 2
    start_counts, end_counts = [count for _, count in starts], [count for _, count in ends]
    assert start_counts[0] > 0 and start_counts[1] == start_counts[0], f"start: {start_counts} calls"
    assert end_counts[0] > 0 and end_counts[1] == end_counts[0], f"end: {end_counts} calls"
