"""`lahar simulate` end to end through the CLI entry point: output formats, figures, exit codes, input
errors and determinism."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
GANG = ROOT / "examples" / "gang-experiment"
QUEUES = ROOT / "examples" / "queues"
GANG_ARGS = ["-f", str(GANG / "cluster.yaml"), "-f", str(GANG / "gang-jobs.yaml")]
POD_BY_POD_ARGS = [
    "-f",
    str(GANG / "cluster.yaml"),
    "-f",
    str(GANG / "pod-by-pod-jobs.yaml"),
    "--conf",
    str(GANG / "pod-by-pod.conf"),
]
JOBS = [f"default/tf-{i}" for i in range(1, 6)]

SMALL = """
apiVersion: v1
kind: Node
metadata: {name: only-node}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "10"}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: small}
spec:
  tasks:
  - name: work
    replicas: 2
    template:
      spec:
        containers: [{name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""

LOPSIDED = """
apiVersion: v1
kind: Node
metadata: {name: left}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "10"}
---
apiVersion: v1
kind: Node
metadata: {name: right}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "10"}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: lonely
  annotations: {lahar.dev/sim-duration: 60s}
spec:
  tasks:
  - name: work
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""

# a PodGroup manifest (no Job): one pod fits, the other asks for more than the node has
PODGROUP_ONLY = """
apiVersion: v1
kind: Node
metadata: {name: only-node}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "10"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg}
spec: {minMember: 1}
---
apiVersion: v1
kind: Pod
metadata:
  name: fits
  annotations: {scheduling.k8s.io/group-name: pg, lahar.dev/sim-duration: 10s}
spec:
  schedulerName: volcano
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: too-big
  annotations: {scheduling.k8s.io/group-name: pg}
spec:
  schedulerName: volcano
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "8"}}}]
"""

BAD_MANIFEST = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: broken}
spec:
  tasks:
  - name: work
    replicas: many
    template:
      spec:
        containers: [{name: c, image: busybox, resources: {requests: {cpu: 1.5.3}}}]
---
apiVersion: v1
kind: Node
metadata: {name: bad-node}
status:
  allocatable: {cpu: four, memory: 4Gi}
"""

BAD_CONF = """
actions: "enqueue, allocate, teleport"
tiers:
- plugins:
  - name: gang
  - name: clairvoyance
- plugins:
  - name: binpack
    arguments: {binpack.cpu: 1, binpack.colour: 3}
"""


