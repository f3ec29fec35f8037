"""Services run on uvloop where it is installed (shared/service.py run_event_loop)."""

from __future__ import annotations

import asyncio

import pytest

from shared import service


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_a_service_runs_on_uvloop_when_installed() -> None:
    pytest.importorskip("uvloop")
    assert run_module() == "uvloop"


def test_without_uvloop_a_service_runs_on_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service, "uvloop", None)
    assert run_module().startswith("asyncio")


def run_module() -> str:
    return service.run_event_loop(_loop_module())
