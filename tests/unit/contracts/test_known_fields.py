"""Unknown fields (contracts/known_fields.py): each is named at its full path with the nearest known field,
every one of a document at once; free-form maps take any key; what the APIs define (Volcano's CRDs,
Kubernetes' core/v1, server-set metadata and status) passes; and parse_documents' three modes."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.volcano_typos import VOLCANO_UNKNOWN_FIELDS

from contracts.errors import FieldError
from contracts.field_shapes import obj, suggestion
from contracts.known_fields import KINDS, unknown_manifest_fields, validation_mode
from contracts.parse import parse_documents

ROOT = Path(__file__).resolve().parents[3]
DOC = "t.yaml#1"

JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train}
spec:
  minAvailable: 1
  queue: default
  tasks:
    - name: worker
      replicas: 1
      template:
        spec:
          containers:
            - {name: a, image: busybox}
            - name: b
              image: busybox
              resources: {requests: {cpu: 1}}
"""


def job(**changes: Any) -> dict[str, Any]:
    """JOB with `changes` merged in, each at a dotted path (numbers index lists)."""
    doc = yaml.safe_load(JOB)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = doc
        for step in parents:
            node = node[int(step)] if step.isdigit() else node[step]
        node[last] = value
    return doc


def found(doc: Any) -> list[tuple[str, str]]:
    return [(e.path, e.message) for e in unknown_manifest_fields(doc, DOC)]


CONTAINER_B = "spec.tasks[0].template.spec.containers[1]"


@pytest.mark.parametrize(
    ("doc", "path", "message"),
    [
        pytest.param(
            job(spec__minAvaliable=1),
            "spec.minAvaliable",
            'unknown field "minAvaliable"; did you mean "minAvailable"?',
            id="minAvaliable",
        ),
        pytest.param(
            job(spec__tasks__0__template__spec__containers__1__resoures={"limits": {"cpu": 1}}),
            f"{CONTAINER_B}.resoures",
            'unknown field "resoures"; did you mean "resources"?',
            id="resoures-in-a-container",
        ),
        pytest.param(
            job(spec__tasks__0__replica=2),
            "spec.tasks[0].replica",
            'unknown field "replica"; did you mean "replicas"?',
            id="task-replica",
        ),
        pytest.param(
            job(metadata={"name": "x", "lables": {"a": "b"}}),
            "metadata.lables",
            'unknown field "lables"; did you mean "labels"?',
            id="metadata-lables",
        ),
        pytest.param(
            job(spec__tasks__0__template__spec__containers__0__imagePullpolicy="Always"),
            "spec.tasks[0].template.spec.containers[0].imagePullpolicy",
            'unknown field "imagePullpolicy"; did you mean "imagePullPolicy"?',
            id="case-only",
        ),
        pytest.param(
            job(sepc={}),
            "sepc",
            'unknown field "sepc"; did you mean "spec"?',
            id="top-level",
        ),
        pytest.param(
            job(spec__volcanoFlavour="x"),
            "spec.volcanoFlavour",
            'unknown field "volcanoFlavour"',
            id="nothing-close",
        ),
        pytest.param(
            job(
                spec__tasks__0__template__spec__containers__1__env=[
                    {"name": "A", "valueFrom": {"secretKeyRef": {"nme": "s"}}}
                ]
            ),
            f"{CONTAINER_B}.env[0].valueFrom.secretKeyRef.nme",
            'unknown field "nme"; did you mean "name"?',
            id="deep-env",
        ),
        pytest.param(
            job(
                spec__tasks__0__template__spec__volumes=[
                    {"name": "v", "emptyDir": {}, "hostpath": {"path": "/"}}
                ]
            ),
            "spec.tasks[0].template.spec.volumes[0].hostpath",
            'unknown field "hostpath"; did you mean "hostPath"?',
            id="volume-source",
        ),
        pytest.param(
            job(spec__policies=[{"event": "PodEvicted", "acton": "RestartJob"}]),
            "spec.policies[0].acton",
            'unknown field "acton"; did you mean "action"?',
            id="lifecycle-policy",
        ),
        pytest.param(
            {"kind": "Queue", "spec": {"wieght": 2}},
            "spec.wieght",
            'unknown field "wieght"; did you mean "weight"?',
            id="queue",
        ),
        pytest.param(
            {"kind": "PodGroup", "spec": {"minMembr": 2}},
            "spec.minMembr",
            'unknown field "minMembr"; did you mean "minMember"?',
            id="podgroup",
        ),
        pytest.param(
            {"kind": "HyperNode", "spec": {"members": [{"selector": {"exactMatch": {"nmae": "n"}}}]}},
            "spec.members[0].selector.exactMatch.nmae",
            'unknown field "nmae"; did you mean "name"?',
            id="hypernode",
        ),
        pytest.param(
            {"kind": "Command", "actoin": "AbortJob"},
            "actoin",
            'unknown field "actoin"; did you mean "action"?',
            id="command",
        ),
        pytest.param(
            {"kind": "PriorityClass", "globaldefault": True},
            "globaldefault",
            'unknown field "globaldefault"; did you mean "globalDefault"?',
            id="priorityclass",
        ),
        pytest.param(
            {"kind": "Node", "spec": {"taint": []}},
            "spec.taint",
            'unknown field "taint"; did you mean "taints"?',
            id="node",
        ),
        pytest.param(
            {"kind": "Pod", "spec": {"affinity": {"nodeAffinity": {"requiredDuringScheduling": {}}}}},
            "spec.affinity.nodeAffinity.requiredDuringScheduling",
            'unknown field "requiredDuringScheduling"; '
            'did you mean "requiredDuringSchedulingIgnoredDuringExecution"?',
            id="pod-affinity-cut-short",
        ),
        pytest.param(
            {"kind": "Pod", 7: "x"},
            "[7]",
            'unknown field "7"',
            id="a-key-that-is-no-string",
        ),
    ],
)
def test_an_unknown_field_is_named_at_its_path_with_the_nearest_known_one(
    doc: dict[str, Any], path: str, message: str
) -> None:
    assert found(doc) == [(path, message)]


