"""`lahar advise` end to end through the CLI entry point: seed 001's gang experiment (the default conf is
recommended and the pod-by-pod conf shown to deadlock), the built-in candidates, an objective that changes
the answer, the plot, and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.advisor.candidates import built_in
from services.cli.main import main
from services.scheduler.core.conf import parse_conf

ROOT = Path(__file__).resolve().parents[2]
GANG = ROOT / "examples" / "gang-experiment"
GANG_WORKLOAD = ["-f", str(GANG / "cluster.yaml"), "-f", str(GANG / "gang-jobs.yaml")]
FRAGMENTATION = ["-f", str(ROOT / "examples" / "advise" / "fragmentation.yaml")]


def advise_json(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> dict[str, Any]:
    assert main(["advise", *args, "-o", "json"]) == code
    return json.loads(capsys.readouterr().out)


def candidate(report: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [c for c in report["candidates"] if c["conf"] == name]
    return found


def test_the_gang_experiment_recommends_the_default_and_shows_the_pod_by_pod_deadlock(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = advise_json(capsys, *GANG_WORKLOAD, "--conf", "default", "--conf", str(GANG / "pod-by-pod.conf"))
    assert report["recommended"] == "default"
    assert [c["conf"] for c in report["candidates"]] == ["default", "pod-by-pod"]
    default, pod_by_pod = report["candidates"]
    assert (default["outcome"], default["jobs_finished"], default["makespan_s"]) == ("finished", 5, 180.0)
    assert (default["job_scheduling_latency_mean_s"], default["job_scheduling_latency_p99_s"]) == (
        48.0,
        120.0,
    )
    assert default["deadlock"] is False and default["mean_utilisation"]["cpu"] == pytest.approx(0.8333)
    assert (pod_by_pod["outcome"], pod_by_pod["deadlock"], pod_by_pod["jobs_finished"]) == (
        "deadlock",
        True,
        0,
    )
    assert pod_by_pod["source"] == str(GANG / "pod-by-pod.conf")
    assert "jobs holding part of their resources: default/tf-1 (3/6 pods running)" in pod_by_pod["message"]
    assert report["why"].startswith("Use default: it is the only candidate that finishes all 5 jobs")
    assert "Avoid pod-by-pod, which deadlocks: without the gang plugin" in report["why"]


def test_the_table_shows_each_candidate_the_deadlock_and_the_advice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["advise", *GANG_WORKLOAD, "--conf", "default", "--conf", str(GANG / "pod-by-pod.conf")]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("RANK"))
    assert header.split() == [
        "RANK",
        "CONF",
        "OUTCOME",
        "JOBS",
        "MAKESPAN",
        "LAT",
        "MEAN",
        "LAT",
        "P99",
        "JOB-LAT",
        "CV",
        "NODE",
        "CV",
        "UTILISATION",
        "SCORE",
    ]
    rows = [line.split() for line in lines if line.strip().startswith(("1 ", "2 "))]
    assert rows[0][:9] == ["1", "default", "finished", "5/5", "180s", "48s", "120s", "0.935", "0.000"]
    assert rows[1][:7] == ["2", "pod-by-pod", "deadlock", "0/5", "-", "-", "-"]
    assert "pod-by-pod: no progress possible" in out
    assert "recommended: default" in lines and any(line.startswith("why: Use default") for line in lines)


def test_without_conf_every_built_in_candidate_runs(capsys: pytest.CaptureFixture[str]) -> None:
    report = advise_json(capsys, *GANG_WORKLOAD)
    names = [c["conf"] for c in report["candidates"]]
    assert sorted(names) == sorted(
        ["default", "no-gang", "pod-by-pod", "binpack", "fifo", "drf-only", "preempt-reclaim"]
    )
    assert report["recommended"] == "default"  # ties with the variations that change nothing here
    assert names[-1] == "pod-by-pod" and candidate(report, "pod-by-pod")["deadlock"]
    assert all(c["outcome"] == "finished" for c in report["candidates"][:-1])


def test_the_objective_changes_the_answer_when_placement_matters(capsys: pytest.CaptureFixture[str]) -> None:
    latency = advise_json(
        capsys, *FRAGMENTATION, "--conf", "default", "--conf", "binpack", "--objective", "latency"
    )
    assert latency["recommended"] == "binpack"
    assert (
        candidate(latency, "binpack")["job_scheduling_latency_mean_s"]
        < candidate(latency, "default")["job_scheduling_latency_mean_s"]
    )
    assert latency["why"].startswith(
        "Use binpack: its mean job scheduling latency is 0s against 97s for default"
    )
    # and it finishes sooner, so it keeps the cluster busier too
    makespan = advise_json(
        capsys, *FRAGMENTATION, "--conf", "binpack", "--conf", "default", "--objective", "makespan"
    )
    assert makespan["recommended"] == "binpack"
    assert [
        c["conf"]
        for c in advise_json(
            capsys, *FRAGMENTATION, "--conf", "default", "--conf", "binpack", "--objective", "utilisation"
        )["candidates"]
    ] == ["binpack", "default"]


def test_plot_writes_a_png(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "advice.png"
    assert (
        main(["advise", *GANG_WORKLOAD, "--conf", "default", "--conf", "pod-by-pod", "--plot", str(target)])
        == 0
    )
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and target.stat().st_size > 10_000
    assert f"wrote {target}" in capsys.readouterr().err


def test_print_conf_prints_a_conf_that_reads_back(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--print-conf", "binpack"]) == 0
    assert parse_conf(capsys.readouterr().out) == built_in("binpack").conf


def test_nothing_finishing_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    report = advise_json(capsys, *GANG_WORKLOAD, "--conf", "pod-by-pod", code=3)
    assert report["recommended"] == "pod-by-pod" and report["why"].startswith("pod-by-pod does not finish")


def test_bad_input_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    broken = tmp_path / "broken.conf"
    broken.write_text('actions: "allocate, hurry"\ntiers: []\n')
    assert main(["advise", *GANG_WORKLOAD, "--conf", "nonesuch", "--conf", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "--conf nonesuch: no such file, nor a built-in candidate (default, no-gang" in err
    assert f"--conf {broken}: actions" in err and "hurry" in err
    assert main(["advise", *GANG_WORKLOAD, "--horizon", "soon"]) == 2
    assert "lahar advise: --horizon: expected a duration" in capsys.readouterr().err
    assert main(["advise", "--conf", "default"]) == 2
    assert "give the workload with -f FILE and/or --from-log" in capsys.readouterr().err
    assert main(["advise", *GANG_WORKLOAD, "--since", "1h"]) == 2
    assert "--since goes with --from-log" in capsys.readouterr().err
    assert main(["advise", "-f", str(GANG / "cluster.yaml")]) == 2
    assert "no workload to replay: no Job, Pod, PodGroup, CronJob, JobFlow" in capsys.readouterr().err
    assert main(["advise", *GANG_WORKLOAD, "--since", "1h"]) == 2
    assert "--since goes with --from-log" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j, annotations: "
        "{lahar.dev/sim-arrival: soon}}\nspec: {tasks: [{name: t, replicas: 1, template: {spec: "
        "{containers: [{name: c, image: i}]}}}]}\n"
    )
    assert main(["advise", "-f", str(bad)]) == 2
    assert "metadata.annotations[lahar.dev/sim-arrival]" in capsys.readouterr().err
