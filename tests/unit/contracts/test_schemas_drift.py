"""The checked-in contracts are exactly what the types generate: a change to a payload, object, message or
subject without regenerating fails here with the command that fixes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts import payloads, schema_gen
from contracts.events import EventType


def test_the_checked_in_files_are_what_the_types_generate() -> None:
    stale = schema_gen.stale_files(schema_gen.CONTRACTS, schema_gen.documents())
    assert stale == [], f"contracts/ is out of date ({', '.join(stale)}); run: {schema_gen.REGENERATE}"


def test_a_changed_missing_or_leftover_file_is_found_and_rewritten(tmp_path: Path) -> None:
    expected = {"schema/events/A.json": "{}\n", "schema/objects/B.json": "{}\n", "asyncapi.yaml": "a: 1\n"}
    assert schema_gen.write(tmp_path, expected) == sorted(expected)
    assert schema_gen.stale_files(tmp_path, expected) == []
    (tmp_path / "schema/events/A.json").write_text('{"changed": true}\n')
    (tmp_path / "asyncapi.yaml").unlink()
    (tmp_path / "schema/events/Removed.json").write_text("{}\n")
    stale = ["asyncapi.yaml", "schema/events/A.json", "schema/events/Removed.json"]
    assert schema_gen.stale_files(tmp_path, expected) == stale
    assert schema_gen.write(tmp_path, expected) == stale
    assert schema_gen.stale_files(tmp_path, expected) == []
    assert not (tmp_path / "schema/events/Removed.json").exists()


class _Carries(payloads.Payload, frozen=True, kw_only=True):
    spare: payloads.EncodedObject  # an API object of a kind the generator cannot know


def test_an_object_field_of_unknown_kind_is_refused_not_guessed() -> None:
    event_type = EventType("Carried", "pod", "binder", _Carries, "a test type")
    with pytest.raises(ValueError, match=r"_Carries\.spare holds an API object of unknown kind"):
        schema_gen.event_schema(event_type)
