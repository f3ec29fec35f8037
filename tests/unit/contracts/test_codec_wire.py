"""The codec's wire format is frozen: logs and etcd read models written by earlier versions must decode, and
what is written now must be what they would have written. Random objects of every kind are checked against
a copy of the original reflective encoder, value types and key order included."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any

import msgpack
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts import objects, objects_flow
from contracts.codec import KINDS, decode_object, encode, encode_object
from contracts.objects import Container, ObjectMeta, PodSpec, frozen_map
from contracts.resources import Resources


def reference_encode(value: Any) -> Any:
    """The encoder every stored payload was written with, kept verbatim as the definition of the format."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: reference_encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Resources):
        return dict(value.items())
    if isinstance(value, Mapping):
        return {str(k): reference_encode(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [reference_encode(v) for v in value]
    return value


def typed(value: Any) -> Any:
    """Plain data with every value's type and every mapping's key order made part of equality (1, 1.0 and
    True are equal in Python, and so are dicts in different orders; on the wire they are not)."""
    if isinstance(value, dict):
        return ("dict", tuple((k, typed(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(typed(v) for v in value))
    return (type(value).__name__, value)


# --- random API objects, drawn from the dataclasses' own type hints -----------------------------------

_INT64 = st.integers(-(2**63), 2**63 - 1)
_FLOATS = st.floats(allow_nan=False, allow_infinity=False)  # JSON has neither
_NAMES = st.text(max_size=6)
# free-form values (hinted `object`) as a decoder returns them: frozen, so they compare equal after a trip
_FREE_FORM = st.recursive(
    st.none() | st.booleans() | _INT64 | _FLOATS | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=2).map(tuple) | st.dictionaries(_NAMES, inner, max_size=2).map(frozen_map)
    ),
    max_leaves=4,
)
_SCALARS: dict[Any, st.SearchStrategy] = {
    str: st.text(max_size=6),
    int: _INT64,
    float: _FLOATS,
    bool: st.booleans(),
    object: _FREE_FORM,
}


@functools.cache
def strategy_for(hint: Any) -> st.SearchStrategy:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        (inner,) = (a for a in args if a is not type(None))
        return st.none() | strategy_for(inner)
    if hint is Resources:
        return st.dictionaries(_NAMES, st.integers(0, 2**53), max_size=3).map(Resources)
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint, {**vars(objects), **vars(objects_flow)})
        fields = {f.name: strategy_for(hints[f.name]) for f in dataclasses.fields(hint)}
        return st.builds(hint, **fields)
    if origin is tuple:
        return st.lists(strategy_for(args[0]), max_size=2).map(tuple)
    if origin is Mapping:
        return st.dictionaries(_NAMES, strategy_for(args[1]), max_size=2).map(frozen_map)
    return _SCALARS[hint]


_EXAMPLES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("kind", sorted(KINDS))
@_EXAMPLES
@given(data=st.data())
def test_plain_data_is_what_the_reference_encoder_wrote(kind: str, data: st.DataObject) -> None:
    obj = data.draw(strategy_for(KINDS[kind]))
    assert typed(encode_object(obj)) == typed({"kind": kind, "object": reference_encode(obj)})


@pytest.mark.parametrize("kind", sorted(KINDS))
@_EXAMPLES
@given(data=st.data())
def test_stored_payloads_decode_to_an_equal_frozen_object(kind: str, data: st.DataObject) -> None:
    obj = data.draw(strategy_for(KINDS[kind]))
    stored = {"kind": kind, "object": reference_encode(obj)}
    for decoded in (
        decode_object(msgpack.unpackb(msgpack.packb(stored))),
        decode_object(orjson.loads(orjson.dumps(stored))),
        decode_object(encode_object(obj)),
    ):
        assert decoded == obj
        hash(decoded)  # free-form values came back read-only and hashable


@dataclasses.dataclass(frozen=True)
class _Inner:
    labels: Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class _Outer:
    """Hints that name a class contracts.objects does not know."""

    inner: _Inner
    inners: tuple[_Inner, ...]
    anything: object


@pytest.mark.parametrize(
    "value",
    [
        # what the hints do not promise: a dict for a Mapping, a list for a tuple, a dict for Resources,
        # keys that are not str
        PodSpec(
            node_selector={"zone": "a", 1: "one"},  # type: ignore[dict-item]
            containers=[Container(name="c", command=["sleep"], requests={"cpu": 500})],  # type: ignore[arg-type]
        ),
        ObjectMeta(name="p", labels=frozen_map({2: "two"})),  # type: ignore[dict-item]
        _Outer(_Inner(frozen_map({"a": "b"})), (_Inner({}),), anything=[(1, 2.5), {"k": None}]),
        {"pods": (PodSpec(),), 3: Resources.of(cpu=1)},
    ],
    ids=["plain-containers", "int-keys", "foreign-dataclass", "bare-mapping"],
)
def test_values_the_hints_do_not_promise_encode_as_the_reference_does(value: Any) -> None:
    assert typed(encode(value)) == typed(reference_encode(value))
