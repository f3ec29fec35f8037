"""`lahar validate`: admission's rules offline, over manifest files.

Every document is checked as a create against a cluster made of all the given documents (plus the root
and default queues every cluster has), so a job may name a queue defined in another file. Each file is
also checked as `lahar apply` sends it, as one request: within admission's default size and pod caps
(contracts/limits.py; the flags set the caps a cluster was configured with). Exit status 0 when every
document is valid, 1 otherwise, with every error listed: the parser's and admission's alike.

A field the kind's API does not know is an error (kubectl's --validate=strict); --validate=warn accepts
the document and prints each such field on stderr as a warning, --validate=ignore passes over them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from contracts.errors import FieldError
from contracts.known_fields import STRICT, validation_mode
from contracts.limits import MAX_MANIFEST_BYTES, MAX_PODS_PER_JOB, MAX_PODS_PER_REQUEST
from contracts.objects import ApiObject
from contracts.parse import parse_documents
from services.admission.core.admit import admit, context_from_objects
from services.admission.core.name_claims import claim_errors
from services.admission.core.pod_caps import PodCaps, pod_cap_errors

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
DEFAULT_CAPS = PodCaps()


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="check manifests against admission's rules, offline")
    p.add_argument(
        "-f", "--filename", action="append", required=True, metavar="FILE", help="manifest (repeatable)"
    )
    p.add_argument("-o", "--output", choices=("text", "json"), default="text")
    p.add_argument(
        "--max-pods-per-job",
        type=int,
        default=MAX_PODS_PER_JOB,
        metavar="N",
        help=f"admission's max_pods_per_job (default {MAX_PODS_PER_JOB})",
    )
    p.add_argument(
        "--max-pods-per-request",
        type=int,
        default=MAX_PODS_PER_REQUEST,
        metavar="N",
        help=f"admission's max_pods_per_request, checked per file (default {MAX_PODS_PER_REQUEST})",
    )
    add_validate_flag(p)
    p.set_defaults(handler=run)


def add_validate_flag(parser: argparse.ArgumentParser) -> None:
    """kubectl's --validate: what a field the kind's API does not know makes (`lahar validate`, `apply`)."""
    parser.add_argument(
        "--validate",
        type=_mode,
        nargs="?",
        const=STRICT,
        default=STRICT,
        metavar="strict|warn|ignore",
        help="an unknown field is an error (strict, the default; also true), a warning (warn) or "
        "passed over (ignore; also false)",
    )


def _mode(text: str) -> str:
    try:
        return validation_mode(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


@dataclass(slots=True)
class Checked:
    """What checking manifest files found: the documents read, every error, and (--validate=warn) the
    unknown fields of the documents accepted."""

    count: int = 0
    errors: list[FieldError] = field(default_factory=list)
    warnings: list[FieldError] = field(default_factory=list)


def load(
    paths: Sequence[str], caps: PodCaps = DEFAULT_CAPS, validate: str = STRICT
) -> tuple[list[tuple[str, ApiObject]], Checked]:
    """Every document that parses, with its name, and every parse problem and warning. Documents are
    parsed one by one (not with load_files, which gives all or nothing) so one broken document does not
    hide the rule violations of the others. Each file is checked against the limits of one request."""
    loaded: list[tuple[str, ApiObject]] = []
    checked = Checked()
    errors = checked.errors
    for path in paths:
        try:
            data = Path(path).read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(FieldError(str(path), "", f"cannot read the file: {exc}"))
            continue
        if len(data) > MAX_MANIFEST_BYTES:
            message = (
                f"the file is {len(data)} bytes; admission takes at most {MAX_MANIFEST_BYTES} in one request"
            )
            errors.append(FieldError(str(path), "", message))
        parsed, problems = parse_documents(text, str(path), validate=validate)
        documents = [(d.name, d.object) for d in parsed]
        loaded.extend(documents)
        errors.extend(problems)
        checked.warnings.extend(warning for d in parsed for warning in d.warnings)
        errors.extend(pod_cap_errors(documents, caps, str(path)))
    checked.count = len(loaded)
    return loaded, checked


def validate_files(
    paths: Sequence[str], caps: PodCaps = DEFAULT_CAPS, validate: str = STRICT
) -> tuple[int, list[FieldError]]:
    """(number of documents, every error); check_files also gives the warnings."""
    checked = check_files(paths, caps, validate)
    return checked.count, checked.errors


def check_files(paths: Sequence[str], caps: PodCaps = DEFAULT_CAPS, validate: str = STRICT) -> Checked:
    loaded, checked = load(paths, caps, validate)
    context = context_from_objects(obj for _, obj in loaded)
    for document, obj in loaded:
        admitted = admit(obj, context, document)
        checked.errors.extend(admitted.errors)
        # names a Job and a plain object share (plain objects are checked as admission would store them)
        checked.errors.extend(claim_errors(admitted.object, context, document))
    return checked


def run(args: argparse.Namespace) -> int:
    caps = PodCaps(args.max_pods_per_job, args.max_pods_per_request)
    for problem in caps.problems():
        print(f"lahar validate: {problem}", file=sys.stderr)
        return EXIT_USAGE
    checked = check_files(args.filename, caps, args.validate)
    count, errors = checked.count, checked.errors
    for warning in checked.warnings:  # kubectl's form of a server's warning
        print(f"Warning: {warning}", file=sys.stderr)
    if args.output == "json":
        report = {"valid": not errors, "errors": _listed(errors)}
        if checked.warnings:
            report["warnings"] = _listed(checked.warnings)
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    elif errors:
        for error in errors:
            print(error)
        documents = len({error.document for error in errors})
        print(f"{len(errors)} error(s) in {documents} document(s)", file=sys.stderr)
    else:
        print(f"{count} document(s) valid")
    return EXIT_INVALID if errors else EXIT_VALID


def _listed(errors: Sequence[FieldError]) -> list[dict[str, str]]:
    return [{"document": e.document, "path": e.path, "message": e.message} for e in errors]
