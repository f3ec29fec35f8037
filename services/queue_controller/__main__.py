"""python -m services.queue_controller --nats-url URL --etcd-endpoint HOST:PORT [--metrics-port N] ..."""

from __future__ import annotations

from contracts.events import QUEUE_CONTROLLER
from services.queue_controller.service import QueueControllerConfig, build
from shared.service import run_main

if __name__ == "__main__":
    run_main(build, QueueControllerConfig, name=QUEUE_CONTROLLER)
