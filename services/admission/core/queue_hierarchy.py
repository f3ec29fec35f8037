"""Hierarchical queues (spec.parent) and queue deletion: Volcano's validateHierarchicalQueue,
validateHierarchicalQueueResources, root queue protection and validateQueueDeleting."""

from __future__ import annotations

from collections.abc import Iterable

from contracts.errors import FieldError
from contracts.objects import Queue
from contracts.parse_fields import join_path
from contracts.resources import EMPTY, Resources, format_quantity
from services.admission.core.context import DEFAULT_QUEUE, ROOT_QUEUE, ClusterContext

_TOP = ("", ROOT_QUEUE)
_SHARED = (("guarantee", "spec.guarantee.resource"), ("deserved", "spec.deserved"))


def _resource_fields(queue: Queue) -> dict[str, Resources | None]:
    return {
        "spec.capability": queue.capability,
        "spec.deserved": queue.deserved,
        "spec.guarantee.resource": queue.guarantee,
    }


def validate_queue_hierarchy(
    queue: Queue, old: Queue | None, context: ClusterContext, document: str
) -> list[FieldError]:
    """`old` is the stored queue on update, None on create. Checks run when what they depend on changed,
    as in Volcano: the parent rules when the parent changed, the resource rules when the parent or a
    resource field changed."""
    name = queue.meta.name
    parent_changed = old is None or old.parent != queue.parent
    changed = (
        [path for path, value in _resource_fields(queue).items() if _resource_fields(old)[path] != value]
        if old is not None
        else list(_resource_fields(queue))
    )
    if name == ROOT_QUEUE:
        if old is None:
            return []
        return [
            FieldError(
                document, path, "the root queue's capability, deserved and guarantee cannot be modified"
            )
            for path in changed
        ]
    errors = _parent(queue, context, document) if parent_changed else []
    if not errors and (parent_changed or changed):
        errors.extend(_resources(queue, context, document))
    return errors


def _parent(queue: Queue, context: ClusterContext, document: str) -> list[FieldError]:
    name, parent = queue.meta.name, queue.parent
    if parent in _TOP:
        return []

    def error(message: str) -> list[FieldError]:
        return [FieldError(document, "spec.parent", message)]

    if parent == name:
        return error(f"queue {name!r} cannot use itself as parent")
    depth, ancestor = 1, parent
    while ancestor not in _TOP:
        depth += 1
        if depth > context.max_queue_depth:
            return error(f"queue {name!r} exceeds the maximum queue depth of {context.max_queue_depth}")
        if ancestor == name:
            return error(f"parent queue {parent!r} descends from queue {name!r}: the hierarchy would loop")
        found = context.queues.get(ancestor)
        if found is None:
            where = "parent queue" if ancestor == parent else f"ancestor queue (of parent {parent!r})"
            return error(f"{where} {ancestor!r} does not exist")
        ancestor = found.parent
    others = [child for child in context.children(parent) if child.meta.name != name]
    pods = context.allocated_pods(parent)
    if not others and pods > 0:
        return error(
            f"queue {parent!r} cannot become the parent of queue {name!r} because it has {pods} allocated "
            "pods (a leaf queue in use cannot turn into a parent)"
        )
    return []


def _sum(queues: Iterable[Queue], field: str) -> Resources:
    total = EMPTY
    for queue in queues:
        total = total + (getattr(queue, field) or EMPTY)
    return total


def _over(total: Resources, parent: Queue, field: str, path: str, document: str) -> list[FieldError]:
    """Children may not be promised more than their parent: Σ children's guarantee (deserved) <= the
    parent's, a resource the parent does not name counting as 0."""
    limit = getattr(parent, field) or EMPTY
    return [
        FieldError(
            document,
            join_path(path, dim),
            f"the children of queue {parent.meta.name!r} together get {field}[{dim}]="
            f"{format_quantity(dim, value)}, more than its own {format_quantity(dim, limit.get(dim, 0))}",
        )
        for dim, value in sorted(total.items())
        if value > 0 and value > limit.get(dim, 0)
    ]


def _resources(queue: Queue, context: ClusterContext, document: str) -> list[FieldError]:
    name, parent_name = queue.meta.name, queue.parent
    errors: list[FieldError] = []
    parent = context.queues.get(parent_name) if parent_name not in _TOP else None
    if parent is not None:
        for dim, value in sorted((queue.capability or {}).items()):
            limit = _ancestor_capability(queue, dim, context)
            if limit is not None and value > limit:
                errors.append(
                    FieldError(
                        document,
                        join_path("spec.capability", dim),
                        f"capability[{dim}]={format_quantity(dim, value)} exceeds its ancestor's "
                        f"capability {format_quantity(dim, limit)}",
                    )
                )
        family = [q for q in context.children(parent_name) if q.meta.name != name] + [queue]
        for field, path in _SHARED:
            errors.extend(_over(_sum(family, field), parent, field, path, document))
    children = [child for child in context.children(name) if child.meta.name != name]
    if not children:
        return errors
    for dim, value in sorted((queue.capability or {}).items()):
        below = max(_subtree_capability(child, dim, context, set()) for child in children)
        if value < below:
            errors.append(
                FieldError(
                    document,
                    join_path("spec.capability", dim),
                    f"capability[{dim}]={format_quantity(dim, value)} is smaller than its descendants' "
                    f"largest capability {format_quantity(dim, below)}",
                )
            )
    for field, path in _SHARED:
        errors.extend(_over(_sum(children, field), queue, field, path, document))
    return errors


def _ancestor_capability(queue: Queue, dim: str, context: ClusterContext) -> int | None:
    """The capability of `dim` set by the nearest ancestor below root that sets it."""
    seen: set[str] = set()
    ancestor = queue.parent
    while ancestor not in _TOP and ancestor not in seen:
        seen.add(ancestor)
        found = context.queues.get(ancestor)
        if found is None:
            return None
        value = (found.capability or EMPTY).get(dim, 0)
        if value > 0:
            return value
        ancestor = found.parent
    return None


def _subtree_capability(queue: Queue, dim: str, context: ClusterContext, seen: set[str]) -> int:
    """A queue's own capability of `dim`, or else the largest one set below it."""
    value = (queue.capability or EMPTY).get(dim, 0)
    if value > 0 or queue.meta.name in seen:
        return value
    seen.add(queue.meta.name)
    return max(
        (_subtree_capability(child, dim, context, seen) for child in context.children(queue.meta.name)),
        default=0,
    )


def validate_queue_delete(name: str, context: ClusterContext, document: str) -> list[FieldError]:
    def error(message: str) -> list[FieldError]:
        return [FieldError(document, "metadata.name", message)]

    if name in (DEFAULT_QUEUE, ROOT_QUEUE):
        return error(f"the {name!r} queue can not be deleted")
    if name not in context.queues:
        return error(f"queue {name!r} not found")
    errors = []
    children = context.children(name)
    if children:
        names = ", ".join(child.meta.name for child in children)
        errors += error(
            f"queue {name!r} can not be deleted because it has {len(children)} child queues: {names}"
        )
    pods = context.allocated_pods(name)
    if pods > 0:
        errors += error(f"queue {name!r} can not be deleted because it has {pods} allocated pods")
    return errors
