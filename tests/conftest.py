"""What every test gets, whatever directory it lives in.

- The marker of its kind, from its directory (unit, scenario, integration, e2e), so a new test cannot lack
  one and `-m "unit or scenario"` selects exactly the tests that start no server.
- An environment of its own: no LAHAR_* or OTEL_* variable of the developer's shell reaches a test or a
  process it starts (a shell that exports traces somewhere would have every test's services export
  too), and LAHAR_HOME is this worker's own directory, so a command that names no stack finds none
  (never the developer's ~/.lahar, never a stack another xdist worker started).
- Processes it starts that SIGINT interrupts, however the suite itself was started.

Parallel runs hand out whole modules (`--dist loadfile` in pyproject.toml): an e2e module shares one local
stack between its tests through a module-scoped fixture, and split over two workers it would start twice.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
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


def pytest_configure(config: pytest.Config) -> None:
    # A suite started as a background job of a non-interactive shell inherits SIGINT ignored, and so would
    # every process a test starts: a test that interrupts `lahar get -w` would wait for it forever. A handler
    # (unlike "ignored") is not inherited, so with one here those processes start with SIGINT at its default.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# first: `-m` deselects by these markers in its own hook of this name
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(kind_of(item.path.resolve().relative_to(TESTS)))


@pytest.fixture(scope="session", autouse=True)
def own_lahar_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name in [name for name in os.environ if name.startswith(("LAHAR_", "OTEL_"))]:
            patch.delenv(name)
        patch.setenv("LAHAR_HOME", str(tmp_path_factory.mktemp("lahar-home")))
        yield
