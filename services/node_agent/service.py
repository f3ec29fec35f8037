"""The node agent service: the node agent's core on the event-sourced loop, driving a runtime.

Start-up follows the restart rule of core/core.py: the loop replays the log (from the checkpoint, if any);
`after_replay` asks the runtime which runs are alive and folds them with `recover`, then folds every
observation the runtime has queued; only then comes the first reconcile, and after every reconcile
`after_reconcile` takes the core's runtime actions (`plan_actions`) and performs them, a Start with the
environment and files of the job's plugins (the ssh plugin's key pair as admission wrote it to the log,
opened with the agent's secrets key: a pod whose pair cannot be opened fails to start, reason StartError).
Runtime reports arriving later are folded as they come. Beside the loop run the heartbeats (heartbeat.py),
the usage samples (usage/publisher.py) and the logs API (logs_api.py).

There is no leader election: each agent owns its nodes (one agent per node set and data dir), and its
checkpoint key is its core's name, `node-agent.<agent>`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import structlog
from opentelemetry.trace import Tracer

from contracts.codec import decode
from contracts.job_plugins import pod_environment, ssh
from contracts.job_shape import JOB_NAME
from contracts.objects import Pod
from services.node_agent.agent_core import AgentCore, AgentView, SecretNotOpened
from services.node_agent.config import NodeAgentConfig, agent_nodes
from services.node_agent.core.core import NodeAgentCore
from services.node_agent.core.state import ENDED, EXITED, LOST, STARTED, Observation, RuntimeAction, Start
from services.node_agent.heartbeat import send_heartbeats
from services.node_agent.logs_api import PodLogs, serve_logs
from services.node_agent.runtime import workdir
from services.node_agent.runtime.base import Runtime
from services.node_agent.runtime.process import START_ERROR, ProcessRuntime
from services.node_agent.runtime.sim import SimRuntime
from services.node_agent.ssh_keys import prepare_private_files
from services.node_agent.usage.process_usage import ProcessUsageSource
from services.node_agent.usage.publisher import UsageMetrics, publish_usage
from services.node_agent.usage.sources import SimUsageSource, UsageSource
from services.node_agent.usage.window import UsageWindow
from shared.bus.jetstream import Bus
from shared.runner import EventSourcedService
from shared.security.secret_keys import load_private_key
from shared.service import connect_bus, connect_etcd
from shared.store.etcd import Etcd
from shared.telemetry.metrics import Registry, default_registry
from shared.telemetry.tracing import JOB_ATTRIBUTE, POD_ATTRIBUTE, extract_context

log = structlog.get_logger(__name__)
T = TypeVar("T")


class NodeAgentService(EventSourcedService[AgentView]):
    """`data_dir` is the process runtime's (plugin files and logs live there); None for a runtime that
    writes no files and keeps no logs (sim)."""

    def __init__(
        self,
        core: AgentCore,
        runtime: Runtime,
        bus: Bus,
        etcd: Etcd,
        config: NodeAgentConfig,
        *,
        data_dir: Path | None,
        registry: Registry | None = None,
        tracer: Tracer | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        registry = registry or default_registry()
        super().__init__(core, bus, etcd, config, registry=registry, tracer=tracer, clock=clock)
        self.agent_core = core
        self.runtime = runtime
        self.agent_config = config
        self.data_dir = None if data_dir is None else data_dir.resolve()
        agent = config.agent
        # counted when scraped: counting the runs after every reconcile cost O(runs) per batch
        registry.scraped(
            "kubelet_running_pods", "Pods whose containers run (kubelet's name)", ("agent",)
        ).source(lambda: [((agent,), self._running_count())])
        actions = registry.counter(
            "lahar_node_agent_runtime_actions_total", "Runtime commands issued", ("agent", "action")
        )
        self.actions = {kind: actions.labels(agent, kind) for kind in ("start", "stop")}
        self.heartbeats = registry.counter(
            "lahar_node_agent_heartbeats_total", "Node heartbeats published", ("agent",)
        ).labels(agent)
        self.usage_metrics = UsageMetrics(registry, agent)

    # --- lifecycle --------------------------------------------------------------------------------
    async def serve(self) -> None:
        try:
            await super().serve()
        finally:
            await self.runtime.close()  # stops watching; the runs go on for the next agent to adopt

    def health(self) -> dict[str, Any]:
        return {
            **super().health(),
            "runtime": self.agent_config.runtime,
            "nodes": len(self.agent_core.inner.nodes),
            # nodes whose current registration is in the log (the binder and schedulers know them)
            "nodes_registered": self.agent_core.inner.registered_count(self.state.agent),
            "runs": len(self.state.agent.runs),
        }

    async def idle(self) -> bool:
        return self.runtime.observations.empty() and await super().idle()

    def extra_tasks(self) -> list[Coroutine[Any, Any, None]]:
        return [
            self._follow_runtime(),
            send_heartbeats(
                self.bus.nc,
                list(self.agent_core.inner.nodes),
                self.agent_config.agent,
                self.agent_config.heartbeat_interval_s,
                self.clock,
                self.stopping,
                on_sent=self.heartbeats.inc,
            ),
            self._publish_usage(),
            serve_logs(self.bus.nc, self.pod_logs, self.stopping),
        ]

    def _publish_usage(self) -> Coroutine[Any, Any, None]:
        period_s, window_s = self.agent_config.usage_timing_s()
        return publish_usage(
            self.bus.nc,
            self.agent_config.agent,
            self.usage_source(),
            UsageWindow(window_s),
            period_s,
            self.clock,
            self.stopping,
            self.usage_metrics,
        )

    def usage_source(self) -> UsageSource:
        """The sim runtime's pods use what they say; the process runtime's are measured (docs/usage.md)."""
        if isinstance(self.runtime, ProcessRuntime):
            node = next(iter(self.agent_core.inner.nodes))
            return ProcessUsageSource(node, self.runtime.process_roots)
        return SimUsageSource(list(self.agent_core.inner.nodes), self._running_pods)

    def _running_pods(self) -> list[tuple[str, Pod]]:
        return [
            (run.node, run.pod)
            for run in self.state.agent.runs.values()
            if run.observed == STARTED and run.pod is not None
        ]

    def _running_count(self) -> int:
        return sum(run.observed == STARTED for run in self.state.agent.runs.values())

    # --- the hooks of the loop --------------------------------------------------------------------
    async def after_replay(self) -> None:
        alive = await self.runtime.running()
        self.fold(lambda state: self.agent_core.recover(state, alive))
        drained = self._drain_runtime([])
        log.info("adopted the runtime's runs", alive=len(alive), reports=drained)

    async def after_reconcile(self) -> None:
        self.state, actions = self.agent_core.plan_actions(self.state)
        if not actions:
            return
        # counted and logged per batch: an increment, or a call of a module's logger (bound anew at every
        # call), costs more than the comparison
        starts = sum(isinstance(action, Start) for action in actions)
        self.actions["start"].inc(starts)
        self.actions["stop"].inc(len(actions) - starts)
        log.debug("runtime actions", starts=starts, pods=[action.pod for action in actions])
        for action in actions:
            await self._perform(action)
        # a runtime that reports at once (sim) has queued its reports: they are folded now, together, and
        # the next round of the loop reconciles them in one publish
        self._drain_runtime([])

    # --- the runtime ------------------------------------------------------------------------------
    async def _follow_runtime(self) -> None:
        """Fold the runtime's reports as they come, all those queued at once in one fold: runs that end
        together (a gang's timers) cost one wake-up of the loop, one reconcile and one publish."""
        observations = self.runtime.observations
        while (first := await self._unless_stopping(observations.get())) is not None:
            self._drain_runtime([first])

    def _drain_runtime(self, observations: list[Observation]) -> int:
        """Fold `observations` and every report the runtime has queued; returns how many were folded."""
        queued = self.runtime.observations
        while not queued.empty():
            observations.append(queued.get_nowait())
        if observations:
            self._observed(observations)
        return len(observations)

    def _observed(self, observations: list[Observation]) -> None:
        now = self.clock()

        def change(state: AgentView) -> AgentView:
            for observation in observations:
                state = self.agent_core.observe(state, observation, now)
            return state

        self.fold(change, keys=[observation.pod for observation in observations])

    async def _unless_stopping(self, awaitable: Awaitable[T]) -> T | None:
        """The awaitable's result, or None once the service is stopping."""
        work = asyncio.ensure_future(awaitable)
        stop = asyncio.ensure_future(self.stopping.wait())
        try:
            await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if work.done():
            return work.result()
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await work
        return None

    async def _perform(self, action: RuntimeAction) -> None:
        """Issue one runtime command in a span that joins the trace of the event that decided it (when a
        span is recorded, or something under it may log with its trace id)."""
        kind = "start" if isinstance(action, Start) else "stop"
        if not self.publisher.records and self.data_dir is None:
            # nobody sees the span, and nothing under it logs (the sim runtime, no plugin files) to
            # carry its trace id: no context to parse, no span to make
            await self._issue(action)
            return
        traceparent = self.state.traces.get(action.run_id)
        context = extract_context({"traceparent": traceparent}) if traceparent else None
        attributes = {POD_ATTRIBUTE: action.pod, "lahar.run.id": action.run_id}
        if isinstance(action, Start):
            job = action.spec.meta.annotations.get(JOB_NAME)
            if job:
                attributes[JOB_ATTRIBUTE] = f"{action.spec.meta.namespace}/{job}"
        with self.tracer.start_as_current_span(f"{kind} pod", context=context, attributes=attributes):
            await self._issue(action)

    async def _issue(self, action: RuntimeAction) -> None:
        if not isinstance(action, Start):
            await self.runtime.stop(action.pod, action.run_id, action.grace_s)
            return
        try:
            env, files = await self._plugin_environment(action)
        except SecretNotOpened as exc:
            # the pod fails as one the runtime cannot start, with the reason in its PodFailed
            log.error("cannot start the pod", pod=action.pod, error=str(exc))
            self._observed(
                [Observation(action.pod, action.run_id, EXITED, START_ERROR, "StartError", str(exc))]
            )
            return
        await self.runtime.start(action.spec, action.run_id, env=env, files=files)

    async def _plugin_environment(self, start: Start) -> tuple[dict[str, str], dict[str, bytes]]:
        """What the job's plugins give the pod; nothing for a runtime that ignores env and files. A pod
        whose job has no ssh key pair in the log starts without one (its ssh then fails; the log says
        why); SecretNotOpened when the job's pair is in the log but cannot be opened."""
        job = self.agent_core.job_of(self.state, start.spec)
        if job is None or self.data_dir is None:
            return {}, {}
        pod_dir = workdir.pod_dir(self.data_dir, start.pod)
        keys = self.agent_core.ssh_keys_of(self.state, job)
        if keys is None and ssh.needs_key_pair(job):
            log.error("no ssh key pair for the pod's job in the log", pod=start.pod, job=job.meta.key)
        try:
            prepare_private_files(job, pod_dir)
        except OSError as exc:
            log.error("cannot prepare the pod's ssh files", pod=start.pod, error=str(exc))
        return pod_environment(job, start.spec, str(pod_dir), ssh_keys=keys)

    # --- the logs API -----------------------------------------------------------------------------
    def pod_logs(self, key: str) -> PodLogs | None:
        """What the logs API may say about a pod: a pod this agent runs, or one whose directory (and run
        record) the process runtime kept after it ended."""
        run = self.state.agent.runs.get(key)
        if run is not None and run.pod is not None:
            done = run.observed in ENDED or run.observed == LOST
            return PodLogs(self._pod_dir(key), _containers(run.pod), done)
        directory = self._pod_dir(key)
        record = None if directory is None else workdir.read_record(directory)
        if record is None:
            return None
        try:
            pod = decode(Pod, record.pod)
        except ValueError:
            return None
        return PodLogs(directory, _containers(pod), done=record.outcome is not None)

    def _pod_dir(self, key: str) -> Path | None:
        if self.data_dir is None:
            return None
        try:
            return workdir.pod_dir(self.data_dir, key)
        except ValueError:
            return None


def _containers(pod: Pod) -> tuple[str, ...]:
    return tuple(c.name for c in (*pod.spec.containers, *pod.spec.init_containers))


def make_service(
    config: NodeAgentConfig,
    bus: Bus,
    etcd: Etcd,
    *,
    registry: Registry | None = None,
    tracer: Tracer | None = None,
) -> NodeAgentService:
    nodes = agent_nodes(config)
    secrets_key = load_private_key(config.secrets_key) if config.secrets_key else None
    inner = NodeAgentCore(config.agent, nodes, default_grace_s=config.default_grace_s)
    core = AgentCore(inner, secrets_key)
    runtime: Runtime
    data_dir: Path | None
    if config.runtime == "sim":
        runtime, data_dir = SimRuntime(time_scale=config.time_scale), None
    else:
        data_dir = Path(config.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        runtime = ProcessRuntime(data_dir)
    return NodeAgentService(
        core, runtime, bus, etcd, config, data_dir=data_dir, registry=registry, tracer=tracer
    )


async def build(config: NodeAgentConfig, stack: contextlib.AsyncExitStack) -> NodeAgentService:
    """The factory `python -m services.node_agent` runs (shared.service.run_main)."""
    bus = await connect_bus(config, stack, name=f"node-agent-{config.agent}")
    etcd = await connect_etcd(config, stack)
    return make_service(config, bus, etcd)