def test_every_unknown_field_of_a_document_is_listed() -> None:
    doc = job(
        spec__minAvaliable=1,
        spec__tasks__0__template__spec__containers__1__resoures={},
        spec__tasks__0__template__spec__containers__0__imge="x",
        extra=1,
    )
    assert [path for path, _ in found(doc)] == [
        "spec.tasks[0].template.spec.containers[0].imge",
        f"{CONTAINER_B}.resoures",
        "spec.minAvaliable",
        "extra",
    ]


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(
            job(metadata={"name": "x", "labels": {"any/key": "v"}, "annotations": {"x.y/z": "1"}}),
            id="labels",
        ),
        pytest.param(job(spec__plugins={"ssh": [], "anyPlugin": ["--x"]}), id="plugins"),
        pytest.param(
            job(
                spec__tasks__0__template__spec__containers__1__resources={
                    "limits": {"vendor.com/fpga": 1},
                    "requests": {"hugepages-2Mi": "1Gi"},
                }
            ),
            id="resources",
        ),
        pytest.param(
            job(spec__tasks__0__template__spec__nodeSelector={"what.ever/key": "v"}), id="nodeSelector"
        ),
        pytest.param(
            job(
                spec__tasks__0__template__spec__volumes=[
                    {"name": "v", "csi": {"driver": "d", "volumeAttributes": {"anything": "goes"}}}
                ]
            ),
            id="csi-attributes",
        ),
        pytest.param(job(spec__tasks__0__template__spec__overhead={"cpu": "1"}), id="overhead"),
        pytest.param(
            {"kind": "PodGroup", "spec": {"minTaskMember": {"any-task": 1}, "minResources": {"x": 1}}},
            id="podgroup-maps",
        ),
        pytest.param(
            {"kind": "Queue", "spec": {"capability": {"a/b": 1}, "guarantee": {"resource": {"c": 1}}}},
            id="queue-resources",
        ),
        pytest.param(
            {"kind": "Node", "status": {"capacity": {"pods": 110, "x/y": 1}, "allocatable": {"z": 1}}},
            id="node-resources",
        ),
    ],
)
def test_free_form_maps_take_any_key(doc: dict[str, Any]) -> None:
    assert found(doc) == []


