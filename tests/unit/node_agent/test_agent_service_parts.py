"""The pure parts of the node agent service: the jobs and traces its core folds beside NodeAgentCore's
state, the logs API's replies, and the heartbeat format."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgpack
import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from contracts.codec import encode_object
from contracts.job_plugins.ssh import KeyPair
from contracts.job_shape import default_job
from contracts.objects import Container, Job, Node, ObjectMeta, PodSpec, PodTemplate, TaskSpec, frozen_map
from contracts.resources import Resources
from services.job_controller.core.expand import pod_for
from services.node_agent.agent_core import AgentCore, AgentView, SecretNotOpened
from services.node_agent.core.core import NodeAgentCore
from services.node_agent.logs_api import PodLogs, answer, read_chunk
from shared.bus.heartbeats import (
    Heartbeat,
    decode_heartbeat,
    encode_heartbeat,
    heartbeat_subject,
)
from shared.bus.subjects import logs_subject, pod_of_logs_subject
from shared.runner_types import Event
from shared.security.sealing import seal_job_secret

TRACE_A = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TRACE_B = "00-1bf7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01"


def make_job(name: str, **plugins: list[str]) -> Job:
    spec = PodSpec(containers=(Container("main", command=("true",)),))
    task = TaskSpec(name="worker", replicas=2, template=PodTemplate(spec=spec))
    return default_job(
        Job(
            meta=ObjectMeta(name=name),
            tasks=(task,),
            plugins=frozen_map({k: tuple(v) for k, v in plugins.items()}),
        )
    )


class Harness:
    def __init__(self, secrets_key: X25519PrivateKey | None = None) -> None:
        node = Node(meta=ObjectMeta(name="n1", namespace=""), allocatable=Resources.parse({"cpu": "4"}))
        self.core = AgentCore(NodeAgentCore("a1", (node,)), secrets_key)
        self.state: AgentView = self.core.initial()
        self.seq = 0

    def event(self, event_type: str, kind: str, name: str, payload: dict[str, Any], **fields: Any) -> Event:
        self.seq += 1
        event = Event(
            seq=self.seq,
            type=event_type,
            kind=kind,
            namespace="default",
            name=name,
            payload=payload,
            id=fields.pop("id", f"e{self.seq}"),
            time=float(self.seq),
            correlation_id=name,
            **fields,
        )
        self.state = self.core.apply(self.state, event)
        return event

    def job(self, event_type: str, job: Job) -> None:
        self.event(event_type, "job", job.meta.name, {"object": encode_object(job)})


def test_only_jobs_with_plugins_are_kept_until_deleted_or_updated_without_them() -> None:
    agent = Harness()
    agent.job("JobSubmitted", make_job("plain"))
    agent.job("JobSubmitted", make_job("hosts", svc=[]))
    assert set(agent.state.jobs) == {"default/hosts"}
    pod = pod_for(agent.state.jobs["default/hosts"], make_job("hosts").tasks[0], 0, created_at=0.0)
    assert agent.core.job_of(agent.state, pod) == make_job("hosts", svc=[])
    agent.job("JobUpdated", make_job("hosts"))
    assert agent.state.jobs == {}
    agent.job("JobUpdated", make_job("hosts", env=[]))
    agent.event("JobDeleted", "job", "hosts", {})
    assert agent.state.jobs == {}


def secret(uid: str, private: str = "PRIVATE", public: str = "ssh-rsa AAAA") -> dict[str, Any]:
    return {"name": "mpi-ssh", "uid": uid, "data": {"id_rsa": private, "id_rsa.pub": public}}


def with_uid(job: Job, uid: str) -> Job:
    return replace(job, meta=replace(job.meta, uid=uid))


def test_a_jobs_ssh_pair_is_the_secret_of_its_incarnation_until_the_job_is_deleted() -> None:
    agent = Harness()
    job = with_uid(make_job("mpi", ssh=[]), "uid-1")
    agent.job("JobSubmitted", job)
    assert agent.core.ssh_keys_of(agent.state, job) is None  # no secret yet
    agent.event("JobSecretCreated", "job", "mpi", secret("uid-1", "KEY-1"))
    assert agent.core.ssh_keys_of(agent.state, job) == KeyPair(b"KEY-1", b"ssh-rsa AAAA")
    assert agent.core.ssh_keys_of(agent.state, with_uid(job, "uid-2")) is None  # another incarnation's
    agent.event("JobSecretCreated", "job", "mpi", {"name": "mpi-ssh", "uid": "uid-1", "data": {"token": "x"}})
    assert agent.core.ssh_keys_of(agent.state, job) == KeyPair(b"KEY-1", b"ssh-rsa AAAA")  # not an ssh pair
    agent.event("JobCleanedUp", "job", "mpi", {"incarnation": 1})
    assert agent.core.ssh_keys_of(agent.state, job) is None and agent.state.secrets == {}


def sealed(key: X25519PrivateKey, job: str, uid: str, private: str = "PRIVATE KEY 1") -> dict[str, Any]:
    data = {"id_rsa": private, "id_rsa.pub": "ssh-rsa AAAA"}
    secret = seal_job_secret(key.public_key(), "default", job, uid, f"{job}-ssh", data)
    return msgspec.to_builtins(secret)  # type: ignore[no-any-return]


def test_a_sealed_pair_is_kept_sealed_and_opened_with_the_agents_key() -> None:
    key = X25519PrivateKey.generate()
    agent = Harness(key)
    job = with_uid(make_job("mpi", ssh=[]), "uid-1")
    agent.job("JobSubmitted", job)
    agent.event("JobSecretCreated", "job", "mpi", sealed(key, "mpi", "uid-1"))
    assert agent.core.ssh_keys_of(agent.state, job) == KeyPair(b"PRIVATE KEY 1", b"ssh-rsa AAAA")
    # neither the state nor the checkpoint holds the private key in plain text
    assert agent.state.secrets["default/mpi"].data == {}
    assert b"PRIVATE KEY 1" not in agent.core.dump(agent.state)
    loaded = agent.core.load(agent.core.dump(agent.state))
    assert agent.core.ssh_keys_of(loaded, job) == KeyPair(b"PRIVATE KEY 1", b"ssh-rsa AAAA")


def test_a_secret_the_agent_cannot_open_is_refused_and_its_pods_are_told_why() -> None:
    agent = Harness(X25519PrivateKey.generate())
    job = with_uid(make_job("mpi", ssh=[]), "uid-1")
    agent.job("JobSubmitted", job)
    # sealed to the key of another run of the stack: the loop quarantines the event on this error
    with pytest.raises(
        SecretNotOpened, match="ssh key pair of Job default/mpi cannot be opened: sealed to key"
    ):
        agent.event("JobSecretCreated", "job", "mpi", sealed(X25519PrivateKey.generate(), "mpi", "uid-1"))
    # and the pods of the job fail to start with the same reason instead of starting without their pair
    with pytest.raises(SecretNotOpened, match="sealed to key sha256:"):
        agent.core.ssh_keys_of(agent.state, job)


def test_a_sealed_secret_copied_onto_another_job_does_not_open() -> None:
    key = X25519PrivateKey.generate()
    agent = Harness(key)
    with pytest.raises(SecretNotOpened, match=r"Job default/victim .*authentication failed"):
        agent.event("JobSecretCreated", "job", "victim", sealed(key, "mpi", "uid-1"))


def test_without_a_secrets_key_a_sealed_secret_is_refused_and_a_plain_one_read() -> None:
    agent = Harness()
    with pytest.raises(SecretNotOpened, match="this reader has no secrets key"):
        agent.event("JobSecretCreated", "job", "mpi", sealed(X25519PrivateKey.generate(), "mpi", "uid-1"))
    agent.event("JobSecretCreated", "job", "mpi", secret("uid-1", "KEY-1"))
    job = with_uid(make_job("mpi", ssh=[]), "uid-1")
    assert agent.core.ssh_keys_of(agent.state, job) == KeyPair(b"KEY-1", b"ssh-rsa AAAA")


def test_a_checkpoint_from_before_sealing_is_still_read() -> None:
    agent = Harness()
    job = with_uid(make_job("mpi", ssh=[]), "uid-1")
    old = msgpack.unpackb(agent.core.dump(agent.state), raw=False)
    old["secrets"] = {"default/mpi": ["uid-1", {"id_rsa": "KEY-0", "id_rsa.pub": "ssh-rsa AAAA"}]}
    loaded = agent.core.load(msgpack.packb(old, use_bin_type=True))
    assert agent.core.ssh_keys_of(loaded, job) == KeyPair(b"KEY-0", b"ssh-rsa AAAA")


def test_a_run_keeps_the_trace_of_the_latest_decision_about_it_until_it_ends() -> None:
    agent = Harness()
    job = make_job("j")
    pod = pod_for(job, job.tasks[0], 0, created_at=0.0)
    name = pod.meta.name
    agent.event("PodCreated", "pod", name, {"object": encode_object(pod)})
    bound = agent.event("PodBound", "pod", name, {"node": "n1", "plan": "p"}, traceparent=TRACE_A)
    assert agent.state.traces == {bound.id: TRACE_A}
    agent.event("PodEvicting", "pod", name, {"node": "n1", "reason": "r", "plan": "p"}, traceparent=TRACE_B)
    assert agent.state.traces == {bound.id: TRACE_B}
    agent.event("PodTerminated", "pod", name, {"node": "n1", "reason": "Evicted"}, causation_id=bound.id)
    assert agent.state.traces == {}
    agent.event("PodBound", "pod", "elsewhere", {"node": "n9", "plan": "p"}, traceparent=TRACE_A)
    assert agent.state.traces == {}  # not this agent's node


def test_dump_and_load_keep_the_agent_state_the_jobs_the_secrets_and_the_traces() -> None:
    agent = Harness()
    agent.job("JobSubmitted", make_job("hosts", svc=[], env=[]))
    job = make_job("hosts", svc=[], env=[])
    pod = pod_for(job, job.tasks[0], 1, created_at=0.0)
    agent.event("PodCreated", "pod", pod.meta.name, {"object": encode_object(pod)})
    agent.event("PodBound", "pod", pod.meta.name, {"node": "n1", "plan": "p"}, traceparent=TRACE_A)
    agent.event("JobSecretCreated", "job", "hosts", secret("uid-1"))
    loaded = agent.core.load(agent.core.dump(agent.state))
    assert loaded == agent.state and loaded.secrets
    assert agent.core.name == "node-agent.a1"


def pod_logs(tmp_path: Path, content: bytes | None, done: bool = False) -> PodLogs:
    if content is not None:
        (tmp_path / "main.log").write_bytes(content)
    return PodLogs(tmp_path, ("main", "init"), done)


@pytest.mark.parametrize(
    ("content", "request_", "expected"),
    [
        (b"hello\n", {}, {"data": "hello\n", "offset": 6, "done": False}),
        (b"hello\nworld\n", {"offset": 6}, {"data": "world\n", "offset": 12, "done": False}),
        (b"hello\n", {"container": "main", "offset": 6}, {"data": "", "offset": 6, "done": False}),
        (None, {"container": "init"}, {"data": "", "offset": 0, "done": False}),  # not started yet
        (b"x", {"container": "sidecar"}, {"error": "no container 'sidecar' in the pod (it has main, init)"}),
        (b"x", {"offset": -1}, {"error": "offset must be >= 0, got -1"}),
        (b"x", ["offset"], {"error": 'expected JSON {"container": name (optional), "offset": int}'}),
    ],
    ids=["default-container", "from-offset", "at-the-end", "no-log-yet", "unknown", "negative", "not-a-map"],
)
def test_logs_answers(tmp_path: Path, content: bytes | None, request_: Any, expected: dict[str, Any]) -> None:
    assert answer(pod_logs(tmp_path, content), json.dumps(request_).encode()) == expected


def test_a_sim_pod_has_an_empty_log_and_done_is_passed_through(tmp_path: Path) -> None:
    assert answer(PodLogs(None, ("main",), True), b"") == {"data": "", "offset": 0, "done": True}


def test_a_chunk_never_splits_a_character(tmp_path: Path) -> None:
    path = tmp_path / "main.log"
    path.write_bytes("aé€😀".encode())  # 1 + 2 + 3 + 4 bytes
    assert read_chunk(path, 0, limit=2) == ("a", 1)
    assert read_chunk(path, 1, limit=4) == ("é", 3)
    assert read_chunk(path, 3, limit=6) == ("€", 6)
    assert read_chunk(path, 6, limit=4) == ("😀", 10)
    assert read_chunk(path, 0, limit=100) == ("aé€😀", 10)


@pytest.mark.parametrize(("namespace", "pod"), [("default", "job-worker-0"), ("team.a", "p*1")])
def test_logs_subjects_round_trip(namespace: str, pod: str) -> None:
    assert pod_of_logs_subject(logs_subject(namespace, pod)) == f"{namespace}/{pod}"


def test_heartbeat_format() -> None:
    assert heartbeat_subject("agent-1") == "lahar.hb.agent-1"
    beat = Heartbeat("agent-1", 1700000000.5, ("n1", "n2"))
    expected = {"agent": "agent-1", "time": 1700000000.5, "nodes": ["n1", "n2"]}
    assert json.loads(encode_heartbeat(beat)) == expected
    assert decode_heartbeat(encode_heartbeat(beat)) == beat
    with pytest.raises(ValueError):
        decode_heartbeat(b'{"agent": "agent-1"}')
