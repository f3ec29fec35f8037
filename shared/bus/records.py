"""Messages as read back from a stream, and acknowledgements of published ones."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from shared.bus.envelope import Envelope


@dataclass(frozen=True, slots=True)
class StreamRecord:
    """One stored message: where it sits in the stream and its raw content.

    Decoding is left to envelope() so a consumer decides what to do with a message that is not an
    envelope (stop a replay, or terminate a delivery and report it).
    """

    stream: str
    seq: int
    subject: str
    data: bytes
    headers: Mapping[str, str] = field(default_factory=dict)

    def envelope(self) -> Envelope:
        """Decode the payload; raises EnvelopeError for anything that is not an envelope."""
        return Envelope.decode(self.data)


@dataclass(frozen=True, slots=True)
class PublishAck:
    """Where a published event landed. duplicate: it was already stored (a retried publish)."""

    stream: str
    seq: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class BatchAck:
    """Where an atomic batch landed: the contiguous sequences first_seq..last_seq."""

    stream: str
    batch_id: str
    first_seq: int
    last_seq: int

    @property
    def count(self) -> int:
        return self.last_seq - self.first_seq + 1
