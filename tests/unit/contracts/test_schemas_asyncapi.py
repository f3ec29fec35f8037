"""The checked-in AsyncAPI document names every event type and every subject family with the subjects the
code uses, and every reference in it and in the schema files resolves to a checked-in file."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

import pytest
from support.schemas import CONTRACTS, load

from contracts.events import EVENT_TYPES
from services.admission.api import VERBS
from shared.bus.heartbeats import heartbeat_subject
from shared.bus.subjects import encode_token, event_subject, intake_subject, logs_subject, plan_subject

DOC = load("asyncapi.yaml")
CHANNELS = DOC["channels"]
SCHEMA_FILES = sorted(p.relative_to(CONTRACTS).as_posix() for p in (CONTRACTS / "schema").rglob("*.json"))


def address(channel: str, **values: str) -> str:
    """A channel's address with its parameters filled in."""
    template: str = CHANNELS[channel]["address"]
    assert set(re.findall(r"\{(\w+)\}", template)) == set(CHANNELS[channel].get("parameters", {}))
    return template.format(**values)


def test_every_event_type_is_a_message_of_the_events_channel_with_its_writer_and_version() -> None:
    messages = CHANNELS["events"]["messages"]
    assert sorted(messages) == sorted(EVENT_TYPES)
    for name, event_type in EVENT_TYPES.items():
        assert messages[name]["x-lahar-writer"] == event_type.writer
        assert messages[name]["x-lahar-schema-version"] == event_type.version
        assert messages[name]["payload"]["allOf"][1]["properties"]["payload"] == {
            "$ref": f"schema/events/{name}.json"
        }
    written = {ref["$ref"].rpartition("/")[2] for ref in DOC["operations"]["writeEvent"]["messages"]}
    assert written == set(EVENT_TYPES)


def test_the_addresses_are_the_subjects_the_code_uses() -> None:
    # parameters are escaped tokens, so names that need escaping fill them escaped
    namespace, name, producer = "team.a", "train v2", "node-agent.rack-1"
    tokens = {"namespace": encode_token(namespace), "name": encode_token(name)}
    assert address(
        "events", kind="pod", producer=encode_token(producer), type="PodRunning", **tokens
    ) == event_subject("pod", namespace, name, "PodRunning", producer)
    assert address(
        "events", kind="queue", producer="admission", type="QueueApplied", namespace="_", name="q"
    ) == (event_subject("queue", None, "q", "QueueApplied", "admission"))
    assert address("intake", kind="job", **tokens) == intake_subject("job", namespace, name)
    assert address("plans", producer=encode_token(producer)) == plan_subject(producer)
    assert address("heartbeats", agent=encode_token(producer)) == heartbeat_subject(producer)
    assert address("logs", namespace=tokens["namespace"], pod=tokens["name"]) == logs_subject(namespace, name)
    api = {CHANNELS[c]["address"] for c in CHANNELS if c.startswith("api") and CHANNELS[c]["address"]}
    assert api == {f"lahar.api.{verb}" for verb in VERBS}


def test_the_event_kinds_and_types_are_the_catalogues() -> None:
    parameters = CHANNELS["events"]["parameters"]
    assert parameters["type"]["enum"] == sorted(EVENT_TYPES)
    assert set(parameters["kind"]["enum"]) == {t.subject_kind for t in EVENT_TYPES.values()}


def refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref":
                yield item
            else:
                yield from refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from refs(item)


def resolve(document: Any, located_at: str, ref: str) -> Any:
    """The value a reference points at; KeyError or FileNotFoundError if it points at nothing."""
    target, _, pointer = ref.partition("#")
    if target:
        located_at = (PurePosixPath(located_at).parent / target).as_posix()
        document = load(_normalise(located_at))
    for token in filter(None, pointer.split("/")):
        document = document[token.replace("~1", "/").replace("~0", "~")]
    return document


def _normalise(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


@pytest.mark.parametrize("path", ["asyncapi.yaml", *SCHEMA_FILES])
def test_every_reference_resolves_to_a_checked_in_file(path: str) -> None:
    document = load(path)
    unresolved = []
    for ref in sorted(set(refs(document))):
        try:
            resolve(document, path, ref)
        except (KeyError, FileNotFoundError) as exc:
            unresolved.append(f"{ref}: {exc!r}")
    assert unresolved == []


def test_the_resolver_finds_a_reference_that_points_nowhere() -> None:
    with pytest.raises(FileNotFoundError):
        resolve({}, "schema/events/PodBound.json", "../objects/Nothing.json")
    with pytest.raises(KeyError):
        resolve(DOC, "asyncapi.yaml", "#/channels/nothing")
