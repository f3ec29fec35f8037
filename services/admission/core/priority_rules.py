"""A scheduling.k8s.io PriorityClass, with Kubernetes' rules: user classes stay below the system range,
the `system-` prefix is reserved, one class at most is the global default, value and preemption policy
are immutable. (A missing value is reported by the manifest parser: the value is a required field.)"""

from __future__ import annotations

from contracts.errors import FieldError
from contracts.objects import PriorityClass
from contracts.parse_fields import PREEMPTION_POLICIES
from services.admission.core.context import BUILTIN_PRIORITY_CLASSES, ClusterContext

HIGHEST_USER_PRIORITY = 1_000_000_000
RESERVED_PREFIX = "system-"


def validate_priority_class(
    priority_class: PriorityClass, context: ClusterContext, document: str, old: PriorityClass | None = None
) -> list[FieldError]:
    errors: list[FieldError] = []
    name = priority_class.meta.name
    if name.startswith(RESERVED_PREFIX) and name not in BUILTIN_PRIORITY_CLASSES:
        errors.append(
            FieldError(
                document, "metadata.name", f"the {RESERVED_PREFIX!r} name prefix is reserved for the system"
            )
        )
    if priority_class.value > HIGHEST_USER_PRIORITY:
        errors.append(
            FieldError(
                document,
                "value",
                f"must be no greater than {HIGHEST_USER_PRIORITY} (higher values are reserved for system "
                f"classes), got {priority_class.value}",
            )
        )
    if priority_class.preemption_policy not in PREEMPTION_POLICIES:
        errors.append(
            FieldError(
                document,
                "preemptionPolicy",
                f"expected one of {', '.join(PREEMPTION_POLICIES)}, got {priority_class.preemption_policy!r}",
            )
        )
    if priority_class.global_default:
        others = sorted(n for n, pc in context.priority_classes.items() if pc.global_default and n != name)
        if others:
            errors.append(
                FieldError(
                    document,
                    "globalDefault",
                    f"PriorityClass {others[0]!r} is already the global default; only one class may be",
                )
            )
    if old is not None:
        if old.value != priority_class.value:
            errors.append(FieldError(document, "value", "may not be changed in an update"))
        if old.preemption_policy != priority_class.preemption_policy:
            errors.append(FieldError(document, "preemptionPolicy", "may not be changed in an update"))
    return errors
