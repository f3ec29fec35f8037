"""lahar's objects in the Kubernetes shape (contracts/kube_shape.py): the parser reads every object back
as the same value, for the repo's example manifests, for a manifest that sets every field, and for
objects as the job-controller renders them into the read model (statuses and times drawn at random);
and the shape is Kubernetes' own (field names, quantities, times)."""

from __future__ import annotations

import dataclasses
import typing
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts import codec, objects
from contracts.known_fields import unknown_manifest_fields
from contracts.kube_shape import kube_list, kube_object
from contracts.kube_values import go_duration, rfc3339
from contracts.objects import ApiObject, Container, Job, ObjectMeta, PodSpec, PodTemplate, TaskSpec
from contracts.objects_flow import (
    CronJob,
    CronJobStatus,
    FlowCondition,
    FlowJobRun,
    FlowJobStatus,
    JobFlow,
    JobFlowStatus,
)
from contracts.parse import parse_documents, parse_object
from contracts.parse_fields import duration_seconds, timestamp_seconds
from contracts.resources import Resources
from services.job_controller.core.projection import Projected, ProjectedCore
from shared.runner_types import Event

ROOT = Path(__file__).resolve().parents[3]
EVERY_FIELD = Path(__file__).with_name("every_field.yaml")
NS = "team-k"


def parsed(path: Path) -> list[ApiObject]:
    """The objects of a file the parser reads (other kinds, such as Volcano's CronJob, are skipped)."""
    documents, _ = parse_documents(path.read_text(encoding="utf-8"), str(path))
    return [d.object for d in documents]


def example_files() -> list[Path]:
    return sorted((ROOT / "examples").rglob("*.yaml"))


def read_back(obj: ApiObject) -> ApiObject:
    """The object written out in the Kubernetes shape, through YAML text as a user's pipe carries it;
    every field it prints is one the strict manifest check knows, so `apply` takes it back."""
    text = yaml.safe_dump(kube_object(obj), sort_keys=False)
    doc = yaml.safe_load(text)
    assert unknown_manifest_fields(doc, "round trip") == []
    return parse_object(doc, "round trip")


