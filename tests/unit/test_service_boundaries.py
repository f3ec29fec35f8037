"""A service does not import another service: a rule two services need lives in contracts/ or shared/,
so that each service can change (and be deployed) on its own. The tools that compose services (the CLI,
the simulator, the advisor) may import them. What still crosses is listed, each with why."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICES = (
    "admission",
    "job_controller",
    "queue_controller",
    "scheduler",
    "binder",
    "descheduler",
    "node_agent",
)
# (importer, imported package): why it still crosses
STILL_CROSSING = {
    # hollow nodes are the simulator's node model run by a real agent
    ("node_agent", "simulator"): "hollow nodes",
}


def crossings() -> set[tuple[str, str, str]]:
    found = set()
    for service in SERVICES:
        for path in (ROOT / "services" / service).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ImportFrom) and node.module:
                    modules = [node.module]
                elif isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                else:
                    continue
                for module in modules:
                    parts = module.split(".")
                    if parts[0] == "services" and len(parts) > 1 and parts[1] != service:
                        found.add((service, parts[1], f"{path.relative_to(ROOT)}: {module}"))
    return found


def test_no_service_imports_another_beyond_the_known_crossings() -> None:
    unexpected = sorted(
        where for service, imported, where in crossings() if (service, imported) not in STILL_CROSSING
    )
    assert not unexpected, "move the shared rule to contracts/ or shared/:\n" + "\n".join(unexpected)


def test_every_known_crossing_still_exists() -> None:
    """An entry that no longer crosses is removed, so the list says what is left."""
    seen = {(service, imported) for service, imported, _ in crossings()}
    assert set(STILL_CROSSING) <= seen