def test_what_the_server_sets_and_get_prints_is_known() -> None:
    doc = job(
        metadata={
            "name": "train",
            "namespace": "default",
            "uid": "3f1c",
            "resourceVersion": "42",
            "generation": 2,
            "creationTimestamp": "2024-01-02T03:04:05Z",
            "deletionTimestamp": None,
            "deletionGracePeriodSeconds": 30,
            "generateName": "train-",
            "selfLink": "/apis/x",
            "finalizers": ["f"],
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "X",
                    "name": "x",
                    "uid": "u",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "kubectl",
                    "operation": "Apply",
                    "apiVersion": "v1",
                    "time": "t",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {".": {}}},
                    "subresource": "status",
                }
            ],
        },
        status={
            "state": {"phase": "Running", "reason": "", "message": "", "lastTransitionTime": "t"},
            "minAvailable": 1,
            "taskStatusCount": {"worker": {"phase": {"Running": 1}}},
            "pending": 0,
            "running": 1,
            "succeeded": 0,
            "failed": 0,
            "terminating": 0,
            "unknown": 0,
            "version": 1,
            "retryCount": 0,
            "runningDuration": "1m",
            "controlledResources": {"plugin-ssh": "ssh"},
            "conditions": [{"status": "Running", "lastTransitionTime": "t"}],
        },
    )
    assert found(doc) == []
    pod = {
        "kind": "Pod",
        "status": {
            "phase": "Running",
            "hostIP": "10.0.0.1",
            "podIPs": [{"ip": "10.1.0.2"}],
            "qosClass": "Burstable",
            "conditions": [
                {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": "t"}
            ],
            "containerStatuses": [
                {
                    "name": "c",
                    "ready": True,
                    "restartCount": 0,
                    "image": "i",
                    "imageID": "d",
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": "t"}},
                    "lastState": {},
                }
            ],
        },
    }
    assert found(pod) == []
    queue = {
        "kind": "Queue",
        "status": {
            "state": "Open",
            "pending": 0,
            "running": 1,
            "inqueue": 0,
            "completed": 0,
            "unknown": 0,
            "allocated": {"cpu": "1"},
            "reservation": {"nodes": []},
        },
    }
    assert found(queue) == []


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param({"kind": "Deployment", "spec": {"anything": 1}}, id="a-kind-without-a-shape"),
        pytest.param({"kind": ["Job"], "spec": {"x": 1}}, id="a-kind-that-is-no-string"),
        pytest.param({"spec": {"x": 1}}, id="no-kind"),
        pytest.param(["Job"], id="not-a-mapping"),
        pytest.param(job(spec__tasks="not a list"), id="a-scalar-where-a-list-was-expected"),
        pytest.param(job(spec__tasks=[["nested"], 3]), id="list-items-that-are-no-mappings"),
    ],
)
def test_what_has_no_shape_or_the_wrong_type_is_left_to_the_parser(doc: Any) -> None:
    assert found(doc) == []


def test_a_long_key_is_quoted_short_and_gets_no_suggestion() -> None:
    ((_, message),) = found({"kind": "Queue", "spec" + "x" * 5000: 1})
    assert message.startswith('unknown field "specxxx') and "(5004 characters)" in message
    assert "did you mean" not in message


def test_only_a_documents_first_unknown_fields_get_suggestions() -> None:
    # the search's cost is kept small however many unknown keys a document holds
    keys = [f"apiVersion{a}{b}" for a in "abcdefghijklmnopqrstuvwxyz" for b in "abcdef"][:150]
    messages = [message for _, message in found({"kind": "Queue", **dict.fromkeys(keys, 1)})]
    assert len(messages) == 150
    assert sum("did you mean" in message for message in messages) == 100


@pytest.mark.parametrize(
    ("key", "known", "expected"),
    [
        ("minAvaliable", ["minAvailable", "maxRetry"], "minAvailable"),
        ("MINAVAILABLE", ["minAvailable"], "minAvailable"),
        ("nmae", ["namespace", "name"], "name"),
        ("resoures", ["resizePolicy", "resources"], "resources"),
        ("queue", ["quota"], None),
        ("type", ["name"], None),
        ("spek0", ["spec"], None),
        ("priorityClass", ["priority", "priorityClassName"], "priorityClassName"),
        (
            "termination",
            ["terminationMessagePath", "terminationGracePeriodSeconds"],
            "terminationMessagePath",
        ),
        ("prio", ["priorityClassName"], None),
        ("", ["name"], None),
    ],
)
def test_suggestion(key: str, known: list[str], expected: str | None) -> None:
    assert suggestion(key, known) == expected


