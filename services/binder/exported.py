"""The binder's allocation series, from its ledger (pure): what each node offers and holds, and what each
tenant (namespace, queue) holds, in base units (milli-units / 1000: cpu in cores, memory in bytes).

They feed the node-allocation coefficient of variation and the per-tenant usage of
ops/prometheus/rules-seed.yml. Only the leader exports them (a standby's ledger is the same one).
"""

from __future__ import annotations

from contracts.resources import MILLI, PODS
from services.binder.core.ledger import Ledger, split_key
from shared.telemetry.scraped import Rows

NODE_ALLOCATABLE = "lahar_node_allocatable"
NODE_ALLOCATED = "lahar_node_allocated"
TENANT_ALLOCATED = "lahar_tenant_allocated"


def ledger_series(ledger: Ledger) -> dict[str, Rows]:
    allocatable, allocated = [], []
    for name, node in ledger.nodes.items():
        for resource, value in node.allocatable.items():
            allocatable.append(((name, resource), value / MILLI))
            # every dimension the node offers, 0 when nothing holds it (a CV needs the idle nodes too)
            used = len(node.pods) * MILLI if resource == PODS else node.used.get(resource, 0)
            allocated.append(((name, resource), used / MILLI))
    tenants: dict[tuple[str, str, str], int] = {}
    for key, pod in ledger.pods.items():
        if not pod.allocated:
            continue
        namespace = split_key(key)[0] or ""
        for resource, value in pod.requests.items():
            bucket = (namespace, pod.queue, resource)
            tenants[bucket] = tenants.get(bucket, 0) + value
    return {
        NODE_ALLOCATABLE: allocatable,
        NODE_ALLOCATED: allocated,
        TENANT_ALLOCATED: [(labels, value / MILLI) for labels, value in sorted(tenants.items())],
    }
