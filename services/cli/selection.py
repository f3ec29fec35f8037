"""`-l`/`--selector` on the listing commands: kubectl's label selector syntax (contracts/label_selector.py),
read before anything connects so that a selector that cannot be read is a usage error (exit 2)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from contracts.label_selector import SelectorError, matches, parse_selector
from contracts.objects import SelectorRequirement

SELECTOR_HELP = (
    "only objects whose labels match, in kubectl's syntax: key=value, key!=value, 'key in (a,b)', "
    "'key notin (a,b)', key, !key, comma-separated (all must hold)"
)


def add_selector(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-l", "--selector", default="", metavar="SELECTOR", help=SELECTOR_HELP)


def read_selector(args: argparse.Namespace, command: str) -> tuple[SelectorRequirement, ...] | None:
    """The selector's requirements; None (after saying why on stderr) when it cannot be read."""
    try:
        return parse_selector(args.selector)
    except SelectorError as exc:
        print(f"{command}: {exc}", file=sys.stderr)
        return None


def selected(objects: Iterable[Any], requirements: Sequence[SelectorRequirement]) -> list[Any]:
    """The objects whose labels the requirements select (all of them for an empty selector)."""
    return [obj for obj in objects if matches(requirements, obj.meta.labels)]
