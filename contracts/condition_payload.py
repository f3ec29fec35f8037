"""A PodGroup's condition between the API object (contracts.objects) and the payload an event carries it in
(contracts.payloads: PodGroupStatusChanged, a plan's PodGroup updates)."""

from __future__ import annotations

from contracts.objects import PodGroupCondition
from contracts.payloads import PodGroupConditionPayload


def podgroup_condition(condition: PodGroupConditionPayload) -> PodGroupCondition:
    """A condition as the API object holds it."""
    return PodGroupCondition(
        type=condition.type,
        status=condition.status,
        transition_id=condition.transition_id,
        last_transition_time=condition.last_transition_time,
        reason=condition.reason,
        message=condition.message,
    )


def condition_payload(condition: PodGroupCondition) -> PodGroupConditionPayload:
    """A PodGroup's condition as an event carries it."""
    return PodGroupConditionPayload(
        type=condition.type,
        status=condition.status,
        transition_id=condition.transition_id,
        last_transition_time=condition.last_transition_time,
        reason=condition.reason,
        message=condition.message,
    )
