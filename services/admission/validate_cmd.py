"""`lahar validate`: admission's rules offline, over manifest files.

Every document is checked as a create against a cluster made of all the given documents (plus the root
and default queues every cluster has), so a job may name a queue defined in another file. Exit status 0
when every document is valid, 1 otherwise, with every error listed: the parser's and admission's alike.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from contracts.errors import FieldError, ManifestError
from contracts.objects import CLUSTER_SCOPED, ApiObject
from contracts.parse import parse_object
from services.admission.core.admit import admit, context_from_objects

EXIT_VALID = 0
EXIT_INVALID = 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="check manifests against admission's rules, offline")
    p.add_argument(
        "-f", "--filename", action="append", required=True, metavar="FILE", help="manifest (repeatable)"
    )
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")
    p.set_defaults(handler=run)


def document_name(source: str, number: int, doc: object) -> str:
    """Names documents as contracts.parse does, e.g. "jobs.yaml#2 (Job default/train)"."""
    name = f"{source}#{number}"
    kind = doc.get("kind") if isinstance(doc, Mapping) else None
    if not isinstance(kind, str) or not kind:
        return name
    meta = doc.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    object_name = meta.get("name")
    if not isinstance(object_name, str) or not object_name:
        return f"{name} ({kind})"
    if kind in CLUSTER_SCOPED:
        return f"{name} ({kind} {object_name})"
    namespace = meta.get("namespace")
    namespace = namespace if isinstance(namespace, str) and namespace else "default"
    return f"{name} ({kind} {namespace}/{object_name})"


def load(paths: Sequence[str]) -> tuple[list[tuple[str, ApiObject]], list[FieldError]]:
    """Every document that parses, with its name, and every parse problem. Documents are parsed one by one
    (not with load_files, which gives all or nothing) so one broken document does not hide the rule
    violations of the others."""
    loaded: list[tuple[str, ApiObject]] = []
    errors: list[FieldError] = []
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(FieldError(str(path), "", f"cannot read the file: {exc}"))
            continue
        number = 0
        try:
            for doc in yaml.safe_load_all(text):
                number += 1
                if doc is None:
                    continue
                name = document_name(str(path), number, doc)
                try:
                    loaded.append((name, parse_object(doc, name)))
                except ManifestError as exc:
                    errors.extend(exc.errors)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc)
            errors.append(FieldError(f"{path}#{number + 1}", "", f"YAML syntax error{where}: {problem}"))
    return loaded, errors


def validate_files(paths: Sequence[str]) -> tuple[int, list[FieldError]]:
    """(number of documents, every error)."""
    loaded, errors = load(paths)
    context = context_from_objects(obj for _, obj in loaded)
    for document, obj in loaded:
        errors.extend(admit(obj, context, document).errors)
    return len(loaded), errors


def run(args: argparse.Namespace) -> int:
    count, errors = validate_files(args.filename)
    if args.output == "json":
        report = {
            "valid": not errors,
            "errors": [{"document": e.document, "path": e.path, "message": e.message} for e in errors],
        }
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    elif errors:
        for error in errors:
            print(error)
        documents = len({error.document for error in errors})
        print(f"{len(errors)} error(s) in {documents} document(s)", file=sys.stderr)
    else:
        print(f"{count} document(s) valid")
    return EXIT_INVALID if errors else EXIT_VALID
