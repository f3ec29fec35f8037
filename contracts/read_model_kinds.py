"""Who writes which kinds of the read model: one writer per kind, each elected (a fenced single writer).

The services project exactly these kinds, and their etcd roles may write only these
(shared/security/etcd_roles.py). Plain data in contracts/, so a service's functional core can import it.
"""

from __future__ import annotations

from collections.abc import Mapping

from contracts.events import BINDER, JOB_CONTROLLER, QUEUE_CONTROLLER

KINDS_BY_WRITER: Mapping[str, tuple[str, ...]] = {
    JOB_CONTROLLER: ("job", "podgroup", "pod", "cronjob", "jobflow", "jobtemplate"),
    QUEUE_CONTROLLER: ("queue", "priorityclass", "hypernode"),  # all cluster-scoped
    BINDER: ("node",),
}
