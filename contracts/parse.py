"""Kubernetes and Volcano manifests (YAML or JSON) to typed API objects.

Everything wrong in a manifest is reported at once: `parse_object` and the loaders raise one
`ManifestError` listing every problem, each with its document and field path. `parse_object` reads the
fields lahar uses and passes over the others; `parse_documents` (and so the loaders) also names every
field the kind's API does not know (known_fields.py), as an error by default, as the Kubernetes API server
does. Defaulting that admission webhooks would do is left to admission.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson
import yaml

from contracts.errors import FieldError, ManifestError
from contracts.known_fields import IGNORE, STRICT, VALIDATION_MODES, unknown_manifest_fields
from contracts.limits import ECHO_MAX_CHARS, MAX_NESTING_DEPTH, clip, deeper_than
from contracts.objects import API_VERSIONS, CLUSTER_SCOPED, OLDER_API_VERSIONS, ApiObject, ObjectMeta
from contracts.parse_core import (
    parse_meta,
    parse_node,
    parse_pod,
    parse_priority_class,
)
from contracts.parse_fields import (
    Fields,
    describe,
    duration_seconds,
)
from contracts.parse_flow import parse_cronjob, parse_jobflow, parse_jobtemplate
from contracts.parse_volcano import (
    parse_command,
    parse_hypernode,
    parse_job,
    parse_podgroup,
    parse_queue,
)

__all__ = ["SUPPORTED_KINDS", "duration_seconds", "load_documents", "load_files", "parse_object"]

_PARSERS: Mapping[str, Callable[[Fields, ObjectMeta], ApiObject]] = {
    "Node": parse_node,
    "Pod": parse_pod,
    "PriorityClass": parse_priority_class,
    "PodGroup": parse_podgroup,
    "Queue": parse_queue,
    "HyperNode": parse_hypernode,
    "Job": parse_job,
    "Command": parse_command,
    "CronJob": parse_cronjob,
    "JobTemplate": parse_jobtemplate,
    "JobFlow": parse_jobflow,
}
SUPPORTED_KINDS = frozenset(_PARSERS)  # every kind a manifest may be


def parse_object(doc: Mapping[str, object], document: str) -> ApiObject:
    """The API object `doc` describes, chosen by its apiVersion and kind; `document` names it in errors."""
    if not isinstance(doc, Mapping):
        raise ManifestError(
            [FieldError(document, "", f"expected a mapping (an API object), got {describe(doc)}")]
        )
    errors: list[FieldError] = []
    fields = Fields(doc, "", document, errors)
    kind = fields.string("kind", required=True)
    api_version = fields.string("apiVersion", required=True)
    parser = _PARSERS.get(kind)
    if parser is None:
        if kind:
            fields.error(f"expected one of {', '.join(sorted(_PARSERS))}, got {describe(kind)}", "kind")
        raise ManifestError(errors)
    accepted = (API_VERSIONS[kind], *OLDER_API_VERSIONS.get(kind, ()))
    if api_version and api_version not in accepted:
        expected = " or ".join(repr(version) for version in accepted)
        fields.error(f"expected {expected} for kind {kind}, got {describe(api_version)}", "apiVersion")
    obj = parser(fields, parse_meta(fields, cluster_scoped=kind in CLUSTER_SCOPED))
    if errors:
        raise ManifestError(errors)
    return obj


def load_documents(text: str, source: str) -> list[ApiObject]:
    """Every object in a multi-document YAML (or JSON) text; empty documents are skipped. Documents are
    named "<source>#<n>" in errors, n counting from 1."""
    errors: list[FieldError] = []
    loaded = _load_text(text, source, errors)
    if errors:
        raise ManifestError(errors)
    return [obj for obj, _ in loaded]


def load_files(paths: Sequence[str | Path], *, validate: str = STRICT) -> list[ApiObject]:
    """Every object in the given files, in order, with identity filled in where the manifests omit it:
    creationTimestamp becomes the object's position in the whole list (0.0, 1.0, ...), so Volcano's
    "creationTimestamp, then UID" order is document order, and uid becomes "<namespace>-<name>" (just the
    name for cluster-scoped kinds). An unknown field is an error, unless `validate` is warn or ignore
    (then it is passed over: the loaders return no warnings)."""
    errors: list[FieldError] = []
    loaded: list[tuple[ApiObject, bool]] = []
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(FieldError(str(path), "", f"cannot read the file: {exc}"))
            continue
        loaded.extend(_load_text(text, str(path), errors, validate))
    if errors:
        raise ManifestError(errors)
    return [_with_identity(obj, index, stamped) for index, (obj, stamped) in enumerate(loaded)]


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    name: str  # "jobs.yaml#2 (Job default/distcc)"
    object: ApiObject
    stamped: bool  # the manifest gave a creationTimestamp
    warnings: tuple[FieldError, ...] = ()  # its unknown fields, when they are warnings (validate="warn")


def parse_documents(
    text: str,
    source: str,
    *,
    loader: type[yaml.SafeLoader] = yaml.SafeLoader,
    validate: str = STRICT,
) -> tuple[list[ParsedDocument], list[FieldError]]:
    """Every document of a multi-document text that parses, and every problem of those that do not, so
    that one broken document does not hide what is wrong with the others. `loader` lets a server refuse
    YAML features (aliases) that a file on a user's disk may use. Documents nested more than
    MAX_NESTING_DEPTH levels deep are refused, whatever the loader.

    `validate` (known_fields.VALIDATION_MODES) says what a field the kind's API does not know makes:
    strict, an error that refuses its document (listed before the document's other problems: a misspelt
    field often explains them); warn, a warning in the document's `warnings` (a document refused for
    other reasons has none); ignore, nothing."""
    if validate not in VALIDATION_MODES:
        raise ValueError(f"validate: expected one of {', '.join(VALIDATION_MODES)}, got {validate!r}")
    loaded: list[ParsedDocument] = []
    errors: list[FieldError] = []
    number = 0
    try:
        for doc, from_json in _documents(text, _depth_bounded(loader)):
            number += 1
            if doc is None:
                continue
            name = document_name(source, number, doc)
            if json_deeper_than(doc, MAX_NESTING_DEPTH) if from_json else deeper_than(doc):
                errors.append(FieldError(name, "", _TOO_DEEP))
                continue
            unknown = [] if validate == IGNORE else unknown_manifest_fields(doc, name)
            refused = validate == STRICT and unknown
            if refused:
                errors.extend(unknown)
            try:
                parsed = parse_object(doc, name)
            except ManifestError as exc:
                errors.extend(exc.errors)
                continue
            if not refused:
                loaded.append(ParsedDocument(name, parsed, _has_timestamp(doc), tuple(unknown)))
    except yaml.YAMLError as exc:
        # the stream cannot be read past a syntax error; what was parsed before it is still checked
        errors.append(FieldError(f"{source}#{number + 1}", "", _syntax_message(exc)))
    except ValueError as exc:
        # a scalar YAML's resolver took for an int or a date that Python cannot make one of
        # (an integer of 5,000 digits, 2024-13-45)
        errors.append(FieldError(f"{source}#{number + 1}", "", f"cannot read a value: {exc}"))
    return loaded, errors


_TOO_DEEP = f"mappings and lists nest more than {MAX_NESTING_DEPTH} levels deep; lahar reads at most that"


class TooDeep(yaml.MarkedYAMLError):
    """A YAML document nests deeper than MAX_NESTING_DEPTH."""


class _DepthBounded(yaml.SafeLoader):
    """Composes YAML nodes no deeper than MAX_NESTING_DEPTH. PyYAML's composer recurses once per level,
    so a document of 100,000 nested lists would otherwise end in a RecursionError; here it ends early,
    as an error that says where."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.CollectionStartEvent):
            if self._depth >= MAX_NESTING_DEPTH:
                event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in PyYAML's stubs
                raise TooDeep(None, None, _TOO_DEEP, event.start_mark)
            self._depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1
        return super().compose_node(parent, index)