@pytest.mark.parametrize("path", example_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_manifest_reads_back_unchanged(path: Path) -> None:
    for obj in parsed(path):
        assert read_back(obj) == obj, obj.meta.key


def test_the_examples_hold_lahars_kinds() -> None:
    kinds = {obj.kind for path in example_files() for obj in parsed(path)}
    assert {"Job", "Queue", "PodGroup", "Pod", "Node", "HyperNode", "PriorityClass", "Command"} <= kinds


def test_an_object_with_every_field_set_reads_back_unchanged() -> None:
    objects_ = parsed(EVERY_FIELD)
    assert len(objects_) == 8
    for obj in objects_:
        assert read_back(obj) == obj, obj.meta.key


def _fields_of_every_kind() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    todo: list[type] = [objects.Node, objects.Pod, objects.PriorityClass, objects.PodGroup]
    todo += [objects.Queue, objects.HyperNode, objects.Job, objects.Command]
    done: set[type] = set()
    while todo:
        cls = todo.pop()
        if cls in done:
            continue
        done.add(cls)
        hints = typing.get_type_hints(cls, vars(objects))
        for field in dataclasses.fields(cls):
            found.add((cls.__name__, field.name))
            todo.extend(_dataclasses_in(hints[field.name]))
    return found


def _dataclasses_in(hint: Any) -> Iterator[type]:
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        yield hint
    for arg in typing.get_args(hint):
        yield from _dataclasses_in(arg)


def _set_fields(value: Any, found: set[tuple[str, str]]) -> None:
    """Every (class, field) of the value that differs from the field's default."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            if field.default is not dataclasses.MISSING:
                default: Any = field.default
            elif field.default_factory is not dataclasses.MISSING:
                default = field.default_factory()
            else:
                default = object()  # a required field is always set
            if item != default:
                found.add((type(value).__name__, field.name))
            _set_fields(item, found)
    elif isinstance(value, tuple | list):
        for item in value:
            _set_fields(item, found)
    elif isinstance(value, objects.FrozenMap):
        for item in value.values():
            _set_fields(item, found)


def test_the_every_field_manifest_sets_every_field_lahar_reads() -> None:
    # so a field the shape functions forget cannot go unnoticed by the round trip above
    found: set[tuple[str, str]] = set()
    for obj in parsed(EVERY_FIELD):
        _set_fields(obj, found)
    assert _fields_of_every_kind() - found == set()


# --- objects as the job-controller renders them ----------------------------------------------------


def _job() -> Job:
    spec = PodSpec(
        containers=(
            Container("main", image="busybox", requests=Resources.parse({"cpu": "250m", "memory": "1Gi"})),
        ),
        restart_policy="Never",
    )
    tasks = (
        TaskSpec("ps", 1, template=PodTemplate(spec=spec)),
        TaskSpec("worker", 2, template=PodTemplate(spec=spec, labels={"role": "worker"})),
    )
    meta = ObjectMeta("train", NS, uid="uid-train", labels={"volcano.sh/job-type": "Train"})
    return Job(meta, tasks, min_available=3, queue="default", max_retry=3)


class Log:
    """The job-controller's projection fed events one by one, as its service does."""

    def __init__(self, times: list[float]) -> None:
        self.core = ProjectedCore()
        self.state: Projected = self.core.initial()
        self.seq = 0
        self.times = iter(times)

    def add(self, type: str, kind: str, name: str, payload: Any = None, *, id: str = "") -> None:
        self.seq += 1
        event = Event(
            seq=self.seq,
            type=type,
            kind=kind,
            namespace=NS,
            name=name,
            payload=payload or {},
            id=id or str(uuid.UUID(int=self.seq)),
            time=next(self.times, float(self.seq)),
            correlation_id=f"{NS}/train",
        )
        self.state = self.core.apply(self.state, event)

    def settle(self) -> None:
        for _ in range(10):
            outputs = self.core.reconcile(self.state, 2_000_000_000.0)
            if not outputs:
                return
            for output in outputs:
                self.add(output.type, output.kind, output.name, output.plain_payload, id=output.id)
        raise AssertionError("reconcile does not converge")

    def rendered(self) -> list[ApiObject]:
        keys = [("job", NS, "train"), ("podgroup", NS, "train")]
        keys += [("pod", NS, name) for name in ("train-ps-0", "train-worker-0", "train-worker-1")]
        values = (self.core.render(self.state, key) for key in keys)
        return [codec.decode_object(value) for value in values if value is not None]


times = st.floats(min_value=0, max_value=4_000_000_000, allow_nan=False, allow_infinity=False)


@settings(max_examples=25, deadline=None)
@given(
    moments=st.lists(times, min_size=30, max_size=30),
    exit_code=st.integers(min_value=-255, max_value=255),
    message=st.text(max_size=40),
)
def test_objects_the_job_controller_renders_read_back_unchanged(
    moments: list[float], exit_code: int, message: str
) -> None:
    log = Log(moments)
    log.add("JobSubmitted", "job", "train", {"object": codec.encode_object(_job())})
    log.settle()
    condition = {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources"}
    condition |= {"message": message, "last_transition_time": moments[0], "transition_id": "t1"}
    log.add("PodGroupStatusChanged", "podgroup", "train", {"phase": "Inqueue", "conditions": [condition]})
    log.settle()
    for pod in ("train-ps-0", "train-worker-0", "train-worker-1"):
        log.add("PodBound", "pod", pod, {"node": "n1", "plan": "p1"})
        log.add("PodRunning", "pod", pod, {"node": "n1", "started_at": moments[1]})
    log.settle()
    log.add("PodFailed", "pod", "train-worker-1", {"node": "n1", "exit_code": exit_code, "message": message})
    rendered = log.rendered()
    assert {obj.kind for obj in rendered} == {"Job", "PodGroup", "Pod"}
    for obj in rendered:
        assert read_back(obj) == obj, obj.meta.key
    log.settle()  # the failure restarts the job: new pods, a new status
    for obj in log.rendered():
        assert read_back(obj) == obj, obj.meta.key


# --- the shape itself ------------------------------------------------------------------------------


def test_the_shape_is_kubernetes_own() -> None:
    node_, pod, _, podgroup, queue, _, job, _ = parsed(EVERY_FIELD)
    shaped = kube_object(pod)
    assert list(shaped) == ["apiVersion", "kind", "metadata", "spec", "status"]
    assert shaped["apiVersion"] == "v1" and shaped["metadata"]["name"] == "every-pod"
    main = shaped["spec"]["containers"][0]
    assert main["resources"]["requests"] == {"cpu": "1500m", "memory": "1536Mi", "nvidia.com/gpu": "1"}
    assert main["workingDir"] == "/work" and shaped["spec"]["terminationGracePeriodSeconds"] == 0
    assert shaped["status"]["startTime"] == "2024-05-06T07:10:00.5Z"
    assert shaped["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    node = kube_object(node_)
    assert node["metadata"]["creationTimestamp"] == "2024-05-06T07:08:09.1234567Z"
    assert node["status"]["allocatable"]["cpu"] == "7500m" and "namespace" not in node["metadata"]
    assert node["status"]["conditions"] == [{"type": "Ready", "status": "False"}]
    group = kube_object(podgroup)
    assert group["spec"]["minTaskMember"] == {"ps": 1, "worker": 2}
    assert group["status"]["conditions"][0]["transitionID"] == "t-1"
    assert kube_object(queue)["spec"]["guarantee"] == {"resource": {"cpu": "2"}}
    volcano_job = kube_object(job)
    assert volcano_job["spec"]["runningEstimate"] == "1h30m0s"
    assert volcano_job["status"]["taskStatusCount"]["worker"] == {"phase": {"Running": 2, "Failed": 1}}
    assert volcano_job["status"]["runningDuration"] == "12m30.25s"


def test_no_field_name_is_snake_case() -> None:
    def keys(value: Any, free: bool = False) -> Iterator[str]:
        if isinstance(value, dict):
            for key, item in value.items():
                # labels, annotations, resource lists and free-form data are the user's keys
                if not free:
                    yield key
                yield from keys(item, key in _FREE_FORM)
        elif isinstance(value, list):
            for item in value:
                yield from keys(item)

    for obj in parsed(EVERY_FIELD):
        assert [k for k in keys(kube_object(obj)) if "_" in k] == [], obj.kind


_FREE_FORM = frozenset(
    {"labels", "annotations", "nodeSelector", "matchLabels", "requests", "limits", "capacity"}
    | {"allocatable", "overhead", "minResources", "minTaskMember", "taskStatusCount", "phase"}
    | {"controlledResources", "plugins", "volumeClaim", "capability", "deserved", "resource"}
    | {"allocated"}
)


def test_a_listing_is_a_v1_list() -> None:
    listing = kube_list(parsed(ROOT / "examples" / "gang-job.yaml"))
    assert listing["apiVersion"] == "v1" and listing["kind"] == "List"
    assert [item["kind"] for item in listing["items"]] == ["Job"]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "1970-01-01T00:00:00Z"),
        (1_700_000_000.0, "2023-11-14T22:13:20Z"),
        (1_700_000_000.1234567, "2023-11-14T22:13:20.1234567Z"),
        (-0.5, "1969-12-31T23:59:59.5Z"),
    ],
)
def test_timestamps_are_rfc3339_and_read_back_exactly(seconds: float, text: str) -> None:
    assert rfc3339(seconds) == text
    assert timestamp_seconds(text) == seconds


