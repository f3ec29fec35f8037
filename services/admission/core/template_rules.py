"""A task's pod template: the part of Kubernetes' PodTemplate validation that matters to a batch job, and
Volcano's NUMA rule that a topology policy needs whole CPUs.

lahar runs a container's command (process runtime) or simulates it, so an image is not required.
"""

from __future__ import annotations

from contracts.errors import FieldError
from contracts.names import dns_label_problem
from contracts.objects import Container, PodSpec, PodTemplate
from contracts.parse_fields import join_path
from contracts.parse_volcano import TOPOLOGY_POLICIES
from contracts.resources import CPU, MILLI, format_quantity


def _containers(spec: PodSpec, path: str) -> list[tuple[str, Container]]:
    return [(f"{path}.containers[{i}]", c) for i, c in enumerate(spec.containers)] + [
        (f"{path}.initContainers[{i}]", c) for i, c in enumerate(spec.init_containers)
    ]


def validate_pod_spec(spec: PodSpec, path: str, document: str) -> list[FieldError]:
    """`path` is the pod spec's own path, e.g. "spec.tasks[0].template.spec" or "spec"."""
    errors: list[FieldError] = []
    if not spec.containers:
        errors.append(FieldError(document, f"{path}.containers", "at least one container is required"))
    names: dict[str, str] = {}
    for at, container in _containers(spec, path):
        problem = dns_label_problem(container.name)
        if problem:
            errors.append(FieldError(document, f"{at}.name", f"invalid container name: {problem}"))
        elif container.name in names:
            errors.append(
                FieldError(
                    document,
                    f"{at}.name",
                    f"duplicated container name {container.name!r} (also {names[container.name]})",
                )
            )
        else:
            names[container.name] = at
        for dim, limit in container.limits.items():
            request = container.requests.get(dim, 0)
            if request > limit:
                errors.append(
                    FieldError(
                        document,
                        join_path(f"{at}.resources.requests", dim),
                        f"request {format_quantity(dim, request)} must be less than or equal to the "
                        f"{dim} limit {format_quantity(dim, limit)}",
                    )
                )
    return errors


def validate_topology_policy(
    policy: str, template: PodTemplate, path: str, document: str
) -> list[FieldError]:
    """`path` is the task's path. NUMA-aware placement pins whole CPUs, so every container must request an
    integer number of them (its limits stand in for absent requests, as Kubernetes defaults them)."""
    if policy and policy not in TOPOLOGY_POLICIES:
        return [
            FieldError(
                document,
                f"{path}.topologyPolicy",
                f"expected one of {', '.join(TOPOLOGY_POLICIES)}, got {policy!r}",
            )
        ]
    if policy in ("", "none"):
        return []
    errors = []
    for at, container in _containers(template.spec, f"{path}.template.spec"):
        requests = container.requests or container.limits
        cpu = requests.get(CPU, 0)
        if cpu <= 0 or cpu % MILLI:
            found = format_quantity(CPU, cpu) if cpu else "none"
            errors.append(
                FieldError(
                    document,
                    f"{at}.resources.requests.cpu",
                    f"topologyPolicy {policy} needs a whole number of CPUs requested, got {found}",
                )
            )
    return errors
