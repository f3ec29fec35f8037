"""A topology.volcano.sh HyperNode: at least one member, each selecting its members in exactly one way,
with a valid exact name or a usable regular expression."""

from __future__ import annotations

import re

from contracts.errors import FieldError
from contracts.names import qualified_name_problem
from contracts.objects import HyperNode, HyperNodeMember
from contracts.parse_volcano import MEMBER_TYPES

BRACKETS = (("(", ")", "parentheses"), ("[", "]", "square brackets"), ("{", "}", "curly braces"))


def unbalanced(pattern: str) -> list[str]:
    """The bracket kinds whose opening and closing counts differ (escaped characters do not count)."""
    counts: dict[str, int] = {}
    escaped = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        else:
            counts[char] = counts.get(char, 0) + 1
    return [name for open_, close, name in BRACKETS if counts.get(open_, 0) != counts.get(close, 0)]


def _member(member: HyperNodeMember, at: str, document: str) -> list[FieldError]:
    errors = []
    if member.type not in MEMBER_TYPES:
        errors.append(
            FieldError(
                document, f"{at}.type", f"expected one of {', '.join(MEMBER_TYPES)}, got {member.type!r}"
            )
        )
    given = [
        name
        for name, present in (
            ("exactMatch", bool(member.exact_name)),
            ("regexMatch", bool(member.regex_pattern)),
            ("labelMatch", member.label_selector is not None),
        )
        if present
    ]
    if len(given) != 1:
        found = ", ".join(given) if given else "none"
        errors.append(
            FieldError(
                document,
                f"{at}.selector",
                "expected exactly one of exactMatch (with a name), regexMatch (with a pattern) or "
                f"labelMatch, got {found}",
            )
        )
    if member.exact_name:
        problem = qualified_name_problem(member.exact_name)
        if problem:
            errors.append(
                FieldError(document, f"{at}.selector.exactMatch.name", f"invalid member name: {problem}")
            )
    if member.regex_pattern:
        path = f"{at}.selector.regexMatch.pattern"
        kinds = unbalanced(member.regex_pattern)
        if kinds:
            errors.append(
                FieldError(
                    document,
                    path,
                    f"member regexMatch pattern {member.regex_pattern!r} has unmatched {' and '.join(kinds)}",
                )
            )
        else:
            try:
                re.compile(member.regex_pattern)
            except re.error as exc:
                errors.append(FieldError(document, path, f"member regexMatch pattern is invalid: {exc}"))
    return errors


def validate_hypernode(hypernode: HyperNode, document: str) -> list[FieldError]:
    errors = []
    if hypernode.tier < 0:
        errors.append(FieldError(document, "spec.tier", f"expected an integer >= 0, got {hypernode.tier}"))
    if not hypernode.members:
        errors.append(FieldError(document, "spec.members", "a HyperNode must have at least one member"))
    for index, member in enumerate(hypernode.members):
        errors.extend(_member(member, f"spec.members[{index}]", document))
    return errors
