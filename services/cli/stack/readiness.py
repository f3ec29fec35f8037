"""When a local stack can bind (pure): every node agent's nodes are registered in the log, and every binder
instance (a standby too: it binds as soon as it takes over) and every scheduler replica know them all as
Ready. Healthy processes are not enough: at 10,000 hollow nodes the registrations take a while to fold,
and a job submitted meanwhile would wait for them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Health = Mapping[str, Any]


def waiting_for(healths: Mapping[str, Health | None]) -> str:
    """What the stack still waits for before it can bind on every node ("" once it can), from each
    service's /healthz document (None: no answer)."""
    missing = [name for name, health in healths.items() if health is None or not health.get("ok")]
    if missing:
        return "healthy " + ", ".join(sorted(missing))
    agents = {n: h for n, h in healths.items() if n.startswith("node-agent") and h is not None}
    total = sum(int(h.get("nodes", 0)) for h in agents.values())
    registered = sum(int(h.get("nodes_registered", 0)) for h in agents.values())
    if registered < total:
        return f"nodes registered {registered}/{total}"
    for name, health in sorted(healths.items()):
        if health is not None and (name.startswith("binder") or name.startswith("scheduler")):
            ready = int(health.get("nodes_ready", 0))
            if ready < total:
                return f"{name} sees {ready}/{total} nodes Ready"
    return ""
