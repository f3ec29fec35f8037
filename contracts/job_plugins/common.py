"""What every job plugin shares: its input, its contribution, and the naming rules of Volcano's helpers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from contracts.job_shape import TASK_INDEX, TASK_SPEC, pod_name
from contracts.objects import Job, Pod, TaskSpec

# Where Volcano mounts the svc plugin's ConfigMap, relative to the pod's directory here (see svc.py)
HOSTS_DIR = "etc/volcano"


@dataclass(frozen=True, slots=True)
class PluginInput:
    """One pod about to start. `pod_dir` is the absolute directory the runtime writes the contributed
    files into (their paths are relative to it)."""

    job: Job
    pod: Pod
    arguments: tuple[str, ...]
    pod_dir: str


@dataclass(frozen=True, slots=True)
class Contribution:
    """What a plugin adds to the pod: environment variables for every container (init containers
    included) and files ({path relative to the pod directory: content})."""

    env: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, bytes] = field(default_factory=dict)


def task_of(pod: Pod) -> str:
    """The pod's task name (Volcano's GetTaskKey: the task-spec annotation)."""
    return pod.meta.annotations.get(TASK_SPEC, "")


def task_index(pod: Pod) -> str:
    """The pod's index within its task: the task-index annotation, else Volcano's rule (the last
    '-'-separated part of a name with at least three parts)."""
    index = pod.meta.annotations.get(TASK_INDEX)
    if index is not None:
        return index
    parts = pod.meta.name.split("-")
    return parts[-1] if len(parts) >= 3 else ""


def find_task(job: Job, name: str) -> TaskSpec | None:
    return next((task for task in job.tasks if task.name == name), None)


def task_hosts(job: Job, task: TaskSpec) -> list[str]:
    """`hostname.subdomain` of every replica of a task (Volcano's GenerateHosts): the pod name and the job
    name unless the template sets them; a template hostname names one host for the whole task."""
    spec = task.template.spec
    subdomain = spec.subdomain or job.meta.name
    if spec.hostname:
        return [f"{spec.hostname}.{subdomain}"]
    return [f"{pod_name(job.meta.name, task.name, i)}.{subdomain}" for i in range(task.replicas)]


def go_flags(arguments: Sequence[str], defaults: Mapping[str, str]) -> dict[str, str]:
    """The values of the string flags named in `defaults`, parsed as Go's flag package parses a plugin's
    arguments: `-name=value`, `--name=value` or `-name value`; parsing stops at the first argument that
    is not a flag, and at an unknown flag (Volcano logs that error and keeps what it parsed before)."""
    values = dict(defaults)
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        if not argument.startswith("-") or argument in ("-", "--"):
            break
        name, has_value, value = argument.lstrip("-").partition("=")
        if name not in defaults:
            break
        if not has_value:
            if index + 1 == len(arguments):
                break  # a flag that needs a value and has none: an error, the default stays
            index += 1
            value = arguments[index]
        values[name] = value
        index += 1
    return values