def simulate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["simulate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def simulate_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = simulate(capsys, *args, "-o", "json")
    return code, json.loads(out)


def test_one_session_json_has_the_session_figures(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = simulate_json(capsys, *GANG_ARGS)
    assert code == 0
    assert {"binds", "evictions", "pipelined", "podgroups", "queues"} <= report.keys()
    assert "jobs" not in report and "makespan_s" not in report
    assert report["cycles"] == 1
    # one session places two whole gangs on the 12 cores
    per_job = Counter(pod.rsplit("-", 2)[0] for pod in report["binds"])
    assert per_job == {"default/tf-1": 6, "default/tf-2": 6}
    assert set(report["binds"].values()) == {"node-a", "node-b", "node-c"}
    assert report["evictions"] == [] and report["pipelined"] == {}
    assert sorted(report["podgroups"]) == JOBS
    for key, pg in report["podgroups"].items():
        assert {"phase", "conditions"} <= pg.keys()
        for cond in pg["conditions"]:
            assert {"type", "status", "reason", "message", "transitionID"} <= cond.keys()
        placed = key in ("default/tf-1", "default/tf-2")
        assert pg["phase"] == ("Inqueue" if placed else "Pending")
        holding = {c["type"] for c in pg["conditions"] if c["status"] == "True"}
        # a placed gang was first short of pods (the job-controller creates them once it is Inqueue): that
        # Unschedulable condition no longer holds once the gang is placed
        assert holding == {"Scheduled"} if placed else holding <= {"Unschedulable"}
    queue = report["queues"]["default"]
    assert {"deserved", "allocated", "share"} <= queue.keys()
    assert queue["allocated"] == {"cpu": "12", "memory": "12Gi"}
    assert queue["share"] == 1.0


def test_until_idle_json_adds_run_figures_that_agree(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = simulate_json(capsys, *GANG_ARGS, "--until-idle")
    assert code == 0
    assert report["outcome"] == "idle"
    assert sorted(report["jobs"]) == JOBS
    for job in report["jobs"].values():
        assert {"phase", "submit", "start", "finish"} <= job.keys()
        assert job["phase"] == "Completed"
    latencies = [job["start"] - job["submit"] for job in report["jobs"].values()]
    assert sorted(latencies) == [0, 0, 60, 60, 120]
    assert report["makespan_s"] == 180 == max(job["finish"] for job in report["jobs"].values())
    # coefficient of variation: population standard deviation over the mean
    cv = statistics.pstdev(latencies) / statistics.fmean(latencies)
    assert report["fairness"]["job_scheduling_latency_cv"] == pytest.approx(round(cv, 4)) == 0.9354
    # 12 cores busy for 120 s, then 6 for 60 s, over 12 cores x 180 s; memory 1Gi per pod of 48Gi
    assert report["mean_utilisation"] == {"cpu": round(1800 / 2160, 4), "memory": round(1800 / 8640, 4)}
    assert report["fairness"]["node_allocation_cv"] == pytest.approx(round(node_cv(report), 4))


def node_cv(report: dict[str, Any]) -> float:
    """The node allocation CV recomputed from the binds: every node is full (4 pods) for the first 120 s;
    tf-5 then runs its 6 pods for 60 s. A node's share is the mean of its cpu and memory fractions."""
    last = Counter(node for pod, node in report["binds"].items() if pod.startswith("default/tf-5-"))
    shares = []
    for node in ("node-a", "node-b", "node-c"):
        pod_seconds = 4 * 120 + last[node] * 60
        shares.append(statistics.fmean([pod_seconds / (4 * 180), pod_seconds / (16 * 180)]))
    return statistics.pstdev(shares) / statistics.fmean(shares)


def test_node_allocation_cv_of_one_busy_node(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Two equal nodes, one of them busy the whole run and the other idle: shares s and 0, CV exactly 1."""
    manifest = tmp_path / "lopsided.yaml"
    manifest.write_text(LOPSIDED)
    code, report = simulate_json(capsys, "-f", str(manifest), "--until-idle")
    assert code == 0
    assert report["makespan_s"] == 60
    assert report["fairness"] == {"job_scheduling_latency_cv": 0.0, "node_allocation_cv": 1.0}
    assert report["mean_utilisation"] == {"cpu": 0.25, "memory": 0.125}


def test_deadlock_exits_3_and_says_who_holds_what(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = simulate_json(capsys, *POD_BY_POD_ARGS, "--until-idle")
    assert code == 3
    assert report["outcome"] == "deadlock"
    assert report["message"].startswith("no progress possible; jobs holding part of their resources: ")
    for job in JOBS:
        assert job in report["message"]
    assert {job["phase"] for job in report["jobs"].values()} == {"Running"}
    assert all(job["finish"] is None for job in report["jobs"].values())


def test_unschedulable_work_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = simulate_json(
        capsys,
        "-f",
        str(QUEUES / "cluster.yaml"),
        "-f",
        str(QUEUES / "scenario-3-capability.yaml"),
        "--until-idle",
    )
    assert code == 3
    assert report["outcome"] == "unschedulable"
    assert "default/capped-3cpu" in report["message"]


def test_pending_pods_outside_jobs_are_not_idle(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    manifest = tmp_path / "podgroup.yaml"
    manifest.write_text(PODGROUP_ONLY)
    code, report = simulate_json(capsys, "-f", str(manifest), "--until-idle")
    assert report["binds"] == {"default/fits": "only-node"}
    assert (code, report["outcome"]) == (3, "unschedulable")
    assert "default/too-big" in report["message"]


def test_yaml_output_is_the_same_report(capsys: pytest.CaptureFixture[str]) -> None:
    _, as_json = simulate_json(capsys, *GANG_ARGS, "--until-idle")
    code, out, _ = simulate(capsys, *GANG_ARGS, "--until-idle", "-o", "yaml")
    assert code == 0
    assert yaml.safe_load(out) == as_json


def test_table_mentions_every_job(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = simulate(capsys, *GANG_ARGS, "--until-idle", "-o", "table")
    assert code == 0
    assert out.startswith("outcome: idle")
    job_rows = [line for line in out.splitlines() if line.startswith("default/tf-") and "Completed" in line]
    for job in JOBS:
        assert sum(row.split()[0] == job for row in job_rows) == 2  # the job table and the podgroup table
    assert "makespan 180s" in out


def test_one_session_table_lists_every_podgroup(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = simulate(capsys, *GANG_ARGS)
    assert code == 0
    for job in JOBS:
        assert job in out
    assert "binds: 12  evictions: 0  pipelined: 0" in out


def test_default_mode_places_a_small_job(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    manifest = tmp_path / "small.yaml"
    manifest.write_text(SMALL)
    code, report = simulate_json(capsys, "-f", str(manifest))
    assert code == 0
    assert report["outcome"] == "cycles" and report["cycles"] == 1
    assert report["binds"] == {"default/small-work-0": "only-node", "default/small-work-1": "only-node"}
    assert report["podgroups"]["default/small"]["phase"] == "Inqueue"


def test_cycles_runs_exactly_that_many_sessions(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = simulate_json(capsys, *GANG_ARGS, "--cycles", "3")
    assert code == 0
    assert report["cycles"] == 3
    assert report["outcome"] == "cycles"
    sessions = {c["transitionID"] for pg in report["podgroups"].values() for c in pg["conditions"]}
    assert "cycle-2" in sessions
    assert "cycle-3" not in sessions
    assert "jobs" not in report


def test_same_seed_same_json(capsys: pytest.CaptureFixture[str]) -> None:
    runs = [simulate(capsys, *GANG_ARGS, "--until-idle", "--seed", "7", "-o", "json") for _ in range(2)]
    assert runs[0] == runs[1]
    assert runs[0][0] == 0


def test_malformed_manifest_names_every_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    manifest = tmp_path / "broken.yaml"
    manifest.write_text(BAD_MANIFEST)
    code, out, err = simulate(capsys, *GANG_ARGS, "-f", str(manifest))
    assert code == 2
    assert out == ""
    quantity = "expected a quantity such as 500m, 2, 1.5, 1Gi or 1e3"
    container = "spec.tasks[0].template.spec.containers[0]"
    assert err.strip().splitlines() == [
        f"{manifest}#1 (Job default/broken): spec.tasks[0].replicas: expected an integer, got 'many'",
        f"{manifest}#1 (Job default/broken): {container}.resources.requests.cpu: {quantity}, got '1.5.3'",
        f"{manifest}#2 (Node bad-node): status.allocatable.cpu: {quantity}, got 'four'",
    ]


@pytest.mark.parametrize(
    ("annotation", "value"),
    [("lahar.dev/sim-duration", "60"), ("lahar.dev/sim-exit-code", "one"), ("lahar.dev/sim-arrival", "soon")],
)
def test_malformed_sim_annotation_is_an_input_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, annotation: str, value: str
) -> None:
    manifest = tmp_path / "small.yaml"
    manifest.write_text(
        SMALL.replace(
            "metadata: {name: small}", f"metadata: {{name: small, annotations: {{{annotation}: '{value}'}}}}"
        )
    )
    code, out, err = simulate(capsys, "-f", str(manifest), "--until-idle")
    assert code == 2
    assert out == ""
    assert "default/small" in err
    assert f"metadata.annotations[{annotation}]" in err
    assert repr(value) in err


def test_missing_manifest_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.yaml"
    code, out, err = simulate(capsys, "-f", str(missing))
    assert code == 2
    assert out == ""
    assert str(missing) in err and "cannot read the file" in err


def test_bad_conf_names_every_problem(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text(BAD_CONF)
    code, out, err = simulate(capsys, *GANG_ARGS, "--conf", str(conf))
    assert code == 2
    assert out == ""
    assert "actions: unknown action 'teleport'" in err
    assert "tiers[0].plugins[1].name: unknown plugin 'clairvoyance'" in err
    assert "tiers[1].plugins[0].arguments.binpack.colour: unknown argument for plugin binpack" in err
    # the valid argument next to it is not reported
    assert "binpack.cpu" not in err
