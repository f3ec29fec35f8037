"""The machine-readable contracts, generated from the types: a JSON Schema per event payload, API object and
bus message, and the AsyncAPI document that ties them to subjects (contracts/README.md).

    python -m contracts.schema_gen          # (re)write contracts/schema/ and contracts/asyncapi.yaml
    python -m contracts.schema_gen --check  # exit 1, naming the files, if the checked-in ones differ

`documents()` is pure: every file's path (relative to contracts/) and its exact text, keys sorted, so
the checked-in files can be compared byte for byte (tests/unit/contracts/test_schemas_drift.py).
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import yaml

from contracts import bus_messages, payloads
from contracts.asyncapi_doc import asyncapi
from contracts.codec import KINDS
from contracts.events import EVENT_TYPES, EventType
from contracts.schema_objects import object_schema

CONTRACTS = Path(__file__).resolve().parent
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
REGENERATE = "python -m contracts.schema_gen"

# how msgspec describes a payload field that holds an API object (payloads.EncodedObject)
_ENCODED_OBJECT = typing.get_args(payloads.EncodedObject)[1].description
# object-holding payload fields other than an ObjectPayload's `object`: (payload class, field) -> kind
OTHER_OBJECT_FIELDS: Mapping[tuple[str, str], str] = {("PodSubmitted", "podgroup"): "PodGroup"}


def event_path(name: str) -> str:
    return f"schema/events/{name}.json"


def object_path(kind: str) -> str:
    return f"schema/objects/{kind}.json"


def message_path(name: str) -> str:
    return f"schema/messages/{name}.json"


def documents() -> dict[str, str]:
    """Every generated file: path relative to contracts/ -> its text."""
    files = {event_path(name): _json(event_schema(t)) for name, t in sorted(EVENT_TYPES.items())}
    files.update(
        {object_path(kind): _json(_with_dialect(object_schema(kind, cls))) for kind, cls in KINDS.items()}
    )
    files.update(
        {message_path(name): _json(message_schema(types)) for name, types in bus_messages.MESSAGES.items()}
    )
    files["asyncapi.yaml"] = yaml.safe_dump(asyncapi(), sort_keys=True, allow_unicode=True, width=110)
    return dict(sorted(files.items()))


def event_schema(event_type: EventType) -> dict[str, Any]:
    """The payload of one event type: its class's schema, an API object it carries referring to the
    object's schema file, and the type's writer, subject kind and schema version as annotations."""
    cls = event_type.payload_class
    schema = _rooted(msgspec.json.schema(cls))
    for def_name, definition in [(cls.__name__, schema), *schema.get("$defs", {}).items()]:
        for field, prop in definition.get("properties", {}).items():
            definition["properties"][field] = _object_reference(cls, def_name, field, prop)
    description = ". ".join(part for part in (event_type.summary, schema.get("description", "")) if part)
    schema.update(
        title=event_type.name,
        description=_sentence(description),
        **{
            "x-lahar-schema-version": event_type.version,
            "x-lahar-writer": event_type.writer,
            "x-lahar-subject-kind": event_type.subject_kind,
        },
    )
    return _with_dialect(schema)


def message_schema(types: type | tuple[type, ...]) -> dict[str, Any]:
    """A bus message's schema; for several types, any one of them."""
    if isinstance(types, tuple):
        refs, defs = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
        return _with_dialect(_tidy({"anyOf": list(refs), "$defs": defs}))
    return _with_dialect(_rooted(msgspec.json.schema(types)))


def _rooted(schema: dict[str, Any]) -> dict[str, Any]:
    """msgspec's {"$ref": "#/$defs/X", "$defs": {X: ...}} with X's schema at the root."""
    defs = dict(schema["$defs"])
    root = defs.pop(schema["$ref"].removeprefix("#/$defs/"))
    rooted: dict[str, Any] = _tidy({**root, **({"$defs": defs} if defs else {})})
    return rooted


def _object_reference(cls: type, def_name: str, field: str, prop: dict[str, Any]) -> dict[str, Any]:
    """A field holding an API object, as a reference to the object's schema."""
    branches = prop.get("anyOf", [prop])
    if not any(branch.get("description") == _ENCODED_OBJECT for branch in branches):
        return prop
    if field == "object" and def_name == cls.__name__ and issubclass(cls, payloads.ObjectPayload):
        kind = cls.expected_kind()
    elif (def_name, field) in OTHER_OBJECT_FIELDS:
        kind = OTHER_OBJECT_FIELDS[(def_name, field)]
    else:
        raise ValueError(
            f"{def_name}.{field} holds an API object of unknown kind: add it to OTHER_OBJECT_FIELDS"
        )
    ref = {"$ref": f"../objects/{kind}.json"}
    if "anyOf" not in prop:
        return ref
    rest = {key: value for key, value in prop.items() if key != "anyOf"}
    swapped = [ref if branch.get("description") == _ENCODED_OBJECT else branch for branch in branches]
    return {**rest, "anyOf": swapped}


def _tidy(value: Any) -> Any:
    """Descriptions from docstrings as one line each (msgspec keeps their indentation)."""
    if isinstance(value, dict):
        return {
            key: _sentence(item) if key == "description" and isinstance(item, str) else _tidy(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_tidy(item) for item in value]
    return value


def _sentence(text: str) -> str:
    return " ".join(inspect.cleandoc(text).split())


def _with_dialect(schema: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": SCHEMA_DIALECT, **schema}


def _json(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# --- the shell -----------------------------------------------------------------------------------------


def stale_files(root: Path, expected: Mapping[str, str]) -> list[str]:
    """Generated files that differ from `expected`, are missing, or are left over under schema/."""
    stale = [path for path, text in expected.items() if _read(root / path) != text]
    present = {p.relative_to(root).as_posix() for p in (root / "schema").rglob("*.json")}
    return sorted(stale + sorted(present - set(expected)))


def write(root: Path, expected: Mapping[str, str]) -> list[str]:
    """Write what differs and remove leftovers; the paths changed."""
    changed = stale_files(root, expected)
    for path in changed:
        target = root / path
        if path in expected:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(expected[path], encoding="utf-8")
        else:
            target.unlink()
    return changed


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=REGENERATE, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if a file differs")
    args = parser.parse_args(argv)
    expected = documents()
    if args.check:
        stale = stale_files(CONTRACTS, expected)
        for path in stale:
            print(f"contracts/{path} is out of date; run: {REGENERATE}", file=sys.stderr)
        return 1 if stale else 0
    for path in write(CONTRACTS, expected):
        print(f"contracts/{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
