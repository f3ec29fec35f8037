"""A bus.volcano.sh Command (vcctl job suspend/resume/..., queue open/close): an action that fits its
target's kind, on a target that exists."""

from __future__ import annotations

from contracts.errors import FieldError
from contracts.objects import Command
from services.admission.core.context import ClusterContext

# vcctl: suspend = AbortJob, resume = ResumeJob; restart, terminate and complete act on the whole job
JOB_ACTIONS = ("AbortJob", "ResumeJob", "RestartJob", "TerminateJob", "CompleteJob")
QUEUE_ACTIONS = ("OpenQueue", "CloseQueue")
ACTIONS_BY_KIND = {"Job": JOB_ACTIONS, "Queue": QUEUE_ACTIONS}


def target_key(command: Command) -> str:
    """The target's key: "namespace/name" for a Job (in the command's namespace), the name of a Queue."""
    target = command.target
    if target is None:
        return ""
    return f"{command.meta.namespace}/{target.name}" if target.kind == "Job" else target.name


def validate_command(command: Command, context: ClusterContext, document: str) -> list[FieldError]:
    target = command.target
    if target is None:
        return [
            FieldError(document, "target", "a command needs a target: the kind and name of a Job or Queue")
        ]
    actions = ACTIONS_BY_KIND.get(target.kind)
    if actions is None:
        return [FieldError(document, "target.kind", f"expected Job or Queue, got {target.kind!r}")]
    errors = []
    if command.action not in actions:
        errors.append(
            FieldError(
                document,
                "action",
                f"a command on a {target.kind} takes one of {', '.join(actions)}, got {command.action!r}",
            )
        )
    key = target_key(command)
    exists = key in context.jobs if target.kind == "Job" else key in context.queues
    if not exists:
        errors.append(FieldError(document, "target.name", f"{target.kind} {key!r} not found"))
    return errors