_BOUNDED: dict[type[yaml.SafeLoader], type[yaml.SafeLoader]] = {}


def _depth_bounded(loader: type[yaml.SafeLoader]) -> type[yaml.SafeLoader]:
    """`loader`, its composer bounded in depth (one class made per loader)."""
    if issubclass(loader, _DepthBounded):
        return loader
    if loader not in _BOUNDED:
        _BOUNDED[loader] = type(f"DepthBounded{loader.__name__}", (_DepthBounded, loader), {})
    return _BOUNDED[loader]


def _documents(text: str, loader: type[yaml.SafeLoader]) -> Iterator[tuple[Any, bool]]:
    """The documents of a text, each with whether the JSON parser read it. A JSON object (what producers
    on the bus send) is read by a JSON parser, some fifty times faster than YAML's for the same document;
    anything else, or JSON the fast parser refuses, is read as YAML (JSON is YAML), whose errors say where
    the text is wrong."""
    if text.lstrip().startswith("{"):
        try:
            yield orjson.loads(text), True
            return
        except orjson.JSONDecodeError:
            pass
    for doc in yaml.load_all(text, Loader=loader):
        yield doc, False


def json_deeper_than(node: Any, limit: int, depth: int = 0) -> bool:
    """deeper_than (contracts/limits.py) for a tree the JSON parser made: only dicts and lists, none met
    twice (JSON has no aliases), so a plain walk measures it, about eight times faster than the general
    one. The recursion stops at `limit` levels, so it stays shallow whatever the document."""
    if depth >= limit:
        return True
    children = node.values() if node.__class__ is dict else node
    for child in children:
        kind = child.__class__
        if (kind is dict or kind is list) and json_deeper_than(child, limit, depth + 1):
            return True
    return False


