"""Lifecycle policies of a job or of one task (Volcano's validatePolicies), every problem reported."""

from __future__ import annotations

from collections.abc import Sequence

from contracts.errors import FieldError
from contracts.objects import LifecyclePolicy
from contracts.parse_volcano import POLICY_ACTIONS, POLICY_EVENTS

ANY_EVENT = "*"


def _event_path(at: str, policy: LifecyclePolicy, event: str) -> str:
    if event == policy.event:
        return f"{at}.event"
    return f"{at}.events[{policy.events.index(event)}]"


def validate_policies(policies: Sequence[LifecyclePolicy], path: str, document: str) -> list[FieldError]:
    """`path` is the list's field path, e.g. "spec.policies" or "spec.tasks[1].policies". Events and exit
    codes must be unique across the list: each event or exit code selects exactly one action."""
    errors: list[FieldError] = []

    def error(where: str, message: str) -> None:
        errors.append(FieldError(document, where, message))

    seen_events: dict[str, str] = {}
    seen_codes: dict[int, str] = {}
    for index, policy in enumerate(policies):
        at = f"{path}[{index}]"
        events = list(dict.fromkeys(policy.all_events()))  # one policy naming an event twice is harmless
        if events and policy.exit_code is not None:
            error(at, "must not specify event and exitCode simultaneously")
        elif not events and policy.exit_code is None:
            error(at, "either event (or events) or exitCode must be specified")
        if policy.action not in POLICY_ACTIONS:
            error(
                f"{at}.action",
                f"invalid policy action {policy.action!r}: expected one of {', '.join(POLICY_ACTIONS)}",
            )
        for event in events:
            where = _event_path(at, policy, event)
            if event not in POLICY_EVENTS:
                error(where, f"invalid policy event {event!r}: expected one of {', '.join(POLICY_EVENTS)}")
            elif event in seen_events:
                error(where, f"duplicate event {event!r} across policies: {seen_events[event]} handles it")
            else:
                seen_events[event] = at
        if policy.exit_code is not None:
            where = f"{at}.exitCode"
            if policy.exit_code == 0:
                error(where, "0 is not a valid exit code: exitCode policies match failures (non-zero codes)")
            elif policy.exit_code in seen_codes:
                error(
                    where,
                    f"duplicate exitCode {policy.exit_code} across policies: "
                    f"{seen_codes[policy.exit_code]} handles it",
                )
            else:
                seen_codes[policy.exit_code] = at
    if ANY_EVENT in seen_events and len(seen_events) > 1:
        others = ", ".join(sorted(e for e in seen_events if e != ANY_EVENT))
        error(
            seen_events[ANY_EVENT],
            f"a policy for event '*' (any event) must be the only event policy, but {others} also have one",
        )
    return errors
