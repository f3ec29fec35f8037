"""Seed 002's experiment in the simulator (issue 13): eight workers te1..te8, three low-priority pods of
one Job on te3, then a stress pod pinned to te3 that pushes it past the policy's targetThresholds. The
load-aware descheduler moves the low-priority pods off te3 and the scheduler places them elsewhere; the
stress pod stays; no pod is moved twice; once te3 is below its targets nothing more is evicted. The
manifests are the repo's examples/descheduler/ (the commands docs/descheduler.md shows).

Plus the descheduler's rules as the simulator keeps them: nodeFit (a pod no other node may take stays),
the cool-down (a pod back on the hot node is left alone until it runs out), LowNodeUtilization by
requests without any usage samples, a quiet simulation still ending, and every bad option named."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from contracts.objects import Job
from contracts.parse import load_files
from services.cli.main import main
from services.descheduler.core.evictor import Settings
from services.descheduler.core.policy_parse import parse_policy
from services.scheduler.core.conf import default_conf, parse_conf
from services.simulator.descheduling import SimDescheduler
from services.simulator.engine import SimulationRun, simulate

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "descheduler"
NODES = EXAMPLE / "seed-002-nodes.yaml"
JOBS = EXAMPLE / "seed-002-jobs.yaml"
STRESS = EXAMPLE / "seed-002-stress-pod.yaml"
CONF = EXAMPLE / "seed-002-scheduler.conf"
POLICY = EXAMPLE / "seed-002-policy.yaml"
PROMETHEUS_POLICY = EXAMPLE / "policy.yaml"  # the seed's own: metrics type Prometheus
LOW = [f"default/low-priority-workload-workload-{i}" for i in range(3)]
STRESS_POD = "default/stress-pod-on-te3"
HOT = "te3"
MINUTE = 60.0


def seed_002(policy: Path = POLICY, *, conf: Path | None = CONF, cooldown_s: float = 1800.0, **kw: Any):
    objects = load_files([NODES, JOBS, STRESS])
    descheduler = SimDescheduler(
        parse_policy(policy.read_text(), str(policy)), MINUTE, Settings(cooldown_s=cooldown_s)
    )
    scheduler_conf = parse_conf(conf.read_text(), str(conf)) if conf else default_conf()
    return simulate(objects, scheduler_conf, until_idle=True, descheduler=descheduler, **kw)


def evicted(run: SimulationRun) -> list[tuple[float, str, str]]:
    """(time, pod, node) of every PodEvicting in the log."""
    return [
        (e.time, f"{e.namespace}/{e.name}", e.payload["node"])
        for e in run.log.events
        if e.type == "PodEvicting"
    ]


def running_on(run: SimulationRun) -> dict[str, list[str]]:
    """pod -> the nodes its runs started on, in order."""
    starts: dict[str, list[str]] = {}
    for e in run.log.events:
        if e.type == "PodRunning":
            starts.setdefault(f"{e.namespace}/{e.name}", []).append(e.payload["node"])
    return starts


def test_seed_002_the_low_priority_pods_leave_te3_and_the_stress_pod_stays() -> None:
    run = seed_002()
    assert run.outcome == "idle"
    assert run.descheduler is not None
    starts = running_on(run)
    # they started on te3, the node they prefer, before the stress pod came
    assert all(starts[pod][0] == HOT for pod in LOW)
    # each left te3 once and runs elsewhere, to the end of the job
    assert sorted(pod for _, pod, _ in evicted(run)) == LOW
    assert all(node == HOT for _, _, node in evicted(run))
    for pod in LOW:
        assert len(starts[pod]) == 2 and starts[pod][1] != HOT, starts[pod]
        assert run.binds[pod] == starts[pod][1]
        assert run.world.pods[pod].status.phase == "Succeeded"
    # the gang kept its minMember: the first run took two of the three, the next one the third
    times = sorted({t for t, _, _ in evicted(run)})
    assert [sum(1 for t, _, _ in evicted(run) if t == at) for at in times] == [2, 1]
    # the pinned pod: never evicted, ran its course on te3
    assert starts[STRESS_POD] == [HOT]
    assert run.world.pods[STRESS_POD].status.phase == "Succeeded"
    # the report says the same as the log
    assert [d.pod for d in run.descheduler.descheduled] == [pod for _, pod, _ in evicted(run)]
    assert all(
        d.plugin == "LoadAware" and "node te3 is above its targetThresholds" in d.reason
        for d in run.descheduler.descheduled
    )


def test_seed_002_nothing_is_evicted_once_te3_is_below_its_targets() -> None:
    run = seed_002()
    assert run.descheduler is not None
    runs = run.descheduler.runs
    te3 = [
        (r.time, r.result.runs[0].classes.get(HOT) if r.result.runs else None, r.result.evictions)
        for r in runs
    ]
    # every eviction came from a run that judged te3 above its targets
    assert all(cls == "over" for _, cls, chosen in te3 if chosen)
    # te3 does come down once the stress pod pushed it up: alone it keeps te3 at 75 %, below the target
    first_over = min(t for t, cls, _ in te3 if cls == "over")
    below = [t for t, cls, _ in te3 if t > first_over and cls not in (None, "over")]
    assert below, te3
    assert all(not chosen for t, _, chosen in te3 if t >= below[0])
    last_eviction = max(t for t, _, _ in evicted(run))
    assert below[0] > last_eviction
    # and it was judged at least once more while the stress pod still ran (it ends at 11 min)
    assert any(below[0] <= t < 11 * MINUTE for t, _, _ in te3)


def test_seed_002_with_the_seeds_prometheus_policy_reads_the_simulated_samples() -> None:
    """The seed's policy names a Prometheus server: the simulator reads its own samples instead."""
    run = seed_002(PROMETHEUS_POLICY)
    assert sorted(pod for _, pod, _ in evicted(run)) == LOW