def test_a_shape_naming_a_field_twice_is_a_mistake_in_the_table() -> None:
    with pytest.raises(ValueError, match="given twice"):
        obj("name", name=obj("x"))


@pytest.mark.parametrize(
    ("text", "mode"),
    [("strict", "strict"), ("WARN", "warn"), (" ignore ", "ignore"), ("true", "strict"), ("False", "ignore")],
)
def test_validation_mode(text: str, mode: str) -> None:
    assert validation_mode(text) == mode


def test_an_unknown_validation_mode_says_what_is_accepted() -> None:
    with pytest.raises(
        ValueError, match=r"expected strict, warn or ignore \(or true, false\), got 'lenient'"
    ):
        validation_mode("lenient")


# --- parse_documents' modes ----------------------------------------------------------------------------

TYPO = textwrap.dedent(JOB).replace("  minAvailable: 1", "  minAvaliable: 1")


def test_strict_refuses_a_document_with_an_unknown_field_and_keeps_the_others() -> None:
    queue = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
    parsed, errors = parse_documents(f"{TYPO}---\n{queue}", "t.yaml")
    assert [d.object.kind for d in parsed] == ["Queue"]
    assert errors == [
        FieldError(
            "t.yaml#1 (Job default/train)",
            "spec.minAvaliable",
            'unknown field "minAvaliable"; did you mean "minAvailable"?',
        )
    ]


def test_strict_lists_unknown_fields_before_the_documents_other_problems() -> None:
    text = TYPO.replace("replicas: 1", "replicas: -1")
    _, errors = parse_documents(text, "t.yaml")
    assert [e.path for e in errors] == ["spec.minAvaliable", "spec.tasks[0].replicas"]


def test_warn_accepts_and_returns_the_unknown_fields_as_warnings() -> None:
    (parsed,), errors = parse_documents(TYPO, "t.yaml", validate="warn")
    assert errors == [] and parsed.object.kind == "Job"
    assert [(w.document, w.path) for w in parsed.warnings] == [
        ("t.yaml#1 (Job default/train)", "spec.minAvaliable")
    ]


def test_ignore_accepts_without_warnings() -> None:
    (parsed,), errors = parse_documents(TYPO, "t.yaml", validate="ignore")
    assert errors == [] and parsed.warnings == ()


def test_parse_documents_refuses_a_mode_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="validate"):
        parse_documents(TYPO, "t.yaml", validate="lenient")


# --- the repo's manifests and Volcano's ----------------------------------------------------------------

MANIFESTS = sorted(p for p in (ROOT / "examples").rglob("*.y*ml"))


def test_the_examples_hold_every_kind_with_a_shape() -> None:
    kinds = {
        doc.get("kind")
        for path in MANIFESTS
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict)
    }
    assert kinds >= set(KINDS)


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: str(p.relative_to(ROOT / "examples")))
def test_every_example_has_only_known_fields(path: Path) -> None:
    relative = str(path.relative_to(ROOT))
    paths = [
        error.path
        for number, doc in enumerate(yaml.safe_load_all(path.read_text()), start=1)
        for error in unknown_manifest_fields(doc, f"{relative}#{number}")
    ]
    volcano = relative.removeprefix("examples/volcano/")
    assert tuple(paths) == VOLCANO_UNKNOWN_FIELDS.get(volcano, ())


@pytest.mark.parametrize(
    ("doc", "path", "suggestion"),
    [
        (
            {"kind": "CronJob", "spec": {"schedule": "* * * * *", "sucessfulJobsHistoryLimit": 1}},
            "spec.sucessfulJobsHistoryLimit",
            "successfulJobsHistoryLimit",
        ),
        (
            {"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"minAvaliable": 1}}}},
            "spec.jobTemplate.spec.minAvaliable",
            "minAvailable",
        ),
        ({"kind": "JobTemplate", "spec": {"taks": []}}, "spec.taks", "tasks"),
        (
            {"kind": "JobFlow", "spec": {"flows": [{"name": "a", "dependOn": {"targets": ["b"]}}]}},
            "spec.flows[0].dependOn",
            "dependsOn",
        ),
    ],
)
def test_volcano_job_making_kinds_have_their_shapes(doc: Any, path: str, suggestion: str) -> None:
    ((found_path, message),) = found(doc)
    assert found_path == path and f'did you mean "{suggestion}"' in message
