"""python -m services.descheduler --policy-config-file FILE --nats-url URL --etcd-endpoint HOST:PORT
[--descheduling-interval 10m | --descheduling-interval 0 --descheduling-interval-cron-expression EXPR]
[--dry-run] ..."""

from __future__ import annotations

from contracts.events import DESCHEDULER
from services.descheduler.config import DeschedulerConfig
from services.descheduler.service import build
from shared.service import run_main

if __name__ == "__main__":
    run_main(build, DeschedulerConfig, name=DESCHEDULER)
