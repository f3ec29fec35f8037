"""python -m services.admission --nats-url URL --etcd-endpoint HOST:PORT [--metrics-port N] [...]: the
admission service (flags: python -m services.admission --help)."""

from __future__ import annotations

import contextlib

from services.admission.service import AdmissionConfig, AdmissionService
from shared.service import connect_bus, connect_etcd, run_main


async def build(config: AdmissionConfig, stack: contextlib.AsyncExitStack) -> AdmissionService:
    bus = await connect_bus(config, stack, name="admission")
    etcd = await connect_etcd(config, stack)
    return AdmissionService(bus, etcd, config)


if __name__ == "__main__":
    run_main(build, AdmissionConfig, name="admission")
