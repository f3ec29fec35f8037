"""The pod a node agent runs is the pod its PodCreated carried, bound to the node its PodBound named: the
agent keeps the PodCreated's object and decodes it when the pod is bound to one of its nodes, the spec and
status shared between the pods that carry the same bytes (shared/pod_decode.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from test_agent_core import Agent, pod

from contracts.codec import encode_object
from shared.bus.envelope import Envelope
from shared.bus.subjects import EventSubject
from shared.runner.events import to_event
from shared.runner_types import Event


def test_a_bound_pod_is_its_created_pod_on_the_node() -> None:
    agent = Agent()
    created = pod("p1", grace=7, job="j")
    agent.append("PodCreated", "pod", "p1", {"object": encode_object(created)})
    agent.append("PodBound", "pod", "p1", {"node": "n2", "plan": "p"})
    assert agent.state.runs["default/p1"].pod == replace(created, spec=replace(created.spec, node_name="n2"))


def read_from_the_bus(seq: int, event_type: str, name: str, payload: dict[str, Any]) -> Event:
    """An event as the service loop reads it: encoded, sent, decoded (its payload left as its bytes)."""
    env = Envelope.create(
        event_type, time=float(seq), producer="tests", correlation_id="default/j", payload=payload
    )
    ref = EventSubject("pod", "tests", event_type, "default", name)
    return to_event(seq, ref, Envelope.decode(env.encode()))


def test_pods_bound_here_share_the_spec_and_status_their_bytes_name() -> None:
    agent = Agent()
    created = [pod(f"p{i}", grace=7, job="j") for i in range(3)]
    seq = 0
    for p in created:
        seq += 1
        agent.state = agent.core.apply(
            agent.state, read_from_the_bus(seq, "PodCreated", p.meta.name, {"object": encode_object(p)})
        )
    bind = dict(zip(("p0", "p1", "p2"), ("n1", "n2", "n1"), strict=True))
    for name in ("p0", "p1"):
        seq += 1
        bound = read_from_the_bus(seq, "PodBound", name, {"node": bind[name], "plan": "p"})
        agent.state = agent.core.apply(agent.state, bound)
    assert agent.core.pod_decoder.decoded == 2  # one spec and one status for both pods
    # restored from a checkpoint, the bytes are gone: the pod is decoded in full, to the same pod
    agent.state = agent.core.load(agent.core.dump(agent.state))
    assert agent.state.spec_bytes == {}
    seq += 1
    agent.state = agent.core.apply(
        agent.state, read_from_the_bus(seq, "PodBound", "p2", {"node": "n1", "plan": "p"})
    )
    for p in created:
        run = agent.state.runs[f"default/{p.meta.name}"]
        assert run.pod == replace(p, spec=replace(p.spec, node_name=bind[p.meta.name]))
    assert agent.core.pod_decoder.decoded == 2
