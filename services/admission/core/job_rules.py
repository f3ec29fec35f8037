"""A batch.volcano.sh Job (already defaulted): Volcano's job validation (webhook, CRD schema and
validating admission policy together), every problem reported with its field path."""

from __future__ import annotations

from collections.abc import Sequence

from contracts.errors import FieldError
from contracts.names import LABEL_MAX, dns_subdomain_problem, qualified_name_problem
from contracts.objects import Job, VolumeSpec
from services.admission.core.context import ROOT_QUEUE, ClusterContext
from services.admission.core.policy_rules import validate_policies
from services.admission.core.task_rules import validate_tasks
from services.admission.core.topology_rules import validate_network_topology

# the job controller's plugins (Volcano's pkg/controllers/job/plugins factory)
JOB_PLUGINS = ("svc", "env", "ssh", "mpi", "pytorch", "tensorflow", "ray", "hcclrank")
MPI_DEFAULT_MASTER = "master"


def validate_job(
    job: Job, context: ClusterContext, document: str, *, check_queue: bool = True
) -> list[FieldError]:
    """`check_queue` is off for updates: a running job may still be scaled after its queue closed."""
    errors: list[FieldError] = []

    def error(path: str, message: str) -> None:
        errors.append(FieldError(document, path, message))

    # the name is a DNS subdomain like every object's (admit checks that); its pods' names add a limit
    if not dns_subdomain_problem(job.meta.name):
        problem = qualified_name_problem(job.meta.name)
        if problem:
            error("metadata.name", f"invalid job name: {problem}")
    if not job.tasks:
        error("spec.tasks", "no task specified in job spec: a job needs at least one task")
    total = sum(max(task.replicas, 0) for task in job.tasks)
    if job.min_available is not None and job.min_available < 0:
        error("spec.minAvailable", f"expected an integer >= 0, got {job.min_available}")
    elif job.min_available is not None and job.min_available > total:
        error(
            "spec.minAvailable",
            f"job 'minAvailable' {job.min_available} should not be greater than total replicas "
            f"in tasks ({total})",
        )
    if job.max_retry < 0:
        error("spec.maxRetry", f"'maxRetry' cannot be less than zero, got {job.max_retry}")
    if job.ttl_seconds_after_finished is not None and job.ttl_seconds_after_finished < 0:
        error(
            "spec.ttlSecondsAfterFinished",
            f"'ttlSecondsAfterFinished' cannot be less than zero, got {job.ttl_seconds_after_finished}",
        )
    if job.min_success is not None and job.min_success < 1:
        error("spec.minSuccess", f"expected an integer >= 1, got {job.min_success}")
    if not job.scheduler_name or len(job.scheduler_name) > LABEL_MAX:
        error(
            "spec.schedulerName",
            f"expected a name of 1 to {LABEL_MAX} characters, got {job.scheduler_name!r}",
        )
    errors.extend(validate_network_topology(job.network_topology, "spec.networkTopology", document))
    errors.extend(validate_policies(job.policies, "spec.policies", document))
    errors.extend(_plugins(job, document))
    errors.extend(_volumes(job.volumes, document))
    errors.extend(validate_tasks(job, document))
    errors.extend(_priority_classes(job, context, document))
    if check_queue:
        errors.extend(_queue(job, context, document))
    return errors


def mpi_master(arguments: Sequence[str]) -> str:
    """The master task the mpi plugin uses: its Go-style flag `--master=NAME` (or `--master NAME`)."""
    master = MPI_DEFAULT_MASTER
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        flag, has_value, value = argument.lstrip("-").partition("=")
        if argument.startswith("-") and flag == "master":
            if has_value:
                master = value
            elif index + 1 < len(arguments):
                index += 1
                master = arguments[index]
        index += 1
    return master


def _plugins(job: Job, document: str) -> list[FieldError]:
    errors = []
    for name in job.plugins:
        if name not in JOB_PLUGINS:
            errors.append(
                FieldError(
                    document,
                    f"spec.plugins[{name}]",
                    f"unable to find job plugin {name!r}: expected one of {', '.join(JOB_PLUGINS)}",
                )
            )
    if "mpi" in job.plugins:
        master = mpi_master(job.plugins["mpi"])
        if master not in {task.name for task in job.tasks}:
            errors.append(
                FieldError(
                    document,
                    "spec.plugins[mpi]",
                    f"the mpi master task {master!r} was not found among the job's tasks",
                )
            )
    return errors


def _volumes(volumes: Sequence[VolumeSpec], document: str) -> list[FieldError]:
    errors = []
    seen: dict[str, str] = {}
    for index, volume in enumerate(volumes):
        at = f"spec.volumes[{index}]"
        if not volume.mount_path:
            errors.append(FieldError(document, f"{at}.mountPath", "mountPath is required"))
        elif ":" in volume.mount_path:
            errors.append(
                FieldError(document, f"{at}.mountPath", f"must not contain ':', got {volume.mount_path!r}")
            )
        elif volume.mount_path in seen:
            errors.append(
                FieldError(
                    document,
                    f"{at}.mountPath",
                    f"duplicated mountPath {volume.mount_path!r} (also {seen[volume.mount_path]})",
                )
            )
        else:
            seen[volume.mount_path] = at
        if volume.volume_claim is None and not volume.volume_claim_name:
            errors.append(FieldError(document, at, "either volumeClaim or volumeClaimName must be specified"))
        elif volume.volume_claim is not None and volume.volume_claim_name:
            errors.append(
                FieldError(
                    document,
                    f"{at}.volumeClaimName",
                    "conflict: give volumeClaimName to use an existing PVC or volumeClaim to create "
                    "one, not both",
                )
            )
        elif volume.volume_claim_name:
            problem = dns_subdomain_problem(volume.volume_claim_name)
            if problem:
                errors.append(FieldError(document, f"{at}.volumeClaimName", f"invalid claim name: {problem}"))
    return errors


def _priority_classes(job: Job, context: ClusterContext, document: str) -> list[FieldError]:
    wanted = [("spec.priorityClassName", job.priority_class_name)] + [
        (f"spec.tasks[{i}].template.spec.priorityClassName", task.template.spec.priority_class_name)
        for i, task in enumerate(job.tasks)
    ]
    return [
        FieldError(document, path, f"no PriorityClass with name {name!r} was found")
        for path, name in wanted
        if name and not context.has_priority_class(name)
    ]


def _queue(job: Job, context: ClusterContext, document: str) -> list[FieldError]:
    queue = context.queues.get(job.queue)
    if queue is None:
        return [FieldError(document, "spec.queue", f"unable to find job queue {job.queue!r}")]
    errors = []
    if queue.status.state != "Open":
        errors.append(
            FieldError(
                document,
                "spec.queue",
                f"can only submit job to a queue in state Open, queue {job.queue!r} is {queue.status.state}",
            )
        )
    if job.queue == ROOT_QUEUE:
        errors.append(FieldError(document, "spec.queue", "can not submit job to the root queue"))
    else:
        children = context.children(job.queue)
        if children:
            names = ", ".join(child.meta.name for child in children)
            errors.append(
                FieldError(
                    document,
                    "spec.queue",
                    f"can only submit job to a leaf queue, queue {job.queue!r} has child queues: {names}",
                )
            )
    return errors
