"""Plain Pods and PodGroups (no Job) on the running local stack, through the CLI: a pod that gets a
PodGroup of its own, runs and is deleted; a hand-made PodGroup whose two pods are placed as one gang.
The manifests are the repo's examples/plain-pods/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # a local stack of its own and jobs run to completion on it: seconds a test

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plain-pods"


def lahar_json(stack, *args: str) -> Any:
    result = stack.lahar(*args, "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def wait(stack, kind: str, name: str, phase: str) -> None:
    result = stack.lahar("wait", kind, name, "--for", phase, "--timeout", "40s", timeout_s=90)
    history = stack.lahar("events", name).stdout
    assert result.returncode == 0, f"{kind} {name} never {phase}: {result.stdout}{result.stderr}\n{history}"


def types(events: list[dict[str, Any]], *wanted: str) -> list[str]:
    return [e["type"] for e in events if e["type"] in wanted]


def test_a_plain_pod_gets_its_own_podgroup_runs_and_is_deleted(stack) -> None:
    (answer,) = lahar_json(stack, "apply", "-f", str(EXAMPLES / "hello-pod.yaml"))["results"]
    assert answer["objects"] == [
        {"kind": "Pod", "namespace": "default", "name": "hello", "action": "created"}
    ]
    wait(stack, "pod", "hello", "Succeeded")
    pod = lahar_json(stack, "get", "pod", "hello")
    group = pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
    assert group == f"podgroup-{pod['metadata']['uid']}"
    assert stack.lahar("logs", "hello").stdout == "hello from a plain pod\n"

    history = lahar_json(stack, "events", "hello")
    lifecycle = (
        "PodSubmitted",
        "PodGroupCreated",
        "PodCreated",
        "PodRunning",
        "PodSucceeded",
        "PodGroupDeleted",
    )
    assert types(history, *lifecycle) == list(lifecycle)
    assert all(e["object"].endswith(group) for e in history if e["type"].startswith("PodGroup"))
    # the group went with the pod's end: the default queue no longer counts it
    assert group not in [pg["metadata"]["name"] for pg in lahar_json(stack, "get", "podgroups")["items"]]

    (again,) = lahar_json(stack, "apply", "-f", str(EXAMPLES / "hello-pod.yaml"))["results"]
    assert again["objects"][0]["action"] == "unchanged"
    assert lahar_json(stack, "delete", "pod", "hello")["accepted"]
    wait(stack, "pod", "hello", "Deleted")
    assert stack.lahar("get", "pod", "hello").returncode != 0


def test_a_hand_made_podgroup_places_its_pods_as_one_gang(stack) -> None:
    (answer,) = lahar_json(stack, "apply", "-f", str(EXAMPLES / "gang-podgroup.yaml"))["results"]
    assert [o["action"] for o in answer["objects"]] == ["created"] * 3
    for pod in ("pair-a", "pair-b"):
        wait(stack, "pod", pod, "Succeeded")
    history = lahar_json(stack, "events", "pair")  # the group's events: its bindings among them
    bound = [e for e in history if e["type"] == "PodBound"]
    assert sorted(e["object"] for e in bound) == ["pod/pair-a", "pod/pair-b"]
    assert len({e["payload"]["plan"] for e in bound}) == 1  # one plan: the gang placed together
    assert lahar_json(stack, "get", "podgroup", "pair")["spec"]["minMember"] == 2

    assert lahar_json(stack, "delete", "podgroup", "pair")["accepted"]
    pods = {p["metadata"]["name"]: p["status"]["phase"] for p in lahar_json(stack, "get", "pods")["items"]}
    assert pods.get("pair-a") == "Succeeded" and pods.get("pair-b") == "Succeeded"  # the pods stay
    (refused,) = json.loads(stack.lahar("delete", "pod", "pair-missing", "-o", "json").stdout)["results"]
    assert not refused["accepted"] and "not found" in refused["errors"][0]["message"]
