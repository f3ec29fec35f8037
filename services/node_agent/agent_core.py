"""The node agent's core as the service runs it: NodeAgentCore plus two things only the shell needs.

- The jobs whose pods get something from Volcano's job plugins (`spec.plugins` not empty), as last
  submitted or updated, and the ssh key pairs admission generated for them (JobSecretCreated): the agent
  computes a pod's plugin environment and files when it starts the pod.
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

from contracts import payloads
from contracts.codec import decode, encode
from contracts.objects import Job, Pod
from contracts.payloads import ObjectPayload
from services.job_controller.core.expand import JOB_NAME
from services.job_controller.core.plugins.ssh import KeyPair, keys_from_secret, secret_data
from services.node_agent.core.core import NodeAgentCore
from services.node_agent.core.state import AgentState, Observation, RuntimeAction
from shared.runner_types import Event, Output

_STOP_CAUSES = ("PodEvicting", "PodDeletionRequested")
_JOB_EVENTS = frozenset({"JobSubmitted", "JobUpdated", "JobDeleted", "JobCleanedUp", "JobSecretCreated"})


@dataclass(slots=True)
class AgentView:
    agent: AgentState
    jobs: dict[str, Job] = field(default_factory=dict)  # job key -> the job, for jobs with plugins
    secrets: dict[str, tuple[str, KeyPair]] = field(default_factory=dict)  # job key -> (job uid, pair)
    traces: dict[str, str] = field(default_factory=dict)  # run id -> traceparent of its latest decision


class AgentCore:
    """The Core (shared.runner_types) the node agent service runs; its name (the checkpoint key) is the
    inner core's, `node-agent.<agent>`."""

    def __init__(self, inner: NodeAgentCore) -> None:
        self.inner = inner
        self.name = inner.name
        self.reads = inner.reads | _JOB_EVENTS

    def initial(self) -> AgentView:
        return AgentView(self.inner.initial())

    def apply(self, state: AgentView, event: Event) -> AgentView:
        key = f"{event.namespace}/{event.name}"
        if event.kind == "job":
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
            "secrets": {key: [uid, secret_data(pair)] for key, (uid, pair) in state.secrets.items()},
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
        """The key pair admission generated for this incarnation of the job, if any."""
        secret = state.secrets.get(job.meta.key)
        return secret[1] if secret is not None and secret[0] == job.meta.uid else None


def _fold_job(state: AgentView, event: Event, key: str) -> None:
    jobs = state.jobs
    if event.type in ("JobDeleted", "JobCleanedUp"):
        jobs.pop(key, None)
        state.secrets.pop(key, None)
    elif event.type == "JobSecretCreated":
        secret = event.payload_as(payloads.JobSecretCreated)
        pair = keys_from_secret(secret.data)
        if pair is not None:
            state.secrets[key] = (secret.uid, pair)
    elif event.type in ("JobSubmitted", "JobUpdated"):
        encoded = event.payload_as(ObjectPayload).object
        # most jobs have no plugins: skip decoding them, which dominates a long replay otherwise
        if not encoded.get("object", {}).get("plugins"):
            jobs.pop(key, None)
            return
        jobs[key] = decode(Job, encoded["object"])


def _secrets(raw: Mapping[str, Any]) -> dict[str, tuple[str, KeyPair]]:
    secrets = {}
    for key, (uid, data) in raw.items():
        pair = keys_from_secret(data)
        if pair is not None:
            secrets[key] = (uid, pair)
    return secrets
