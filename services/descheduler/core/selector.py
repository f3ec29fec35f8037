"""Kubernetes' label selector strings (`labels.Parse`), as the descheduler's `nodeSelector` fields take
them: comma-separated clauses `key=value`, `key==value`, `key!=value`, `key in (a,b)`,
`key notin (a,b)`, `key` (exists) and `!key` (does not exist). The empty string selects everything."""

from __future__ import annotations

import re

from services.descheduler.core.policy import EVERY_NODE, NodeSelector, SelectorClause

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET = re.compile(rf"^({_KEY})\s+(in|notin)\s+\(([^()]*)\)$")
_EQUALITY = re.compile(rf"^({_KEY})\s*(==|=|!=)\s*({_VALUE})$")
_EXISTS = re.compile(rf"^(!?)\s*({_KEY})$")
_VALUE_ONLY = re.compile(rf"^{_VALUE}$")


class SelectorError(ValueError):
    """A selector string that does not parse; the message quotes the clause."""


def _clauses(text: str) -> list[str]:
    """Split on the commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part.strip() for part in parts]


def parse_selector(text: str) -> NodeSelector:
    if not text.strip():
        return EVERY_NODE
    clauses = []
    for part in _clauses(text):
        if match := _SET.match(part):
            values = tuple(v.strip() for v in match.group(4).split(","))
            if not all(values) or not all(_VALUE_ONLY.match(v) for v in values):
                raise SelectorError(f"expected a label selector, got {part!r}: bad values in the set")
            operator = "In" if match.group(3) == "in" else "NotIn"
            clauses.append(SelectorClause(match.group(1), operator, values))
        elif match := _EQUALITY.match(part):
            operator = "NotIn" if match.group(3) == "!=" else "In"
            clauses.append(SelectorClause(match.group(1), operator, (match.group(4),)))
        elif match := _EXISTS.match(part):
            clauses.append(SelectorClause(match.group(2), "DoesNotExist" if match.group(1) else "Exists"))
        else:
            raise SelectorError(
                f"expected a label selector such as 'zone=a,disk!=hdd,tier in (x,y)', got clause {part!r}"
            )
    return NodeSelector(text, tuple(clauses))