def _load_text(
    text: str, source: str, errors: list[FieldError], validate: str = STRICT
) -> list[tuple[ApiObject, bool]]:
    loaded, problems = parse_documents(text, source, validate=validate)
    errors.extend(problems)
    return [(d.object, d.stamped) for d in loaded]


def _syntax_message(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    what = "document too deep" if isinstance(exc, TooDeep) else "YAML syntax error"
    if mark is None:
        return f"{what}: {problem}"
    return f"{what} at line {mark.line + 1}, column {mark.column + 1}: {problem}"


def document_name(source: str, number: int, doc: object) -> str:
    """E.g. "jobs.yaml#2 (Job default/distcc)", with as much of the identity as the document gives."""
    name = f"{source}#{number}"
    if not isinstance(doc, Mapping):
        return name
    kind = doc.get("kind")
    if not isinstance(kind, str) or not kind:
        return name
    # every error of the document repeats its name: what the document says of itself is cut short
    kind = clip(kind, ECHO_MAX_CHARS)
    meta = doc.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    object_name = meta.get("name")
    if not isinstance(object_name, str) or not object_name:
        return f"{name} ({kind})"
    object_name = clip(object_name, ECHO_MAX_CHARS)
    namespace = meta.get("namespace")
    if kind in CLUSTER_SCOPED:
        return f"{name} ({kind} {object_name})"
    namespace = clip(namespace, ECHO_MAX_CHARS) if isinstance(namespace, str) and namespace else "default"
    return f"{name} ({kind} {namespace}/{object_name})"


def _has_timestamp(doc: Mapping[str, object]) -> bool:
    meta = doc.get("metadata")
    return isinstance(meta, Mapping) and meta.get("creationTimestamp") is not None


def _with_identity(obj: ApiObject, index: int, stamped: bool) -> ApiObject:
    meta = obj.meta
    if stamped and meta.uid:
        return obj
    creation_timestamp = meta.creation_timestamp if stamped else float(index)
    uid = meta.uid or (f"{meta.namespace}-{meta.name}" if meta.namespace else meta.name)
    return replace(obj, meta=replace(meta, creation_timestamp=creation_timestamp, uid=uid))
