"""The queue-controller service: its core (services/queue_controller/core/) on the event loop, one leader
at a time (standbys follow the log), writing the read model of Queues, PriorityClasses and HyperNodes.

Run it with `python -m services.queue_controller --nats-url URL --etcd-endpoint HOST:PORT`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable

from opentelemetry.trace import Tracer

from contracts.events import QUEUE_CONTROLLER
from services.queue_controller.core.projection import Projected, ProjectedCore
from services.queue_controller.core.state import COUNTED_PHASES
from shared.bus.jetstream import Bus
from shared.runner import RunnerConfig
from shared.runner.read_model import ReadModelService
from shared.service import connect_bus, connect_etcd
from shared.store.etcd import Etcd
from shared.store.read_model import Write
from shared.telemetry.metrics import Gauge, Registry


@dataclasses.dataclass(frozen=True, kw_only=True)
class QueueControllerConfig(RunnerConfig):
    """lahar queue-controller: queue states (Open, Closing, Closed) and their PodGroup counts."""

    leader_election: bool = True  # a single writer; start more instances as hot standbys


class QueueControllerService(ReadModelService[Projected]):
    def __init__(
        self,
        bus: Bus,
        etcd: Etcd,
        config: QueueControllerConfig,
        *,
        registry: Registry | None = None,
        tracer: Tracer | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(ProjectedCore(), bus, etcd, config, registry=registry, tracer=tracer, clock=clock)
        # Volcano's controller gauges, volcano_queue_pod_group_<phase>_count{queue_name}, as published
        self._podgroup_counts: dict[str, Gauge] = {
            counter: self.registry.gauge(
                f"volcano_queue_pod_group_{counter}_count",
                f"PodGroups of a queue in phase {phase}",
                ("queue_name",),
            )
            for phase, counter in COUNTED_PHASES.items()
        }

    def written(self, write: Write, *, full: bool) -> None:
        if write.kind != "queue":
            return
        if write.object is None:  # the queue is gone: so are its series (Volcano's DeleteQueueMetrics)
            for gauge in self._podgroup_counts.values():
                with contextlib.suppress(KeyError):
                    gauge.remove(write.name)
            return
        status = write.object["object"]["status"]
        for counter, gauge in self._podgroup_counts.items():
            gauge.labels(write.name).set(status.get(counter, 0))


async def build(config: QueueControllerConfig, stack: contextlib.AsyncExitStack) -> QueueControllerService:
    bus = await connect_bus(config, stack, name=QUEUE_CONTROLLER)
    etcd = await connect_etcd(config, stack)
    return QueueControllerService(bus, etcd, config)