def test_the_cooldown_holds_a_pod_back_on_the_hot_node() -> None:
    """Without the scheduler's usage plugin the pods go back to te3, the node they prefer: each is left
    alone there until its cool-down runs out, then moved again."""
    cooldown = 5 * MINUTE
    run = seed_002(conf=None, cooldown_s=cooldown)
    moves: dict[str, list[float]] = {}
    for at, pod, node in evicted(run):
        assert node == HOT and pod in LOW
        moves.setdefault(pod, []).append(at)
    assert any(len(times) > 1 for times in moves.values()), moves  # some pod came back and was moved again
    for times in moves.values():
        assert all(later - earlier >= cooldown for earlier, later in pairwise(times))
    assert STRESS_POD not in moves


def test_node_fit_a_pod_no_other_node_takes_is_never_evicted() -> None:
    objects = load_files([NODES, JOBS, STRESS])
    pinned = []
    for obj in objects:
        if isinstance(obj, Job):
            task = obj.tasks[0]
            spec = replace(task.template.spec, node_selector={"kubernetes.io/hostname": HOT})
            obj = replace(obj, tasks=(replace(task, template=replace(task.template, spec=spec)),))
        pinned.append(obj)
    policy = parse_policy(POLICY.read_text(), str(POLICY))
    run = simulate(
        pinned,
        parse_conf(CONF.read_text(), str(CONF)),
        until_idle=True,
        descheduler=SimDescheduler(policy, MINUTE),
    )
    assert run.outcome == "idle"
    assert evicted(run) == []
    assert run.descheduler is not None
    assert any(r.result.runs and r.result.runs[0].classes.get(HOT) == "over" for r in run.descheduler.runs)


LOPSIDED_REQUESTS = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: requests
  pluginConfig:
  - name: DefaultEvictor
    args: {nodeFit: true}
  - name: LowNodeUtilization
    args:
      thresholds: {cpu: 10}
      targetThresholds: {cpu: 20}
  plugins:
    balance:
      enabled: [LowNodeUtilization]
