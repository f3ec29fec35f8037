"""`lahar describe` of a Job, PodGroup, Pod or Queue as kubectl lays a description out: identity, a
summary of the spec, the status with its conditions, then the object's recent events. Pure functions of
the objects the command read (services/cli/describe_cmd.py).

A job or PodGroup that waits says why: its PodGroup's conditions (the scheduler's reason, e.g. "3/3 tasks
in gang unschedulable: 20 nodes: insufficient nvidia.com/gpu") and the state of its queue.
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts.objects import API_VERSIONS, Job, ObjectMeta, Pod, PodGroup, PodGroupCondition, Queue
from services.cli import output
from services.cli.describe_layout import NONE, Field, entries, fields, quantities, section, table, when
from services.cli.event_rows import events_section
from shared.client_reads import HistoryEntry

TASK_COLUMNS = ("NAME", "REPLICAS", "MIN", "IMAGE", "REQUESTS")


def task_rows(job: Job) -> list[tuple[object, ...]]:
    """A row per task (TASK_COLUMNS), as `describe job` and `job view` show them."""
    return [
        (
            t.name,
            t.replicas,
            t.min_available,
            ",".join(c.image for c in t.template.spec.containers),
            output.quantities(t.template.spec.effective_requests()),
        )
        for t in job.tasks
    ]


GROUP_NAME = "scheduling.k8s.io/group-name"
JOB_NAME = "volcano.sh/job-name"


def identity(meta: ObjectMeta, kind: str, *, namespaced: bool = True) -> list[Field]:
    pairs: list[Field] = [("Name", meta.name)]
    if namespaced:
        pairs.append(("Namespace", meta.namespace))
    pairs += [("Labels", entries(meta.labels)), ("Annotations", entries(meta.annotations))]
    return [*pairs, ("API Version", API_VERSIONS[kind]), ("Kind", kind)]


def queue_state(name: str, queue: Queue | None) -> str:
    """The queue a job waits in, with its state: a closed queue takes no new jobs."""
    if queue is None:
        return f"{name} (not found: nothing submitted to it can be enqueued)"
    state = queue.status.state
    if state in ("Closed", "Closing"):
        return f"{name} ({state}: the queue takes no new jobs)"
    return f"{name} ({state})"


def conditions_table(conditions: Sequence[PodGroupCondition], now: float) -> list[str]:
    rows = [
        (
            c.type,
            c.status,
            c.reason,
            output.age(c.last_transition_time, now) if c.last_transition_time else "",
            c.message,
        )
        for c in conditions
    ]
    return table(("Type", "Status", "Reason", "Age", "Message"), rows) if rows else []


def _podgroup_summary(podgroup: PodGroup | None, now: float) -> list[str]:
    if podgroup is None:
        return [f"PodGroup:  {NONE} (not created yet)"]
    status = podgroup.status
    lines = [f"PodGroup:  {podgroup.meta.name} ({status.phase})"]
    return lines + section("Conditions", conditions_table(status.conditions, now), indent=2)


def describe_job(
    job: Job,
    podgroup: PodGroup | None,
    queue: Queue | None,
    events: Sequence[HistoryEntry],
    now: float,
) -> str:
    s = job.status
    pairs = [
        *identity(job.meta, "Job"),
        ("Created", when(job.meta.creation_timestamp, now)),
        ("Queue", queue_state(job.queue, queue)),
        ("Scheduler", job.scheduler_name),
        ("Min Available", job.min_available),
        ("Max Retry", job.max_retry),
        ("Priority Class", job.priority_class_name),
    ]
    tasks = task_rows(job)
    state = s.state
    status: list[Field] = [("Phase", state.phase + (f" ({state.reason})" if state.reason else ""))]
    if state.message:
        status.append(("Message", state.message))
    status += [
        (
            "Pods",
            f"pending {s.pending}, running {s.running}, succeeded {s.succeeded}, failed {s.failed}, "
            f"terminating {s.terminating}, unknown {s.unknown}",
        ),
        ("Retries", f"{s.retry_count} of {job.max_retry}"),
        ("Since", when(state.last_transition_time, now)),
    ]
    lines = fields(pairs)
    lines += section("Tasks", table(("Name", "Replicas", "Min", "Image", "Requests"), tasks))
    lines += ["Status:", *fields(status, indent=2)]
    lines += _podgroup_summary(podgroup, now)
    lines.append(
        events_section(events, now, about=f"job/{job.meta.name}", command=f"lahar events {job.meta.name}")
    )
    return "\n".join(lines)


def describe_podgroup(
    podgroup: PodGroup, queue: Queue | None, events: Sequence[HistoryEntry], now: float
) -> str:
    s = podgroup.status
    pairs = [
        *identity(podgroup.meta, "PodGroup"),
        ("Created", when(podgroup.meta.creation_timestamp, now)),
        ("Queue", queue_state(podgroup.queue, queue)),
        ("Min Member", podgroup.min_member),
        ("Min Task Member", entries(podgroup.min_task_member, ": ")),
        ("Min Resources", quantities(podgroup.min_resources)),
        ("Priority Class", podgroup.priority_class_name),
    ]
    lines = fields(pairs)
    status = [("Phase", s.phase), ("Running", s.running), ("Succeeded", s.succeeded), ("Failed", s.failed)]
    lines += ["Status:", *fields(status, indent=2)]
    lines += section("Conditions", conditions_table(s.conditions, now))
    lines.append(events_section(events, now, about=f"podgroup/{podgroup.meta.name}"))
    return "\n".join(lines)


def describe_pod(pod: Pod, podgroup: PodGroup | None, events: Sequence[HistoryEntry], now: float) -> str:
    spec, s = pod.spec, pod.status
    job = pod.meta.labels.get(JOB_NAME, "")
    pairs = [
        *identity(pod.meta, "Pod"),
        ("Priority", spec.priority if spec.priority is not None else 0),
        ("Priority Class Name", spec.priority_class_name),
        ("Node", spec.node_name),
        # room a preemption holds for it until it is bound; shown only then, as kubectl does
        *((("Nominated Node", s.nominated_node_name),) if s.nominated_node_name else ()),
        ("Start Time", when(s.start_time, now)),
        ("Status", "Terminating" if pod.meta.deletion_timestamp is not None else s.phase),
        ("Reason", s.reason),
        ("Message", s.message),
        ("Exit Code", "" if s.exit_code is None else s.exit_code),
        ("Controlled By", f"Job/{job}" if job else ""),
        ("PodGroup", pod.meta.annotations.get(GROUP_NAME, "")),
    ]
    lines = fields(pairs)
    containers = []
    for container in (*spec.init_containers, *spec.containers):
        containers.append(f"{container.name}:")
        detail: list[Field] = [("Image", container.image), ("Command", " ".join(container.command))]
        detail += [("Args", " ".join(container.args)), ("Requests", quantities(container.requests))]
        detail.append(("Limits", quantities(container.limits)))
        containers += fields(detail, indent=2)
    lines += section("Containers", containers)
    tolerations = [
        f"{t.key or '<all>'}{'=' + t.value if t.value else ''}:{t.effect or '<all effects>'} op={t.operator}"
        + (f" for {t.toleration_seconds}s" if t.toleration_seconds is not None else "")
        for t in spec.tolerations
    ]
    lines += fields(
        [("Node-Selectors", entries(spec.node_selector)), ("Tolerations", "\n".join(tolerations))]
    )
    if s.phase == "Pending" and podgroup is not None and podgroup.status.conditions:
        # why a pending pod waits: its gang's conditions (the scheduler decides for the whole group)
        lines += [f"PodGroup Conditions ({podgroup.meta.name}, {podgroup.status.phase}):"]
        lines += ["  " + line for line in conditions_table(podgroup.status.conditions, now)]
    lines.append(events_section(events, now, about=f"pod/{pod.meta.name}"))
    return "\n".join(lines)


def describe_queue(queue: Queue, events: Sequence[HistoryEntry], now: float) -> str:
    s = queue.status
    pairs = [
        *identity(queue.meta, "Queue", namespaced=False),
        ("Created", when(queue.meta.creation_timestamp, now)),
        ("Weight", queue.weight),
        ("Parent", queue.parent or "root"),
        ("Reclaimable", queue.is_reclaimable),
        ("Capability", quantities(queue.capability)),
        ("Deserved", quantities(queue.deserved)),
        ("Guarantee", quantities(queue.guarantee)),
        ("Priority", queue.priority),
        ("Dequeue Strategy", queue.dequeue_strategy),
    ]
    status: list[Field] = [("State", s.state), ("Inqueue", s.inqueue), ("Pending", s.pending)]
    status += [("Running", s.running), ("Completed", s.completed), ("Unknown", s.unknown)]
    status.append(("Allocated", quantities(s.allocated)))
    lines = [*fields(pairs), "Status:", *fields(status, indent=2)]
    lines.append(events_section(events, now, about=f"queue/{queue.meta.name}"))
    return "\n".join(lines)
