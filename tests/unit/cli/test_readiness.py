"""When `lahar up` calls a stack ready: healthy is not enough, every node must be bindable."""

from __future__ import annotations

from services.cli.stack.readiness import waiting_for


def healths(registered: int, binder: int, schedulers: tuple[int, ...], *, agent_ok: bool = True) -> dict:
    found: dict = {
        "admission": {"ok": True},
        "binder": {"ok": True, "nodes": binder, "nodes_ready": binder},
        "node-agent": {"ok": agent_ok, "nodes": 10_000, "nodes_registered": registered},
    }
    for i, ready in enumerate(schedulers):
        found[f"scheduler-{i}"] = {"ok": True, "nodes": ready, "nodes_ready": ready}
    return found


def test_a_stack_is_ready_once_every_node_is_registered_and_known_ready_everywhere() -> None:
    assert waiting_for(healths(0, 0, (0,), agent_ok=False)) == "healthy node-agent"
    assert waiting_for({**healths(0, 0, (0,)), "binder": None}) == "healthy binder"
    assert waiting_for(healths(4_000, 4_000, (4_000,))) == "nodes registered 4000/10000"
    assert waiting_for(healths(10_000, 9_000, (10_000, 10_000))) == "binder sees 9000/10000 nodes Ready"
    assert waiting_for(healths(10_000, 10_000, (10_000, 7))) == "scheduler-1 sees 7/10000 nodes Ready"
    assert waiting_for(healths(10_000, 10_000, (10_000, 10_000))) == ""


def test_a_standby_binder_must_know_every_node_ready_too() -> None:
    # it binds the moment it takes over: a stack whose standby lags would stall after a failover
    lagging = {**healths(10_000, 10_000, (10_000,)), "binder-2": {"ok": True, "nodes_ready": 9_999}}
    assert waiting_for(lagging) == "binder-2 sees 9999/10000 nodes Ready"