@given(times)
def test_any_timestamp_reads_back_exactly(seconds: float) -> None:
    assert timestamp_seconds(rfc3339(seconds)) == seconds


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.0, "0s"), (45.0, "45s"), (90.0, "1m30s"), (5400.0, "1h30m0s"), (0.25, "0.25s"), (3600.5, "1h0m0.5s")],
)
def test_durations_are_gos(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text
    assert duration_seconds(text) == seconds


@given(st.floats(min_value=0, max_value=10**7, allow_nan=False))
def test_any_duration_reads_back_exactly(seconds: float) -> None:
    assert duration_seconds(go_duration(seconds)) == seconds


def test_job_making_kinds_print_their_statuses_in_volcanos_fields() -> None:
    """What the job-controller writes of a CronJob's and a JobFlow's status shows under Volcano's names,
    and `apply` takes it back (status is ignored on the way in, as the API server does)."""
    volcano = ROOT / "examples" / "volcano"
    (cron,) = parsed(volcano / "cronjob" / "cronjob.yaml")
    (flow,) = parsed(volcano / "jobflow" / "JobFlow.yaml")
    assert isinstance(cron, CronJob) and isinstance(flow, JobFlow)
    cron_status = CronJobStatus(active=("c-29000000",), last_schedule_time=1_740_000_000.5)
    run = FlowJobRun(state="Running", start_timestamp=1_740_000_001.0)
    job_status = FlowJobStatus(name="test-a", state="Running", running_histories=(run,))
    condition = FlowCondition(phase="Running", create_time=1.0, task_status_count={"t": {"Running": 2}})
    flow_status = JobFlowStatus(
        running_jobs=("test-a",),
        job_status_list=(job_status,),
        conditions={"test-a": condition},
        phase="Running",
    )
    shaped_cron = kube_object(dataclasses.replace(cron, status=cron_status))
    shaped_flow = kube_object(dataclasses.replace(flow, status=flow_status))
    assert shaped_cron["status"]["active"][0]["name"] == "c-29000000"
    assert shaped_cron["status"]["lastScheduleTime"].startswith("2025-02-19T")
    assert shaped_flow["status"]["state"] == {"phase": "Running"}
    assert shaped_flow["status"]["conditions"]["test-a"]["taskStatusCount"] == {
        "t": {"phase": {"Running": 2}}
    }
    for shaped in (shaped_cron, shaped_flow):
        assert unknown_manifest_fields(shaped, "status") == []
        assert parse_object(shaped, "status").meta == (cron if shaped is shaped_cron else flow).meta
