"""The tasks of a (defaulted) Job: names, replica counts, policies, pod templates, partition policies and
the dependsOn graph."""

from __future__ import annotations

from collections.abc import Sequence

from contracts.errors import FieldError
from contracts.names import LABEL_MAX, dns_label_problem, qualified_name_problem
from contracts.objects import Job, TaskSpec
from services.admission.core.policy_rules import validate_policies
from services.admission.core.template_rules import validate_pod_spec, validate_topology_policy
from services.admission.core.topology_rules import validate_network_topology


def validate_tasks(job: Job, document: str) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: dict[str, str] = {}
    for index, task in enumerate(job.tasks):
        at = f"spec.tasks[{index}]"
        problem = dns_label_problem(task.name)
        if problem:
            errors.append(FieldError(document, f"{at}.name", f"invalid task name: {problem}"))
        elif task.name in seen:
            errors.append(
                FieldError(
                    document, f"{at}.name", f"duplicated task name {task.name!r} (also {seen[task.name]})"
                )
            )
        else:
            seen[task.name] = at
            errors.extend(_pod_names(job, task, at, document))
        errors.extend(_counts(task, at, document))
        errors.extend(validate_policies(task.policies, f"{at}.policies", document))
        errors.extend(validate_pod_spec(task.template.spec, f"{at}.template.spec", document))
        errors.extend(validate_topology_policy(task.topology_policy, task.template, at, document))
        errors.extend(_partition(task, at, document))
    errors.extend(_dependencies(job.tasks, document))
    return errors


def _counts(task: TaskSpec, at: str, document: str) -> list[FieldError]:
    errors = []
    if task.replicas < 0:
        errors.append(
            FieldError(document, f"{at}.replicas", f"expected an integer >= 0, got {task.replicas}")
        )
    minimum = task.min_available
    if minimum is not None and minimum < 0:
        errors.append(FieldError(document, f"{at}.minAvailable", f"expected an integer >= 0, got {minimum}"))
    elif minimum is not None and minimum > task.replicas >= 0:
        errors.append(
            FieldError(
                document,
                f"{at}.minAvailable",
                f"'minAvailable' {minimum} is greater than 'replicas' {task.replicas} in task {task.name!r}",
            )
        )
    if task.max_retry < -1:
        errors.append(
            FieldError(
                document, f"{at}.maxRetry", f"expected an integer >= -1 (-1: unlimited), got {task.max_retry}"
            )
        )
    return errors


def _pod_names(job: Job, task: TaskSpec, at: str, document: str) -> list[FieldError]:
    """Pods are named `<job>-<task>-<index>` and the name doubles as the pod's hostname, so the longest
    one must still be a valid name of at most 63 characters."""
    if qualified_name_problem(job.meta.name):
        return []  # the job name's own error says it all
    longest = f"{job.meta.name}-{task.name}-{max(task.replicas - 1, 0)}"
    problem = qualified_name_problem(longest)
    if problem is None:
        return []
    if len(longest) > LABEL_MAX:
        problem = (
            f"generated pod name {longest!r} is {len(longest)} characters, more than the {LABEL_MAX} "
            "Kubernetes allows; shorten the job or task name"
        )
    return [FieldError(document, f"{at}.name", problem)]


def _partition(task: TaskSpec, at: str, document: str) -> list[FieldError]:
    policy = task.partition_policy
    if policy is None:
        return []
    path = f"{at}.partitionPolicy"
    errors = validate_network_topology(policy.network_topology, f"{path}.networkTopology", document)
    if policy.total_partitions <= 0:
        errors.append(
            FieldError(
                document, f"{path}.totalPartitions", f"must be greater than 0, got {policy.total_partitions}"
            )
        )
    if policy.partition_size <= 0:
        errors.append(
            FieldError(
                document, f"{path}.partitionSize", f"must be greater than 0, got {policy.partition_size}"
            )
        )
    if errors:
        return errors
    total = policy.total_partitions * policy.partition_size
    if task.replicas != total:
        errors.append(
            FieldError(
                document,
                f"{at}.replicas",
                f"'replicas' {task.replicas} must equal totalPartitions x partitionSize = {total}",
            )
        )
    if policy.min_partitions > 0 and task.min_available is not None:
        minimum = policy.min_partitions * policy.partition_size
        if task.min_available != minimum:
            errors.append(
                FieldError(
                    document,
                    f"{at}.minAvailable",
                    f"'minAvailable' {task.min_available} must equal "
                    f"minPartitions x partitionSize = {minimum}",
                )
            )
    return errors


def _dependencies(tasks: Sequence[TaskSpec], document: str) -> list[FieldError]:
    """dependsOn names existing tasks and the graph is a DAG (tasks start in dependency order)."""
    names = {task.name for task in tasks}
    errors = []
    edges: dict[str, set[str]] = {name: set() for name in names}  # task -> tasks it waits for
    for index, task in enumerate(tasks):
        if task.depends_on is None:
            continue
        for k, dependency in enumerate(task.depends_on.name):
            if dependency not in names:
                errors.append(
                    FieldError(
                        document,
                        f"spec.tasks[{index}].dependsOn.name[{k}]",
                        f"task {task.name!r} depends on {dependency!r}, which is not a task of this job",
                    )
                )
            else:
                edges[task.name].add(dependency)
    cyclic = _cyclic(edges)
    if cyclic:
        errors.append(
            FieldError(
                document,
                "spec.tasks",
                "dependsOn does not form a directed acyclic graph: tasks "
                f"{', '.join(sorted(cyclic))} wait for each other in a cycle",
            )
        )
    return errors


def _cyclic(edges: dict[str, set[str]]) -> set[str]:
    """The tasks on a dependency cycle: Kahn's algorithm orders everything else from the front, and
    tasks that merely wait behind a cycle are pruned from the back."""
    waiting = {name: len(deps) for name, deps in edges.items()}
    dependents: dict[str, set[str]] = {name: set() for name in edges}
    for name, deps in edges.items():
        for dep in deps:
            dependents[dep].add(name)
    ready = [name for name, count in waiting.items() if count == 0]
    while ready:
        name = ready.pop()
        for dependent in dependents[name]:
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                ready.append(dependent)
    left = {name for name, count in waiting.items() if count > 0}
    while True:
        behind = {name for name in left if not dependents[name] & left}
        if not behind:
            return left
        left -= behind
