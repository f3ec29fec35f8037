"""The binder's allocation series from its ledger (services/binder/exported.py): per node what it offers
and holds, idle dimensions included, and per tenant (namespace, queue) what its running pods hold."""

from __future__ import annotations

from services.binder.core.ledger import Ledger, NodeEntry, PodEntry
from services.binder.exported import NODE_ALLOCATABLE, NODE_ALLOCATED, TENANT_ALLOCATED, ledger_series


def test_nodes_and_tenants_in_base_units() -> None:
    ledger = Ledger()
    ledger.nodes["n1"] = NodeEntry(
        {"cpu": 4000, "memory": 8 * 2**30 * 1000, "pods": 110_000},
        110,
        used={"cpu": 1500, "memory": 2**30 * 1000},
        pods={"a/p0", "b/p1"},
    )
    ledger.nodes["n2"] = NodeEntry({"cpu": 4000, "pods": 110_000}, 110)  # idle: its series say 0
    ledger.pods["a/p0"] = PodEntry(
        {"cpu": 1000, "memory": 2**30 * 1000}, "q1", "a/g", node="n1", phase="Running"
    )
    ledger.pods["b/p1"] = PodEntry({"cpu": 500}, "q2", "b/g", node="n1", phase="Running")
    ledger.pods["b/p2"] = PodEntry({"cpu": 500}, "q2", "b/g")  # pending: holds nothing
    ledger.pods["b/p3"] = PodEntry({"cpu": 700}, "q2", "b/g", node="n1", phase="Running", terminating=True)
    series = {
        name: {tuple(labels): value for labels, value in rows} for name, rows in ledger_series(ledger).items()
    }
    assert series[NODE_ALLOCATABLE] == {
        ("n1", "cpu"): 4.0,
        ("n1", "memory"): 8 * 2**30,
        ("n1", "pods"): 110,
        ("n2", "cpu"): 4.0,
        ("n2", "pods"): 110,
    }
    assert series[NODE_ALLOCATED] == {
        ("n1", "cpu"): 1.5,
        ("n1", "memory"): 2**30,
        ("n1", "pods"): 2,
        ("n2", "cpu"): 0,
        ("n2", "pods"): 0,
    }
    assert series[TENANT_ALLOCATED] == {
        ("a", "q1", "cpu"): 1.0,
        ("a", "q1", "memory"): 2**30,
        ("b", "q2", "cpu"): 0.5,
    }
