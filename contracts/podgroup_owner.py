"""Which PodGroups are not a Job's: admission marks them when it accepts them, so every reader can tell a
Job's PodGroup from a plain pod's own group or one a user submitted (Volcano tells them apart by owner
references, which lahar's objects do not have).

The key is outside `lahar.dev/`, whose annotations a Job passes on to its PodGroup, so a Job cannot carry
it onto its own group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contracts.objects import PodGroup

OWNER = "owner.lahar.dev/podgroup"
SUBMITTED = "User"  # a PodGroup a user submitted
_POD_PREFIX = "Pod/"  # a plain pod's own group: "Pod/<pod name>"


def owned_by_pod(pod_name: str) -> str:
    return f"{_POD_PREFIX}{pod_name}"


def owner_pod(podgroup: PodGroup) -> str | None:
    """The plain pod whose own group this is, None for any other."""
    owner = podgroup.meta.annotations.get(OWNER, "")
    return owner[len(_POD_PREFIX) :] if owner.startswith(_POD_PREFIX) else None


def is_plain(podgroup: PodGroup) -> bool:
    """Not a Job's PodGroup: a plain pod's own group or one a user submitted."""
    return OWNER in podgroup.meta.annotations


def may_be_plain(document: Mapping[str, Any]) -> bool:
    """`is_plain` of an encoded PodGroup (codec.encode_object's form) before decoding it: False only for
    a well-formed one whose annotations lack OWNER (a Job's PodGroup, which the plain core need not
    decode: a PodGroupCreated is decoded once per Job by the Jobs' fold already); anything else is
    decoded, and refused there if malformed."""
    obj = document.get("object")
    meta = obj.get("meta") if isinstance(obj, Mapping) else None
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    return not isinstance(annotations, Mapping) or OWNER in annotations
