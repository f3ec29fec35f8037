"""`lahar validate`: admission's rules offline, over manifest files.

Every document is checked as a create against a cluster made of all the given documents (plus the root
and default queues every cluster has), so a job may name a queue defined in another file. Each file is
also checked as `lahar apply` sends it, as one request: within admission's default size and pod caps
(contracts/limits.py; the flags set the caps a cluster was configured with). Exit status 0 when every
document is valid, 1 otherwise, with every error listed: the parser's and admission's alike.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from contracts.errors import FieldError
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
    p.set_defaults(handler=run)


def load(
    paths: Sequence[str], caps: PodCaps = DEFAULT_CAPS
) -> tuple[list[tuple[str, ApiObject]], list[FieldError]]:
    """Every document that parses, with its name, and every parse problem. Documents are parsed one by one
    (not with load_files, which gives all or nothing) so one broken document does not hide the rule
    violations of the others. Each file is checked against the limits of one request."""
    loaded: list[tuple[str, ApiObject]] = []
    errors: list[FieldError] = []
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
        parsed, problems = parse_documents(text, str(path))
        documents = [(d.name, d.object) for d in parsed]
        loaded.extend(documents)
        errors.extend(problems)
        errors.extend(pod_cap_errors(documents, caps, str(path)))
    return loaded, errors


def validate_files(paths: Sequence[str], caps: PodCaps = DEFAULT_CAPS) -> tuple[int, list[FieldError]]:
    """(number of documents, every error)."""
    loaded, errors = load(paths, caps)
    context = context_from_objects(obj for _, obj in loaded)
    for document, obj in loaded:
        admitted = admit(obj, context, document)
        errors.extend(admitted.errors)
        # names a Job and a plain object share (plain objects are checked as admission would store them)
        errors.extend(claim_errors(admitted.object, context, document))
    return len(loaded), errors


def run(args: argparse.Namespace) -> int:
    caps = PodCaps(args.max_pods_per_job, args.max_pods_per_request)
    for problem in caps.problems():
        print(f"lahar validate: {problem}", file=sys.stderr)
        return EXIT_USAGE
    count, errors = validate_files(args.filename, caps)
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
