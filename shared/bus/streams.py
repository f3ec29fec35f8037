"""Stream definitions and their idempotent creation.

Every service calls ensure_stream() for the streams it uses at start-up, so whoever comes first creates
them and the others find them as specified (or update them when a limit changed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import nats.js.errors
from nats.js import api
from nats.js.manager import JetStreamManager

from shared.bus import subjects
from shared.bus.errors import StreamConfigConflict

# The server reports this error code when a stream of that name exists with another configuration.
_STREAM_NAME_IN_USE = 10058

Retention = Literal["limits", "workqueue", "interest"]
Storage = Literal["file", "memory"]


@dataclass(frozen=True, slots=True)
class StreamSpec:
    """What a stream must look like. Limits of -1 (or 0 seconds) mean unlimited."""

    name: str
    subjects: tuple[str, ...]
    description: str = ""
    retention: Retention = "limits"
    storage: Storage = "file"
    replicas: int = 1
    duplicate_window_s: float = 120.0
    max_age_s: float = 0.0
    max_bytes: int = -1
    max_msgs: int = -1
    max_msg_size: int = -1
    atomic_publish: bool = False
    deny_delete: bool = False
    deny_purge: bool = False

    def to_config(self, *, atomic_supported: bool) -> api.StreamConfig:
        return api.StreamConfig(
            name=self.name,
            description=self.description or None,
            subjects=list(self.subjects),
            retention=api.RetentionPolicy(self.retention),
            storage=api.StorageType(self.storage),
            num_replicas=self.replicas,
            duplicate_window=self.duplicate_window_s,
            max_age=self.max_age_s,
            max_bytes=self.max_bytes,
            max_msgs=self.max_msgs,
            max_msg_size=self.max_msg_size,
            # Direct get serves the last message of a subject from any replica without the stream
            # leader: the conflict path of a compare-and-set publish reads it.
            allow_direct=True,
            allow_atomic=True if self.atomic_publish and atomic_supported else None,
            deny_delete=self.deny_delete,
            deny_purge=self.deny_purge,
        )


def events_stream(*, replicas: int = 1) -> StreamSpec:
    """The domain event log: the source of truth, never trimmed, messages never deleted."""
    return StreamSpec(
        name=subjects.EVENTS_STREAM,
        subjects=(f"{subjects.EVENTS_ROOT}.>",),
        description="lahar domain events (source of truth)",
        replicas=replicas,
        atomic_publish=True,
        deny_delete=True,
        deny_purge=True,
    )


def intake_stream(*, replicas: int = 1) -> StreamSpec:
    """Manifests published by producers, removed once admission has acknowledged them."""
    return StreamSpec(
        name=subjects.INTAKE_STREAM,
        subjects=(f"{subjects.INTAKE_ROOT}.>",),
        description="lahar manifests awaiting admission",
        retention="workqueue",
        replicas=replicas,
    )


def plans_stream(*, replicas: int = 1) -> StreamSpec:
    """Placement and eviction plans for the binder, removed once it has acknowledged them."""
    return StreamSpec(
        name=subjects.PLANS_STREAM,
        subjects=(f"{subjects.PLANS_ROOT}.>",),
        description="lahar plans awaiting the binder",
        retention="workqueue",
        replicas=replicas,
    )


# The poison-message streams keep what they hold for an operator to look at, bounded so a flood of bad
# messages cannot fill the disk: past either limit the oldest records go first.
POISON_MAX_AGE_S = 30 * 24 * 3600.0
POISON_MAX_BYTES = 256 * 1024 * 1024


def quarantine_stream(*, replicas: int = 1) -> StreamSpec:
    """Events of the log a service could not apply, one record per (service, sequence)."""
    return StreamSpec(
        name=subjects.QUARANTINE_STREAM,
        subjects=(f"{subjects.QUARANTINE_ROOT}.>",),
        description="lahar events a service set aside (quarantined), with the reason",
        replicas=replicas,
        max_age_s=POISON_MAX_AGE_S,
        max_bytes=POISON_MAX_BYTES,
    )


def deadletter_stream(*, replicas: int = 1) -> StreamSpec:
    """Intake messages and plans that could not be handled, moved off their work queue."""
    return StreamSpec(
        name=subjects.DEADLETTER_STREAM,
        subjects=(f"{subjects.DEADLETTER_ROOT}.>",),
        description="lahar intake messages and plans no consumer could handle, with the reason",
        replicas=replicas,
        max_age_s=POISON_MAX_AGE_S,
        max_bytes=POISON_MAX_BYTES,
    )


def standard_streams(*, replicas: int = 1) -> tuple[StreamSpec, ...]:
    return (
        events_stream(replicas=replicas),
        intake_stream(replicas=replicas),
        plans_stream(replicas=replicas),
        quarantine_stream(replicas=replicas),
        deadletter_stream(replicas=replicas),
    )


@dataclass(frozen=True, slots=True)
class EnsuredStream:
    name: str
    created: bool
    updated: bool
    atomic_publish: bool


def _normalized(config: api.StreamConfig) -> dict[str, Any]:
    """The fields a StreamSpec controls, with the server's spellings of 'unset' folded together."""

    def enum_value(value: Any) -> Any:
        return getattr(value, "value", value)

    return {
        "description": config.description or None,
        "subjects": sorted(config.subjects or []),
        "retention": enum_value(config.retention),
        "storage": enum_value(config.storage),
        "num_replicas": config.num_replicas or 1,
        "duplicate_window": float(config.duplicate_window or 0),
        "max_age": float(config.max_age or 0),
        "max_bytes": config.max_bytes if config.max_bytes is not None else -1,
        "max_msgs": config.max_msgs if config.max_msgs is not None else -1,
        "max_msg_size": config.max_msg_size if config.max_msg_size is not None else -1,
        "allow_direct": bool(config.allow_direct),
        "allow_atomic": bool(config.allow_atomic),
        "deny_delete": bool(config.deny_delete),
        "deny_purge": bool(config.deny_purge),
    }


async def ensure_stream(jsm: JetStreamManager, spec: StreamSpec, *, atomic_supported: bool) -> EnsuredStream:
    """Create the stream, or update it if it differs from spec; a no-op when it already matches."""
    desired = spec.to_config(atomic_supported=atomic_supported)
    created = updated = False
    try:
        info = await jsm.stream_info(spec.name)
    except nats.js.errors.NotFoundError:
        try:
            info = await jsm.add_stream(desired)
            created = True
        except nats.js.errors.BadRequestError as exc:
            # Lost a creation race against another service with a different view of the spec:
            # fall through to the update path below.
            if exc.err_code != _STREAM_NAME_IN_USE:
                raise StreamConfigConflict(f"cannot create stream {spec.name}: {exc.description}") from exc
            info = await jsm.stream_info(spec.name)
    if not created and _normalized(info.config) != _normalized(desired):
        try:
            info = await jsm.update_stream(desired)
        except nats.js.errors.APIError as exc:
            raise StreamConfigConflict(
                f"stream {spec.name} exists with a configuration that cannot be changed to the spec: "
                f"{exc.description}"
            ) from exc
        updated = True
    return EnsuredStream(
        name=spec.name,
        created=created,
        updated=updated,
        atomic_publish=bool(info.config.allow_atomic),
    )
