"""What a new manifest of a stored immutable object (a plain Pod or PodGroup) would change: the manifest
paths of the fields that differ, identity and status aside (the stored object has an identity, and a
status its controllers write, that a manifest does not carry)."""

from __future__ import annotations

from typing import Any

from contracts import codec
from contracts.objects import ApiObject

_IDENTITY = ("uid", "creation_timestamp", "deletion_timestamp", "generation")


def changed_fields(stored: ApiObject, candidate: ApiObject) -> list[str]:
    """Paths like `metadata.labels` or `spec.containers`, in field order; [] when nothing changes."""
    old, new = _comparable(stored), _comparable(candidate)
    return [_path(key) for key in old if old[key] != new.get(key)]


def _comparable(obj: ApiObject) -> dict[str, Any]:
    """Every field as one flat entry: metadata.*, then the spec (a Pod's nested one, a PodGroup's own)."""
    encoded = codec.encode(obj)
    encoded.pop("status", None)
    meta = {f"metadata.{k}": v for k, v in encoded.pop("meta").items() if k not in _IDENTITY}
    spec = encoded.pop("spec") if isinstance(encoded.get("spec"), dict) else encoded
    return meta | {f"spec.{k}": v for k, v in spec.items()}


def _path(key: str) -> str:
    """A dataclass field path as the manifest spells it (snake_case to camelCase)."""
    head, _, field = key.partition(".")
    first, *rest = field.split("_")
    return f"{head}.{first}{''.join(part.capitalize() for part in rest)}"
