"""python -m services.scheduler --replica-id scheduler-0 --nats-url ... --etcd-endpoint ... [--metrics-port N]
[--scheduler-conf-file volcano-scheduler.conf] [--schedule-period-s 1.0] [--seed 0] [--membership-ttl-s 5]"""

from __future__ import annotations

import contextlib
from pathlib import Path

from services.scheduler.core.conf import SchedulerConf, default_conf, parse_conf
from services.scheduler.service import SchedulerConfig, SchedulerService
from shared.service import connect_bus, connect_etcd, run_main


def load_scheduler_conf(path: str) -> SchedulerConf:
    """The volcano-scheduler.conf at path, or the default conf when path is empty; ConfError or OSError
    name what is wrong."""
    if not path:
        return default_conf()
    return parse_conf(Path(path).read_text(), source=path)


async def build(config: SchedulerConfig, stack: contextlib.AsyncExitStack) -> SchedulerService:
    conf = load_scheduler_conf(config.scheduler_conf_file)  # before connecting: a bad conf fails fast
    bus = await connect_bus(config, stack, name=config.replica_id)
    etcd = await connect_etcd(config, stack)
    return SchedulerService(bus, etcd, config, conf)


if __name__ == "__main__":
    run_main(build, SchedulerConfig, name="scheduler")
