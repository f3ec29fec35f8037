"""Reading a manifest text sent to admission, as the API and the intake stream both do: every document,
every error (`Invalid`), and the unknown fields a caller asked to have as warnings.

How unknown fields are treated is the request's `Lahar-Validate` header (an apply request's or an intake
message's): strict (the default: each is an error and the manifest is refused), warn (accepted; each is
a warning, in the API's reply) or ignore (contracts/known_fields.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from contracts.errors import FieldError
from contracts.known_fields import STRICT, validation_mode
from contracts.objects import ApiObject
from contracts.parse import parse_documents
from services.admission.core.context import ClusterContext
from services.admission.core.decide import APPLY, Request
from services.admission.core.pod_caps import PodCaps, pod_cap_errors
from shared.bus.jetstream import MAX_BATCH_MESSAGES

VALIDATE_HEADER = "Lahar-Validate"


class Invalid(ValueError):
    def __init__(self, errors: Sequence[FieldError]) -> None:
        self.errors = tuple(errors)
        super().__init__("; ".join(str(e) for e in errors))


class _NoAliases(yaml.SafeLoader):
    """YAML without aliases: an alias bomb in a few bytes would otherwise expand into a huge tree."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases (*name) are not accepted", event.start_mark
            )
        return super().compose_node(parent, index)


@dataclass(frozen=True, slots=True)
class Manifests:
    documents: list[tuple[str, ApiObject]]  # each object with its document's name
    warnings: tuple[FieldError, ...] = ()  # unknown fields, when the request asked for warnings


def validate_mode(headers: Mapping[str, str] | None, source: str) -> str:
    """The mode a request's Lahar-Validate header asks for (strict without one); Invalid naming the
    header when it names no mode."""
    value = next((v for k, v in (headers or {}).items() if k.lower() == VALIDATE_HEADER.lower()), None)
    if value is None:
        return STRICT
    try:
        return validation_mode(value)
    except ValueError as exc:
        raise Invalid([FieldError(source, VALIDATE_HEADER, str(exc))]) from None


def parse_manifests(
    data: bytes, source: str, max_bytes: int, caps: PodCaps, validate: str = STRICT
) -> Manifests:
    """Every object of a manifest text, each with its document name ("<source>#<n> (<Kind> <key>)"), or
    Invalid listing every problem of every document, including pods beyond `caps`."""
    if len(data) > max_bytes:
        raise Invalid(
            [FieldError(source, "", f"the manifest is {len(data)} bytes, the limit is {max_bytes}")]
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Invalid([FieldError(source, "", f"the manifest is not UTF-8 text ({exc.reason})")]) from exc
    parsed, errors = parse_documents(text, source, loader=_NoAliases, validate=validate)
    loaded: list[tuple[str, ApiObject]] = [(d.name, d.object) for d in parsed]
    if not errors and not loaded:
        errors.append(FieldError(source, "", "the manifest holds no object"))
    if len(loaded) > MAX_BATCH_MESSAGES:
        errors.append(
            FieldError(source, "", f"{len(loaded)} objects in one request; at most {MAX_BATCH_MESSAGES}")
        )
    errors.extend(pod_cap_errors(loaded, caps, source))
    if errors:
        raise Invalid(errors)
    return Manifests(loaded, tuple(warning for d in parsed for warning in d.warnings))


def apply_requests(documents: Sequence[tuple[str, ApiObject]]) -> Callable[[ClusterContext], list[Request]]:
    return lambda _context: [Request(APPLY, obj, document=name) for name, obj in documents]
