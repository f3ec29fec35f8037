"""Every API object kind as contracts.codec writes it fits its checked-in schema (schema/objects/), and the
schema says what the decoder reads: defaults may be left out, resources are integer milli-units."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from support.schemas import CONTRACTS, load, problems

from contracts.codec import KINDS, DecodeError, decode_object, encode_object
from contracts.objects import ApiObject
from contracts.parse import parse_documents
from contracts.schema_gen import object_path

EXAMPLES_DIR = CONTRACTS.parent / "examples"


def example_objects() -> dict[str, list[ApiObject]]:
    """Every object the manifests in examples/ parse to (the invalid ones included: most are refused by
    admission, not by the parser), by kind."""
    found: dict[str, list[ApiObject]] = {kind: [] for kind in KINDS}
    for path in sorted(EXAMPLES_DIR.rglob("*.yaml")):
        parsed, _errors = parse_documents(
            path.read_text(encoding="utf-8"), str(path.relative_to(EXAMPLES_DIR))
        )
        for document in parsed:
            found[document.object.kind].append(document.object)
    return found


EXAMPLES = example_objects()


def wire(obj: ApiObject) -> dict[str, Any]:
    return msgpack.unpackb(msgpack.packb(encode_object(obj), use_bin_type=True), raw=False)  # type: ignore[no-any-return]


def test_there_is_an_example_of_every_kind() -> None:
    assert sorted(kind for kind, objects in EXAMPLES.items() if not objects) == []


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_example_fits_its_kinds_schema(kind: str) -> None:
    misfits = {obj.meta.key: problems(object_path(kind), wire(obj)) for obj in EXAMPLES[kind]}
    assert {key: found for key, found in misfits.items() if found} == {}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_fields_left_at_their_defaults_may_be_left_out(kind: str) -> None:
    obj = EXAMPLES[kind][0]
    definition = load(object_path(kind))["$defs"][KINDS[kind].__name__]
    required = definition["required"]
    plain = wire(obj)
    defaults = {
        field: schema["default"] for field, schema in definition["properties"].items() if "default" in schema
    }
    assert set(required) | set(defaults) == set(definition["properties"])
    at_defaults = [field for field, value in plain["object"].items() if defaults.get(field, ...) == value]
    trimmed = {**plain, "object": {k: v for k, v in plain["object"].items() if k not in at_defaults}}
    assert problems(object_path(kind), trimmed) == []
    assert decode_object(trimmed) == obj


def test_the_tag_must_name_the_schemas_kind() -> None:
    plain = wire(EXAMPLES["Node"][0])
    assert problems(object_path("Pod"), plain) != []
    assert problems(object_path("Node"), {"object": plain["object"]}) != []


def test_resources_are_integer_milli_units_not_quantities() -> None:
    plain = wire(EXAMPLES["Node"][0])
    assert isinstance(plain["object"]["allocatable"]["cpu"], int)
    quantities = {**plain, "object": {**plain["object"], "allocatable": {"cpu": "4", "memory": "8Gi"}}}
    assert problems(object_path("Node"), quantities) != []
    with pytest.raises(DecodeError, match=r"Node\.allocatable"):
        decode_object(quantities)


def test_a_missing_required_field_is_refused_by_both() -> None:
    plain = wire(EXAMPLES["HyperNode"][0])
    without_tier = {**plain, "object": {k: v for k, v in plain["object"].items() if k != "tier"}}
    assert any("'tier' is a required property" in p for p in problems(object_path("HyperNode"), without_tier))
    with pytest.raises(DecodeError, match=r"HyperNode\.tier"):
        decode_object(without_tier)
