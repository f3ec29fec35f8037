"""Every test gets the marker of its kind from its directory (unit, scenario, integration, e2e), so a new
test cannot lack one and `-m "unit or scenario"` selects exactly the tests that start no server."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

# tests/<directory>/... -> the marker every test in it carries (pyproject.toml describes each)
KIND_OF_DIRECTORY = {
    "unit": "unit",
    "scenarios": "scenario",
    "integration": "integration",
    "e2e": "e2e",
}


def kind_of(where: Path) -> str:
    """The marker for a test file, by its path under tests/; any other directory is a usage error."""
    directory = where.parts[0]
    if directory not in KIND_OF_DIRECTORY:
        known = ", ".join(f"tests/{d}" for d in KIND_OF_DIRECTORY)
        raise pytest.UsageError(f"tests/{where}: a test lives in one of {known}, which gives it its marker")
    return KIND_OF_DIRECTORY[directory]


# first: `-m` deselects by these markers in its own hook of this name
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(kind_of(item.path.resolve().relative_to(TESTS)))
