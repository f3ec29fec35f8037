"""A rejection that always fits its message: the intake's ManifestRejected event and the API's reply must
each fit the bus's max payload, or the producer never hears back (and an intake publish that fails
would be retried forever). Errors are listed while they fit, then fewer, then only how many there were.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from contracts.errors import FieldError

MAX_LISTED_ERRORS = 100  # a rejection of a huge garbage manifest stays a small message


def fit_errors(
    errors: Sequence[FieldError],
    encoded_size: Callable[[Sequence[FieldError]], int],
    max_bytes: int,
    source: str,
) -> list[FieldError]:
    """The errors a rejection lists: every one when they fit (at most MAX_LISTED_ERRORS), else the first
    half, quarter, ... of them and a last error saying how many more there were, so that
    `encoded_size(listed)` (the rejection's size with those errors) is at most max_bytes. Each FieldError
    is itself bounded (contracts.errors), so listing none fits any message a bus carries."""
    count = min(len(errors), MAX_LISTED_ERRORS)
    while True:
        listed = _listed(errors, count, source)
        if count == 0 or encoded_size(listed) <= max_bytes:
            return listed
        count //= 2


def _listed(errors: Sequence[FieldError], count: int, source: str) -> list[FieldError]:
    left = len(errors) - count
    if left == 0:
        return list(errors)
    if count == 0:
        return [FieldError(source, "", f"{len(errors)} errors, too many to list in one message")]
    return [*errors[:count], FieldError(source, "", f"and {left} more errors")]
