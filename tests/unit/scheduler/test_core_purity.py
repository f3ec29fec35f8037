"""The scheduling core (and the other pure cores) must not do I/O, read the clock or draw unseeded
random numbers: the same snapshot, configuration and seed must always give the same plan."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
# every service's core/ package, the simulator, and the pure halves of the scheduler service
PURE_PACKAGES = [
    *sorted((ROOT / "services").glob("*/core")),
    ROOT / "services" / "simulator",
]
PURE_FILES = [
    ROOT / "services" / "scheduler" / "view.py",
    ROOT / "services" / "scheduler" / "plans.py",
    ROOT / "services" / "scheduler" / "state.py",
    ROOT / "shared" / "runner_types.py",
    ROOT / "shared" / "projected_core.py",
    ROOT / "shared" / "ring.py",
    ROOT / "shared" / "name_uuid.py",
    ROOT / "shared" / "plan_ids.py",
    ROOT / "shared" / "evolve.py",
    ROOT / "shared" / "pod_decode.py",
    ROOT / "contracts" / "plans.py",
]
# pure modules of the runtime library that cores may use
ALLOWED_SHARED = {
    "shared.runner_types",
    "shared.ring",
    "shared.projected_core",
    "shared.usage.book",
    "shared.name_uuid",
    "shared.plan_ids",
    "shared.evolve",
    "shared.pod_decode",
}
FORBIDDEN_MODULES = {
    "asyncio",
    "nats",
    "aetcd",
    "etcd3",
    "socket",
    "time",
    "subprocess",
    "threading",
    "os",
    "logging",
    "structlog",
    "opentelemetry",
    "urllib",
    "http",
    "requests",
    "shared",
    "select",
}
FORBIDDEN_CALLS = {("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"), ("uuid", "uuid4")}


def violations(source: str, name: str) -> list[str]:
    found = []
    tree = ast.parse(source, name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        else:
            modules = []
        for module in modules:
            if module in ALLOWED_SHARED:
                continue
            if module.split(".")[0] in FORBIDDEN_MODULES:
                found.append(f"{name}:{node.lineno}: imports {module}")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in FORBIDDEN_CALLS:
                found.append(f"{name}:{node.lineno}: calls {node.value.id}.{node.attr}")
            if node.value.id == "random" and node.attr != "Random":
                found.append(f"{name}:{node.lineno}: uses the global random generator (random.{node.attr})")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and (node.func.value.id, node.func.attr) == ("random", "Random")
            and not node.args
            and not node.keywords
        ):
            found.append(f"{name}:{node.lineno}: random.Random() without a seed")
    return found


def pure_sources() -> list[Path]:
    files = {p for package in PURE_PACKAGES for p in package.rglob("*.py")}
    files.update(p for p in PURE_FILES if p.exists())
    return sorted(files)


def test_pure_packages_exist() -> None:
    assert len(pure_sources()) > 20


@pytest.mark.parametrize("path", pure_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_module_is_pure(path: Path) -> None:
    assert violations(path.read_text(), str(path.relative_to(ROOT))) == []


@pytest.mark.parametrize(
    "source",
    [
        "import asyncio",
        "from nats.aio.client import Client",
        "import time\nx = time.time()",
        "import random\nx = random.random()",
        "import random\nr = random.Random()",
        "from datetime import datetime\nx = datetime.now()",
        "from shared.bus import Bus",
        "import shared.store.etcd",
    ],
)
def test_checker_flags_impure_code(source: str) -> None:
    assert violations(source, "example.py")


def test_checker_accepts_seeded_generator_and_pure_shared_modules() -> None:
    assert violations("import random\nr = random.Random(seed)", "example.py") == []
    assert violations("from shared.runner_types import Event", "example.py") == []
