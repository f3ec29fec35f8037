"""A PodGroup condition copied between the API object and its payload keeps every field."""

from __future__ import annotations

import dataclasses

from support.payload_examples import EXAMPLES

from contracts.condition_payload import condition_payload, podgroup_condition
from contracts.objects import PodGroupCondition
from contracts.payloads import PodGroupConditionPayload, PodGroupStatusChanged


def test_the_object_and_the_payload_have_the_same_fields() -> None:
    # a field added to one and not the other would be dropped on the way through an event
    assert tuple(f.name for f in dataclasses.fields(PodGroupCondition)) == (
        PodGroupConditionPayload.__struct_fields__
    )


def test_a_condition_goes_through_its_payload_unchanged() -> None:
    # the catalogue's example condition (every field set), as a PodGroupStatusChanged carries it
    status = EXAMPLES["PodGroupStatusChanged"]
    assert isinstance(status, PodGroupStatusChanged)
    (payload,) = status.conditions
    condition = podgroup_condition(payload)
    assert (condition.reason, condition.transition_id) == (payload.reason, payload.transition_id)
    assert condition_payload(condition) == payload
