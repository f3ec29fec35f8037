"""python -m services.binder --nats-url ... --etcd-endpoint ... [--metrics-port N] [--instance-id NAME]
[--node-timeout-s 10] [--no-leader-election]"""

from __future__ import annotations

import contextlib

from services.binder.service import BinderConfig, BinderService
from shared.service import connect_bus, connect_etcd, run_main


async def build(config: BinderConfig, stack: contextlib.AsyncExitStack) -> BinderService:
    bus = await connect_bus(config, stack, name="binder")
    etcd = await connect_etcd(config, stack)
    return BinderService(bus, etcd, config)


if __name__ == "__main__":
    run_main(build, BinderConfig, name="binder")
