"""The scheduling framework's modules import each other in one direction: session.py at the top, the
others below it, naming `Session` in annotations only. No import is hidden inside a function, where it
would mask a cycle (services/scheduler/core/framework/__init__.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CORE = ROOT / "services" / "scheduler" / "core"
MODULES = [*sorted((CORE / "framework").glob("*.py")), CORE / "conf.py", CORE / "registry.py"]
SESSION = "services.scheduler.core.framework.session"


def _imports(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    return []


def _type_checking_blocks(tree: ast.Module) -> list[ast.If]:
    return [
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    ]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_import_is_made_inside_a_function(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    hidden = [
        f"{path.name}:{inner.lineno} imports {', '.join(_imports(inner))} inside {node.name}()"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for inner in ast.walk(node)
        if _imports(inner)
    ]
    assert hidden == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_only_annotations_name_the_session_below_it(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    type_only = {id(n) for block in _type_checking_blocks(tree) for n in ast.walk(block)}
    runtime = [
        node.lineno for node in ast.walk(tree) if SESSION in _imports(node) and id(node) not in type_only
    ]
    assert runtime == [], f"{path.name} imports the session at run time (lines {runtime})"
