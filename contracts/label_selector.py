"""kubectl's label selector syntax (`-l`/`--selector`) and what a requirement matches.

    env=prod,tier!=cache        key=value (also ==) and key!=value
    zone in (a,b),pool notin (spot)
    gpu,!preemptible            the key exists / does not exist
    cores>4,cores<64            an integer label above / below a bound

Requirements are ANDed; an empty selector selects everything. `key!=value` and `notin` also select objects
without the key, as in Kubernetes. A selector that cannot be read raises SelectorError naming the place
and what was expected there; keys and values are checked as Kubernetes checks label keys and values
(contracts/names.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from contracts.names import label_value_problem, qualified_name_problem
from contracts.objects import SelectorRequirement

_SPECIAL = "!=(),<>"
_INTEGER = re.compile(r"-?\d+")
_OPERATORS = {"=": "In", "==": "In", "!=": "NotIn", "in": "In", "notin": "NotIn", ">": "Gt", "<": "Lt"}


class SelectorError(ValueError):
    """A selector that is not kubectl's syntax; the message quotes it and says where and why."""


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    at: int  # its offset in the selector

    @property
    def special(self) -> bool:
        return self.text in ("!", "=", "==", "!=", "(", ")", ",", "<", ">")


def parse_selector(text: str) -> tuple[SelectorRequirement, ...]:
    """The requirements of a selector, in order; SelectorError if it cannot be read."""
    tokens = _tokens(text)
    requirements: list[SelectorRequirement] = []
    position = 0
    while position < len(tokens):
        requirement, position = _requirement(text, tokens, position)
        requirements.append(requirement)
        if position < len(tokens):
            if tokens[position].text != ",":
                _fail(text, tokens[position], "expected ',' between requirements")
            position += 1
            if position == len(tokens):
                _fail(text, None, "expected a requirement after ','")
    return tuple(requirements)


def matches(requirements: Sequence[SelectorRequirement], labels: Mapping[str, str]) -> bool:
    return all(requirement_matches(r, labels) for r in requirements)


def requirement_matches(requirement: SelectorRequirement, labels: Mapping[str, str]) -> bool:
    """One requirement against an object's labels (Kubernetes' label and node selector operators)."""
    present = requirement.key in labels
    value = labels.get(requirement.key)
    operator = requirement.operator
    if operator == "In":
        return present and value in requirement.values
    if operator == "NotIn":
        return not present or value not in requirement.values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and requirement.values:
        try:
            left, right = int(value or ""), int(requirement.values[0])
        except ValueError:
            return False
        return left > right if operator == "Gt" else left < right
    return False


# --- reading -------------------------------------------------------------------------------------


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
        elif char in _SPECIAL:
            two = text[i : i + 2]
            width = 2 if two in ("==", "!=") else 1
            tokens.append(_Token(text[i : i + width], i))
            i += width
        else:
            start = i
            while i < len(text) and not text[i].isspace() and text[i] not in _SPECIAL:
                i += 1
            tokens.append(_Token(text[start:i], start))
    return tokens


def _requirement(text: str, tokens: list[_Token], position: int) -> tuple[SelectorRequirement, int]:
    token = tokens[position]
    if token.text == "!":
        key = _key(text, tokens, position + 1)
        return SelectorRequirement(key, "DoesNotExist"), position + 2
    key = _key(text, tokens, position)
    position += 1
    if position == len(tokens) or tokens[position].text == ",":
        return SelectorRequirement(key, "Exists"), position
    operator = tokens[position]
    if operator.text not in _OPERATORS:
        _fail(text, operator, "expected =, ==, !=, in, notin, >, < or ',' after a key")
    position += 1
    if operator.text in ("in", "notin"):
        values, position = _value_set(text, tokens, position, operator)
    elif operator.text in "<>":
        values = (_value(text, tokens, position, integer=True),)
        position += 1
    else:
        values = (_value(text, tokens, position, integer=False, allow_empty=True),)
        position += 0 if values == ("",) else 1
    return SelectorRequirement(key, _OPERATORS[operator.text], values), position


def _value_set(
    text: str, tokens: list[_Token], position: int, operator: _Token
) -> tuple[tuple[str, ...], int]:
    if position == len(tokens) or tokens[position].text != "(":
        _fail(
            text,
            tokens[position] if position < len(tokens) else None,
            f"expected '(' after '{operator.text}'",
        )
    position += 1
    values: list[str] = []
    while True:
        if position < len(tokens) and tokens[position].text == ")" and not values:
            _fail(text, tokens[position], f"expected at least one value in '{operator.text} (...)'")
        values.append(_value(text, tokens, position, integer=False, allow_empty=True))
        if position < len(tokens) and not tokens[position].special:
            position += 1
        if position == len(tokens):
            _fail(text, None, f"expected ')' to close '{operator.text} (...)'")
        if tokens[position].text == ")":
            return tuple(values), position + 1
        if tokens[position].text != ",":
            _fail(text, tokens[position], "expected ',' or ')' in a value list")
        position += 1


def _key(text: str, tokens: list[_Token], position: int) -> str:
    if position == len(tokens):
        _fail(text, None, "expected a label key")
    token = tokens[position]
    if token.special or token.text in ("in", "notin"):
        _fail(text, token, "expected a label key")
    problem = qualified_name_problem(token.text)
    if problem:
        _fail(text, token, f"a label key: {problem}")
    return token.text


def _value(
    text: str, tokens: list[_Token], position: int, *, integer: bool, allow_empty: bool = False
) -> str:
    token = tokens[position] if position < len(tokens) else None
    if allow_empty and (token is None or token.text in (",", ")")):
        return ""  # "key=" and "in (a,)" hold an empty value, as in Kubernetes
    if token is None or token.special:
        _fail(text, token, "expected an integer" if integer else "expected a value")
    if integer and not _INTEGER.fullmatch(token.text):
        _fail(text, token, "expected an integer")
    problem = None if integer else label_value_problem(token.text)
    if problem:
        _fail(text, token, f"a label value: {problem}")
    return token.text


def _fail(text: str, token: _Token | None, message: str) -> NoReturn:
    where = f"at {token.text!r} (character {token.at + 1})" if token is not None else "at the end"
    raise SelectorError(f"selector {text!r}: {where}: {message}")
