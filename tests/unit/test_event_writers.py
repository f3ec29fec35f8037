"""The event catalogue's invariants: every event type has exactly one writer, every writer is a known
service, payload fields are identifiers (they become MessagePack keys and JSON Schema properties), and
every older schema version of a type has an upcaster."""

from __future__ import annotations

import ast
import inspect
import keyword
from collections import Counter
from collections.abc import Mapping

import pytest

from contracts import events, payloads
from contracts.events import EVENT_TYPES, EventType, event_types_written_by, payload_fields, writer_of
from contracts.upcasters import UPCASTERS

SERVICES = frozenset(
    {
        events.ADMISSION,
        events.JOB_CONTROLLER,
        events.QUEUE_CONTROLLER,
        events.SCHEDULER,
        events.BINDER,
        events.NODE_AGENT,
        events.DESCHEDULER,
    }
)


def declared_names(source: str) -> Counter[str]:
    """How often each event type name is declared (an EventType(...) call) in the catalogue's source.

    EVENT_TYPES is a dict, so a second declaration of a name with another writer would silently replace
    the first; only the source shows it.
    """
    return Counter(
        node.args[0].value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "EventType"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    )


def catalogue_problems(catalogue: Mapping[str, EventType], declared: Counter[str]) -> list[str]:
    problems = [f"{name}: declared {n} times" for name, n in sorted(declared.items()) if n != 1]
    for name, event_type in catalogue.items():
        if event_type.name != name:
            problems.append(f"{name}: catalogued under another name ({event_type.name})")
        if event_type.writer not in SERVICES:
            problems.append(f"{name}: writer {event_type.writer!r} is not a service")
        for key in payload_fields(event_type.payload_class):
            if not key.isidentifier() or keyword.iskeyword(key) or key != key.lower():
                problems.append(f"{name}: payload key {key!r} is not a snake_case identifier")
        missing = [v for v in range(1, event_type.version) if (name, v) not in UPCASTERS]
        if missing:
            problems.append(f"{name}: no upcaster from version {', '.join(map(str, missing))}")
    return problems


def test_the_catalogue_has_one_writer_per_type_and_clean_payload_keys() -> None:
    declared = declared_names(inspect.getsource(events))
    assert set(declared) == set(EVENT_TYPES)
    assert catalogue_problems(EVENT_TYPES, declared) == []


@pytest.mark.parametrize("name", sorted(EVENT_TYPES))
def test_writer_lookups_agree_with_the_catalogue(name: str) -> None:
    writer = EVENT_TYPES[name].writer
    assert writer_of(name) == writer
    assert [s for s in sorted(SERVICES) if name in event_types_written_by(s)] == [writer]


class _NodeNamed(payloads.Payload, frozen=True, kw_only=True, rename={"node_name": "node-name"}):
    node_name: str


BOUND = EventType("PodBound", "pod", events.BINDER, payloads.PodBound, "")


@pytest.mark.parametrize(
    ("catalogue", "source", "problem"),
    [
        ({"PodBound": BOUND}, 'EventType("PodBound")', None),
        ({"PodBound": BOUND}, 'EventType("PodBound")\nEventType("PodBound")', "PodBound: declared 2 times"),
        (
            {"PodBound": EventType("PodBound", "pod", "kubelet", payloads.PodBound, "")},
            'EventType("PodBound")',
            "PodBound: writer 'kubelet' is not a service",
        ),
        (
            {"PodBound": EventType("PodBound", "pod", events.BINDER, _NodeNamed, "")},
            'EventType("PodBound")',
            "PodBound: payload key 'node-name' is not a snake_case identifier",
        ),
        (
            {"PodBound": EventType("PodBound", "pod", events.BINDER, payloads.PodBound, "", version=3)},
            'EventType("PodBound")',
            "PodBound: no upcaster from version 1, 2",
        ),
        (
            {"PodPlaced": BOUND},
            'EventType("PodBound")',
            "PodPlaced: catalogued under another name (PodBound)",
        ),
    ],
)
def test_the_checks_catch_bad_catalogues(
    catalogue: Mapping[str, EventType], source: str, problem: str | None
) -> None:
    problems = catalogue_problems(catalogue, declared_names(source))
    assert problems == ([] if problem is None else [problem])
