"""A PodGroup condition copied between the API object and its payload keeps every field."""

from __future__ import annotations

import dataclasses

from contracts.condition_payload import condition_payload, podgroup_condition
from contracts.objects import PodGroupCondition
from contracts.payloads import PodGroupConditionPayload


def test_the_object_and_the_payload_have_the_same_fields() -> None:
    # a field added to one and not the other would be dropped on the way through an event
    assert tuple(f.name for f in dataclasses.fields(PodGroupCondition)) == (
        PodGroupConditionPayload.__struct_fields__
    )


def test_a_condition_goes_through_its_payload_unchanged() -> None:
    condition = PodGroupCondition(
        type="Unschedulable",
        status="False",
        transition_id="t-7",
        last_transition_time=1_700_000_000.5,
        reason="NotEnoughResources",
        message="2/4 tasks in gang unschedulable",
    )
    payload = condition_payload(condition)
    assert payload.reason == "NotEnoughResources" and payload.transition_id == "t-7"
    assert podgroup_condition(payload) == condition
