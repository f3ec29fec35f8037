"""Network topology constraints: a tier is named either by number or by name, never both (a Job, each
partition policy, a PodGroup and each of its subgroup policies)."""

from __future__ import annotations

from contracts.errors import FieldError
from contracts.objects import NetworkTopologySpec
from contracts.parse_volcano import NETWORK_TOPOLOGY_MODES


def validate_network_topology(
    topology: NetworkTopologySpec | None, path: str, document: str
) -> list[FieldError]:
    """`path` is the networkTopology field itself."""
    if topology is None:
        return []
    errors = []
    if topology.mode not in NETWORK_TOPOLOGY_MODES:
        errors.append(
            FieldError(
                document,
                f"{path}.mode",
                f"expected one of {', '.join(NETWORK_TOPOLOGY_MODES)}, got {topology.mode!r}",
            )
        )
    if topology.highest_tier_allowed is not None and topology.highest_tier_name:
        # both fields offend: each is named, so a user sees the pair whichever one they look for
        for field_name, other in (
            ("highestTierName", "highestTierAllowed"),
            ("highestTierAllowed", "highestTierName"),
        ):
            errors.append(
                FieldError(
                    document,
                    f"{path}.{field_name}",
                    "must not specify 'highestTierAllowed' and 'highestTierName' simultaneously "
                    f"(also given: {path}.{other})",
                )
            )
    if topology.highest_tier_allowed is not None and topology.highest_tier_allowed < 0:
        errors.append(
            FieldError(
                document,
                f"{path}.highestTierAllowed",
                f"expected an integer >= 0, got {topology.highest_tier_allowed}",
            )
        )
    return errors
