"""python -m services.job_controller --nats-url URL --etcd-endpoint HOST:PORT [--metrics-port N] ..."""

from __future__ import annotations

from contracts.events import JOB_CONTROLLER
from services.job_controller.service import JobControllerConfig, build
from shared.service import run_main

if __name__ == "__main__":
    run_main(build, JobControllerConfig, name=JOB_CONTROLLER)
