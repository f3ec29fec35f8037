"""A plan's id (pure): deterministic, so that a retried send of the same decision is stored once by the
plans stream's deduplication. Scheduler replicas and the descheduler derive theirs the same way."""

from __future__ import annotations

import hashlib
import uuid

from shared.name_uuid import name_uuid

# Fixed namespace for plan ids: the same replica, view seq, index and content always give the same id.
PLAN_ID_NAMESPACE = uuid.UUID("8b1d4c52-3e0f-4f4a-9a36-5d7c2e1b9f60")


def plan_id(replica: str, seq: int, index: int, content: str) -> str:
    """Deterministic: a retried publish of the same decision dedups. The content digest is part of the
    id because two sessions at the same view seq (a periodic tick with no new events) make different
    plans once the first one's placements are assumed, and the second must not be dropped as a duplicate."""
    digest = hashlib.blake2b(content.encode(), digest_size=8).hexdigest()
    return name_uuid(PLAN_ID_NAMESPACE, f"{replica}/{seq}/{index}/{digest}")
