"""The Kubernetes-shaped CLI on the running local stack: what `lahar get -o yaml` prints applies back
unchanged (no new event), -o json is what kubectl prints (jq '.metadata.name'), and a job asking for a GPU
no node has is described, and viewed, with the reason it waits."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # a local stack of its own: seconds a test

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WAIT_S = 60.0
GPU_JOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "gpu-train"},
    "spec": {
        "minAvailable": 2,
        "tasks": [
            {
                "name": "worker",
                "replicas": 2,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "main",
                                "image": "busybox",
                                "command": ["true"],
                                "resources": {"limits": {"nvidia.com/gpu": "1"}},
                            }
                        ],
                    }
                },
            }
        ],
    },
}


def lahar_json(stack, *args: str) -> Any:
    result = stack.lahar(*args, "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def test_a_job_read_back_applies_unchanged_and_json_is_kubectls(stack) -> None:
    assert stack.lahar("apply", "-f", str(EXAMPLES / "gang-job.yaml")).returncode == 0
    waited = stack.lahar("wait", "job", "gang-demo", "--for", "Completed", "--timeout", "60s", timeout_s=90)
    assert waited.returncode == 0, waited.stdout + waited.stderr
    history = lahar_json(stack, "events", "gang-demo")

    shown = stack.lahar("get", "job", "gang-demo", "-o", "yaml")
    assert shown.returncode == 0 and shown.stdout.startswith("apiVersion: batch.volcano.sh/v1alpha1\n")
    applied = stack.lahar("apply", "-f", "-", "-o", "json", stdin=shown.stdout)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    (answer,) = json.loads(applied.stdout)["results"]
    assert answer["objects"] == [
        {"kind": "Job", "namespace": "default", "name": "gang-demo", "action": "unchanged"}
    ]
    listing = stack.lahar("get", "jobs", "-o", "yaml")
    again = stack.lahar("apply", "-f", "-", stdin=listing.stdout)  # a List: each item applied
    assert again.returncode == 0 and "job/gang-demo unchanged" in again.stdout, again.stdout + again.stderr
    assert lahar_json(stack, "events", "gang-demo") == history  # nothing was recorded

    job = lahar_json(stack, "get", "job", "gang-demo")
    assert job["metadata"]["name"] == "gang-demo" and job["status"]["state"]["phase"] == "Completed"
    assert (
        job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "100m"
    )
    assert "gang-demo" in [item["metadata"]["name"] for item in lahar_json(stack, "get", "jobs")["items"]]
    pods = lahar_json(stack, "get", "pods", "-l", "volcano.sh/job-name=gang-demo")["items"]
    assert sorted(p["metadata"]["name"] for p in pods) == [f"gang-demo-worker-{i}" for i in range(3)]
    assert all(p["spec"]["nodeName"] and p["status"]["phase"] == "Succeeded" for p in pods)


def test_a_job_asking_for_a_gpu_no_node_has_says_why_it_waits(stack, tmp_path: Path) -> None:
    manifest = tmp_path / "gpu-job.json"
    manifest.write_text(json.dumps(GPU_JOB))
    assert stack.lahar("apply", "-f", str(manifest)).returncode == 0

    deadline = time.monotonic() + WAIT_S
    while True:  # each describe is a process run: the loop's own pace
        described = stack.lahar("describe", "job", "gpu-train")
        assert described.returncode == 0, described.stdout + described.stderr
        why = [line for line in described.stdout.splitlines() if line.strip().startswith("Unschedulable")]
        if why:
            break
        assert time.monotonic() < deadline, (
            f"no Unschedulable condition within {WAIT_S:.0f}s:\n{described.stdout}"
        )
    lines = described.stdout.splitlines()
    # no node has a GPU: it can never fit, and says so (its reason, then the message)
    assert why[0].split()[:3] == ["Unschedulable", "True", "NeverFits"] and "nvidia.com/gpu" in why[0]
    assert ["Queue:", "default", "(Open)"] in [line.split() for line in lines]
    assert ["Phase:", "Pending"] in [line.split() for line in lines]
    events = lines[lines.index("Events:") + 1 :]
    assert events[0].split() == ["Type", "Reason", "Age", "From", "Message"]
    warning = [line for line in events if line.split()[:2] == ["Warning", "NeverFits"]]
    assert warning and "podgroup/gpu-train:" in warning[0] and "nvidia.com/gpu" in warning[0]

    viewed = stack.lahar("job", "view", "-N", "gpu-train")
    assert viewed.returncode == 0, viewed.stdout + viewed.stderr
    shown = viewed.stdout.splitlines()
    assert "Events:" in shown and any(line.split()[:2] == ["Warning", "NeverFits"] for line in shown)
    assert lahar_json(stack, "delete", "job", "gpu-train")["accepted"]
