"""The metric selectors of a PromQL expression, found by a small scanner rather than a full parser:
strings, ranges and grouping clauses are masked, then a name not followed by `(` is a metric.

Masking keeps every character's position, so a selector's text can be cut from the expression as written
(tests/e2e/test_dashboards_stack.py queries each selector of an expression on its own). Grafana variables
($queue, $__rate_interval) may appear: they are masked like literals."""

from __future__ import annotations

import re
from dataclasses import dataclass

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GRAFANA_VARIABLE = re.compile(r"\$\{?\w+\}?")
_RANGE = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_SELECTOR = re.compile(r"(?<![\w.:])([a-zA-Z_:][\w:]*)?\s*(\{[^}]*\})?")
_MATCHER_LABEL = re.compile(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)")
_KEYWORDS = frozenset(
    ("and", "or", "unless", "offset", "bool", "by", "without", "on", "ignoring", "group_left", "group_right")
)


@dataclass(frozen=True)
class Selector:
    name: str
    labels: frozenset[str]  # the labels its matchers use
    text: str  # as written in the expression: `name{matchers}`


@dataclass(frozen=True)
class Query:
    selectors: tuple[Selector, ...]
    grouping: frozenset[str]  # labels named in by/without/on/ignoring/group_* clauses


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def _placeholder(match: re.Match[str]) -> str:
    # a literal of the same length: a string stays a string, a variable becomes a number
    text = match.group(0)
    if text[0] in "\"'`":
        return text[0] + "x" * (len(text) - 2) + text[0]
    return "1".ljust(len(text))


def parse_query(expr: str) -> Query:
    text = _STRING.sub(_placeholder, expr)
    text = _GRAFANA_VARIABLE.sub(_placeholder, text)
    text = _RANGE.sub(_blank, text)
    grouping = frozenset(
        label for clause in _GROUPING.findall(text) for label in re.findall(r"[a-zA-Z_]\w*", clause)
    )
    text = _GROUPING.sub(_blank, text)
    selectors = []
    for match in _SELECTOR.finditer(text):
        name, block = match.group(1), match.group(2)
        if not name and not block:
            continue
        if not name:
            raise AssertionError(f"a selector without a metric name in {expr!r}")
        if name in _KEYWORDS or (not block and text[match.end() :].lstrip().startswith("(")):
            continue
        labels = frozenset(_MATCHER_LABEL.findall(block or ""))
        end = match.end(2) if block else match.end(1)  # not the blanks that follow (a masked range)
        selectors.append(Selector(name, labels, expr[match.start() : end]))
    return Query(tuple(selectors), grouping)
