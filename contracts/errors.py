"""Errors for manifests that do not describe valid API objects.

A manifest is checked completely before anything is rejected, so one `ManifestError` carries every problem
found, each pinned to a document and a field path, and a user fixes a file in one round instead of one
error at a time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from contracts.limits import DOCUMENT_MAX_CHARS, MESSAGE_MAX_CHARS, PATH_MAX_CHARS, clip, encodable


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem: where it is and what was expected instead of what was found.

    `document` names the document, e.g. "jobs.yaml#2 (Job default/distcc)"; `path` is the field inside it in
    Kubernetes field-path style, e.g. "spec.tasks[1].replicas", or "" when the problem is the document as a
    whole (such as a YAML syntax error, where the path gives the line and column instead).
    """

    document: str
    path: str
    message: str

    def __post_init__(self) -> None:
        # every rule quotes what it found, and what it found may be a megabyte: an error stays small
        # enough that a rejection listing it can always be published and answered
        for name, limit in (
            ("document", DOCUMENT_MAX_CHARS),
            ("path", PATH_MAX_CHARS),
            ("message", MESSAGE_MAX_CHARS),
        ):
            value = getattr(self, name)
            # what it echoes may hold a lone surrogate (a YAML "\\ud800" escape): an error must be
            # writable into a rejection event and a reply, so it is kept as its escape
            fitted = clip(encodable(value), limit)
            if fitted is not value:
                object.__setattr__(self, name, fitted)

    def __str__(self) -> str:
        if self.path:
            return f"{self.document}: {self.path}: {self.message}"
        return f"{self.document}: {self.message}"


class ManifestError(ValueError):
    """Every problem found in one or more manifests, one per line in str()."""

    def __init__(self, errors: Iterable[FieldError]) -> None:
        self.errors: tuple[FieldError, ...] = tuple(errors)
        super().__init__("\n".join(str(error) for error in self.errors))
