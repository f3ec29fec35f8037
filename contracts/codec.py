"""API objects to plain data and back, for event payloads and the etcd read model.

The encoding is generic over the dataclasses of `contracts.objects`: a dataclass becomes a mapping of its
field names (snake_case), `Resources` a mapping of dimension -> milli-units, read-only mappings become
mappings and tuples lists. Every value is then MessagePack- and JSON-safe. Decoding follows the field type
hints, so the schema is the dataclass and cannot drift from it.

Both directions sit on every hot path of the control plane (each event a service folds, each object the
job-controller renders to the read model), so neither reflects per call: `contracts.codec_encode` and
`contracts.codec_decode` compile an encoder and a decoder per class from its hints on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contracts import objects, objects_flow
from contracts.codec_decode import decode
from contracts.codec_encode import encode
from contracts.codec_values import DecodeError
from contracts.objects import ApiObject

__all__ = ["KINDS", "DecodeError", "decode", "decode_object", "encode", "encode_object"]

KINDS: Mapping[str, type[ApiObject]] = {
    cls.kind: cls
    for cls in (
        objects.Node,
        objects.Pod,
        objects.PriorityClass,
        objects.PodGroup,
        objects.Queue,
        objects.HyperNode,
        objects.Job,
        objects.Command,
        objects_flow.CronJob,
        objects_flow.JobTemplate,
        objects_flow.JobFlow,
    )
}


def encode_object(obj: ApiObject) -> dict[str, Any]:
    """An API object with its kind, so it can be decoded without knowing the kind in advance."""
    return {"kind": obj.kind, "object": encode(obj)}


def decode_object(data: Mapping[str, Any]) -> ApiObject:
    kind = data.get("kind")
    # a kind that is not a string (a list, a mapping) is unknown too, not a TypeError from the lookup
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise DecodeError(f"unknown kind {kind!r}")
    return decode(cls, data.get("object"))
