"""A scheduling.volcano.sh PodGroup (Volcano's validatePodGroup): its queue exists and is Open, and tier
fields are exclusive in the group's and each subgroup's network topology."""

from __future__ import annotations

from contracts.errors import FieldError
from contracts.objects import PodGroup
from contracts.parse_fields import join_path
from services.admission.core.context import ClusterContext
from services.admission.core.topology_rules import validate_network_topology


def open_queue_errors(queue: str, context: ClusterContext, path: str, document: str) -> list[FieldError]:
    """Work can only be submitted to a queue that exists and is Open."""
    found = context.queues.get(queue)
    if found is None:
        return [FieldError(document, path, f"unable to find queue {queue!r}")]
    if found.status.state != "Open":
        return [
            FieldError(
                document,
                path,
                f"can only submit to a queue in state Open, queue {queue!r} is {found.status.state}",
            )
        ]
    return []


def validate_podgroup(podgroup: PodGroup, context: ClusterContext, document: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if podgroup.min_member < 0:
        errors.append(
            FieldError(document, "spec.minMember", f"expected an integer >= 0, got {podgroup.min_member}")
        )
    for task, count in podgroup.min_task_member.items():
        if count < 0:
            errors.append(
                FieldError(
                    document, join_path("spec.minTaskMember", task), f"expected an integer >= 0, got {count}"
                )
            )
    if podgroup.queue:
        errors.extend(open_queue_errors(podgroup.queue, context, "spec.queue", document))
    errors.extend(validate_network_topology(podgroup.network_topology, "spec.networkTopology", document))
    for index, policy in enumerate(podgroup.sub_group_policy):
        errors.extend(
            validate_network_topology(
                policy.network_topology, f"spec.subGroupPolicy[{index}].networkTopology", document
            )
        )
    return errors
