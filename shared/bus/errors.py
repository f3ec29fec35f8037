"""Errors raised by the bus, each saying what happened in terms of the event log."""

from __future__ import annotations


class BusError(RuntimeError):
    """A bus operation failed; the message says which and why."""


class ConcurrencyConflict(BusError):
    """An expected-last-subject-sequence check failed: someone else wrote to the subject first.

    actual is the subject's last sequence when the conflict was detected (None if it could not be read);
    the writer should refresh its view up to at least that sequence and decide again.
    """

    def __init__(self, subject: str, expected: int, actual: int | None) -> None:
        self.subject = subject
        self.expected = expected
        self.actual = actual
        seen = "unknown" if actual is None else str(actual)
        super().__init__(
            f"concurrent write on {subject}: expected last sequence {expected}, stream has {seen}"
        )


class BatchRejected(BusError):
    """An atomic batch was refused by the server; none of its messages were stored."""

    def __init__(self, reason: str, err_code: int | None = None) -> None:
        self.reason = reason
        self.err_code = err_code
        super().__init__(f"atomic batch rejected, nothing stored: {reason}")


class DuplicateBatch(BatchRejected):
    """A message id of the batch is already in the stream's dedup window.

    Batches are atomic and event ids unique, so this means a batch carrying these events was committed
    before (for instance by an earlier attempt of the same operation whose reply was lost).
    """


class AtomicBatchUnsupported(BusError):
    """The server or the stream does not allow atomic batch publish (needs nats-server >= 2.12)."""


class StreamConfigConflict(BusError):
    """An existing stream's configuration differs in a way the server refuses to update."""


class EventRefused(BusError):
    """The bus refused to write an event that breaks a rule every event keeps (contracts/identity.py:
    its payload is about the object its subject names); writing it again will not help."""
