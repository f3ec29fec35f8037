"""A PodGroup's condition between the API object (contracts.objects) and the payload an event carries it in
(contracts.payloads: PodGroupStatusChanged, a plan's PodGroup updates). Both have the same fields."""

from __future__ import annotations

from contracts.objects import PodGroupCondition
from contracts.payloads import PodGroupConditionPayload

# the payload's fields, which are the object's (tests/unit/contracts/test_condition_payload.py)
_FIELDS: tuple[str, ...] = PodGroupConditionPayload.__struct_fields__


def podgroup_condition(condition: PodGroupConditionPayload) -> PodGroupCondition:
    """A condition as the API object holds it."""
    return PodGroupCondition(**{name: getattr(condition, name) for name in _FIELDS})


def condition_payload(condition: PodGroupCondition) -> PodGroupConditionPayload:
    """A PodGroup's condition as an event carries it."""
    return PodGroupConditionPayload(**{name: getattr(condition, name) for name in _FIELDS})