"""


def test_low_node_utilization_goes_by_requests_without_any_usage_plugin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The three low-priority pods request 300m each on te3 (22.5 %), above a 20 % target; no stress
    pod, no usage plugin: requests alone decide. Each run moves one pod (te3 is then at 15 %), which
    comes back to te3, the node it prefers and nothing filters; the cool-down keeps every moved pod
    there, so each pod moves exactly once."""
    policy = tmp_path / "requests.yaml"
    policy.write_text(LOPSIDED_REQUESTS)
    args = ["simulate", "-f", str(NODES), "-f", str(JOBS), "--until-idle"]
    args += ["--descheduler-policy", str(policy), "--descheduling-interval", "1m"]
    assert main([*args, "--descheduler-cooldown", "2h", "-o", "json"]) == 0
    moved = json.loads(capsys.readouterr().out)["descheduled"]
    assert sorted(d["pod"] for d in moved) == LOW
    assert [d["time"] for d in moved] == [MINUTE, 2 * MINUTE, 3 * MINUTE]
    for d in moved:
        assert d["node"] == HOT and d["plugin"] == "LowNodeUtilization"
        assert d["reason"] == "node te3 is above its targetThresholds: cpu 22.5% > 20%"


def test_the_report_lists_what_was_descheduled(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["simulate", "-f", str(NODES), "-f", str(JOBS), "-f", str(STRESS), "--conf", str(CONF)]
    args += ["--until-idle", "--descheduler-policy", str(POLICY), "--descheduling-interval", "60s"]
    assert main([*args, "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [set(d) for d in report["descheduled"]] == [{"pod", "node", "plugin", "reason", "time"}] * 3
    assert Counter(d["pod"] for d in report["descheduled"]) == Counter(LOW)
    assert all(report["binds"][pod] != HOT for pod in LOW) and report["binds"][STRESS_POD] == HOT
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "descheduled: 3" in table
    assert sum(1 for line in table.splitlines() if "LoadAware" in line and HOT in line) == 3


def test_without_a_policy_the_report_has_no_descheduled(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-f", str(NODES), "-f", str(JOBS), "--until-idle", "-o", "json"]) == 0
    assert "descheduled" not in json.loads(capsys.readouterr().out)


def test_a_stuck_simulation_with_a_descheduler_still_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A job that fits nowhere: the descheduler has nothing new to decide, so it does not keep the clock
    going; the run ends unschedulable instead of running to the cycle limit."""
    too_big = tmp_path / "too-big.yaml"
    too_big.write_text(JOBS.read_text().replace("cpu: 300m", "cpu: 30"))
    args = [
        "simulate",
        "-f",
        str(NODES),
        "-f",
        str(too_big),
        "--until-idle",
        "--descheduler-policy",
        str(POLICY),
    ]
    assert main([*args, "-o", "json"]) == 3
    report = json.loads(capsys.readouterr().out)
    assert report["outcome"] == "unschedulable" and report["cycles"] < 10
    assert report["descheduled"] == []


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--descheduling-interval", "60s"], "--descheduling-interval: only with --descheduler-policy"),
        (["--descheduler-cooldown", "5m"], "--descheduler-cooldown: only with --descheduler-policy"),
        (
            ["--descheduler-policy", "no-such-policy.yaml"],
            "--descheduler-policy: cannot read no-such-policy.yaml",
        ),
    ],
)
def test_bad_descheduler_options_are_named(
    extra: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "-f", str(NODES), *extra]) == 2
    assert named in capsys.readouterr().err


def test_an_invalid_policy_is_refused_with_its_field_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        POLICY.read_text().replace("cpu: 80", "cpu: 130").replace("nodeFit: true", "nodeFit: yes please")
    )
    assert main(["simulate", "-f", str(NODES), "--descheduler-policy", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "targetThresholds.cpu" in err and "nodeFit" in err


@pytest.mark.parametrize("flag", ["--descheduling-interval", "--descheduler-cooldown"])
def test_descheduler_durations_must_be_positive(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["simulate", "-f", str(NODES), "--descheduler-policy", str(POLICY), flag, "0s"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert flag in err and "expected a positive duration" in err
