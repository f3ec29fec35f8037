"""Which PodGroups are not a Job's: admission marks them when it accepts them, so every reader can tell a
Job's PodGroup from a plain pod's own group or one a user submitted (Volcano tells them apart by owner
references, which lahar's objects do not have).

The key is outside `lahar.dev/`, whose annotations a Job passes on to its PodGroup, so a Job cannot carry
it onto its own group.
"""

from __future__ import annotations

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
