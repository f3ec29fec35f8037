"""The node agent's core as the service runs it: NodeAgentCore plus two things only the shell needs.

- The jobs whose pods get something from Volcano's job plugins (`spec.plugins` not empty), as last
  submitted or updated, and the ssh key pairs admission generated for them (JobSecretCreated): the agent
  computes a pod's plugin environment and files when it starts the pod. A secret is kept as the log has
  it, sealed to the node agents (shared/security/sealing.py), so neither the state nor its checkpoint in
  etcd holds a private key in plain text; it is opened, with the agent's secrets key, when a pod of the
  job starts. A secret this agent cannot open (another key, tampered, another job's) raises
  SecretNotOpened when folded, so the loop quarantines the event with the reason; it stays in the state
  (deliberately: the partial apply of docs/reliability.md), so the job's pods fail to start saying why.
- Per run, the trace context of the latest event that decided its fate (its PodBound, then the
  PodEvicting or PodDeletionRequested that stops it), so the runtime action joins that trace.

Both are folded from the log like everything else, so they survive restarts with the checkpoint. Pure:
no I/O, time comes in as arguments.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack
import msgspec
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from contracts import payloads
from contracts.codec import decode, encode
from contracts.job_plugins.ssh import KeyPair, keys_from_secret
from contracts.job_shape import JOB_NAME
from contracts.objects import Job, Pod
from contracts.payloads import ObjectPayload
from services.node_agent.core.core import NodeAgentCore
from services.node_agent.core.state import AgentState, Observation, RuntimeAction
from shared.runner_types import Event, Output
from shared.security.sealing import SealError, open_job_secret

_STOP_CAUSES = ("PodEvicting", "PodDeletionRequested")
_JOB_EVENTS = frozenset({"JobSubmitted", "JobUpdated", "JobDeleted", "JobCleanedUp", "JobSecretCreated"})


@dataclass(slots=True)
class AgentView:
    agent: AgentState
    jobs: dict[str, Job] = field(default_factory=dict)  # job key -> the job, for jobs with plugins
    # job key -> its ssh secret as the log has it (sealed), of the job incarnation the payload's uid names
    secrets: dict[str, payloads.JobSecretCreated] = field(default_factory=dict)
    traces: dict[str, str] = field(default_factory=dict)  # run id -> traceparent of its latest decision


class AgentCore:
    """The Core (shared.runner_types) the node agent service runs; its name (the checkpoint key) is the
    inner core's, `node-agent.<agent>`. `secrets_key` opens the job secrets sealed to the node agents
    (None: an open stack, where only plain-text secrets can be read)."""

    def __init__(self, inner: NodeAgentCore, secrets_key: X25519PrivateKey | None = None) -> None:
        self.inner = inner
        self.secrets_key = secrets_key
        self.name = inner.name
        self.reads = inner.reads | _JOB_EVENTS

    def initial(self) -> AgentView:
        return AgentView(self.inner.initial())

    def apply(self, state: AgentView, event: Event) -> AgentView:
        key = f"{event.namespace}/{event.name}"
        if event.kind == "job":
            if event.type == "JobSecretCreated":
                self._fold_secret(state, event, key)
            else:
                _fold_job(state, event, key)
            return state
        before = state.agent.runs.get(key) if event.kind == "pod" else None
        state.agent = self.inner.apply(state.agent, event)
        if event.kind != "pod":
            return state
        after = state.agent.runs.get(key)
        if before is not None and (after is None or after.run_id != before.run_id):
            state.traces.pop(before.run_id, None)
        decided = event.type == "PodBound" or (event.type in _STOP_CAUSES and after is not None)
        if after is not None and decided and event.traceparent:
            state.traces[after.run_id] = event.traceparent
        return state

    def touched(self, state: AgentView, event: Event) -> list[str]:
        return self.inner.touched(state.agent, event)

    def due(self, state: AgentView, now: float) -> list[str]:
        return self.inner.due(state.agent, now)

    def reconcile(self, state: AgentView, now: float, keys: Collection[str] | None = None) -> list[Output]:
        return self.inner.reconcile(state.agent, now, keys)

    def dump(self, state: AgentView) -> bytes:
        data: dict[str, Any] = {
            "agent": self.inner.dump(state.agent),
            "jobs": {key: encode(job) for key, job in state.jobs.items()},
            "secrets": {key: msgspec.to_builtins(secret) for key, secret in state.secrets.items()},
            "traces": state.traces,
        }
        return msgpack.packb(data, use_bin_type=True)

    def load(self, data: bytes) -> AgentView:
        raw = msgpack.unpackb(data, raw=False)
        return AgentView(
            agent=self.inner.load(raw["agent"]),
            jobs={key: decode(Job, job) for key, job in raw["jobs"].items()},
            secrets=_secrets(raw.get("secrets", {})),
            traces=dict(raw["traces"]),
        )

    # --- the runtime side (see NodeAgentCore) -------------------------------------------------------
    def observe(self, state: AgentView, observation: Observation, now: float) -> AgentView:
        state.agent = self.inner.observe(state.agent, observation, now)
        return state

    def recover(self, state: AgentView, alive: Mapping[str, str]) -> AgentView:
        state.agent = self.inner.recover(state.agent, alive)
        return state

    def plan_actions(self, state: AgentView) -> tuple[AgentView, list[RuntimeAction]]:
        state.agent, actions = self.inner.plan_actions(state.agent)
        return state, actions

    # --- what the shell asks ----------------------------------------------------------------------
    def job_of(self, state: AgentView, pod: Pod) -> Job | None:
        """The pod's job if it has plugins (None: nothing to add to the pod)."""
        job = pod.meta.annotations.get(JOB_NAME)
        return state.jobs.get(f"{pod.meta.namespace}/{job}") if job else None

    def ssh_keys_of(self, state: AgentView, job: Job) -> KeyPair | None:
        """The key pair admission generated for this incarnation of the job, if any; SecretNotOpened
        when its secret cannot be opened with this agent's key."""
        secret = state.secrets.get(job.meta.key)
        if secret is None or secret.uid != job.meta.uid:
            return None
        return keys_from_secret(self._open(secret, job.meta.namespace, job.meta.name))

    def _fold_secret(self, state: AgentView, event: Event, key: str) -> None:
        secret = event.payload_as(payloads.JobSecretCreated)
        try:
            data = self._open(secret, event.namespace or "", event.name)
        except SecretNotOpened:
            state.secrets[key] = secret  # kept: the job's pods fail to start, saying why (see above)
            raise
        if keys_from_secret(data) is not None:  # a secret that holds no ssh pair is not the plugin's
            state.secrets[key] = secret

    def _open(self, secret: payloads.JobSecretCreated, namespace: str, job: str) -> dict[str, str]:
        try:
            return open_job_secret(self.secrets_key, namespace, job, secret)
        except SealError as exc:
            reason = f"the ssh key pair of Job {namespace}/{job} cannot be opened: {exc}"
            raise SecretNotOpened(reason) from exc


class SecretNotOpened(ValueError):
    """A job's secret this agent cannot open: the reason names the job and what is wrong."""


def _fold_job(state: AgentView, event: Event, key: str) -> None:
    jobs = state.jobs
    if event.type in ("JobDeleted", "JobCleanedUp"):
        jobs.pop(key, None)
        state.secrets.pop(key, None)
    elif event.type in ("JobSubmitted", "JobUpdated"):
        encoded = event.payload_as(ObjectPayload).object
        # most jobs have no plugins: skip decoding them, which dominates a long replay otherwise
        if not encoded.get("object", {}).get("plugins"):
            jobs.pop(key, None)
            return
        jobs[key] = decode(Job, encoded["object"])


def _secrets(raw: Mapping[str, Any]) -> dict[str, payloads.JobSecretCreated]:
    secrets = {}
    for key, secret in raw.items():
        if isinstance(secret, dict):
            secrets[key] = msgspec.convert(secret, payloads.JobSecretCreated)
        else:  # a checkpoint written before secrets were sealed: [uid, plain data]
            uid, data = secret
            secrets[key] = payloads.JobSecretCreated(name="", uid=uid, data=data)
    return secrets
