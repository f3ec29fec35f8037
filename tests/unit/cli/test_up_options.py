"""`lahar up --scheduler-conf FILE --node-cpu/--node-memory/--node-pods/--node-labels --sim-nodes-file`:
checked before anything starts, then given to every scheduler replica and to the node agent."""

from __future__ import annotations

import argparse
from pathlib import Path

from services.cli.stack.supervisor import service_specs
from services.cli.stack.up_options import add_up_options, forwarded, node_flags, scheduler_conf, up_problems

ROOT = Path(__file__).resolve().parents[3]
CONF = ROOT / "examples" / "gang-experiment" / "pod-by-pod.conf"


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_up_options(parser)
    return parser.parse_args(list(argv))


def test_every_bad_option_is_named_before_anything_starts(tmp_path: Path) -> None:
    broken = tmp_path / "broken.conf"
    broken.write_text('actions: "enqueue, nosuchaction"\n')
    problems = up_problems(
        parsed("--scheduler-conf", str(broken), "--node-memory", "lots", "--node-pods", "x")
    )
    assert [p.split(":")[0] for p in problems] == ["--scheduler-conf", "--node-memory", "--node-pods"]
    assert "nosuchaction" in problems[0]
    assert up_problems(parsed("--scheduler-conf", str(CONF), "--node-cpu", "3", "--node-pods", "20")) == []


def test_each_replica_runs_the_conf_and_the_process_node_takes_its_size(tmp_path: Path) -> None:
    args = parsed("--scheduler-conf", str(CONF.relative_to(ROOT)), "--node-cpu", "3", "--node-memory", "8Gi")
    conf = scheduler_conf(args)
    assert Path(conf).is_absolute()  # the replicas run in other directories
    specs = service_specs(tmp_path, 0, "box", 2, scheduler_conf=conf, node_flags=node_flags(args))
    schedulers = [s for s in specs if s.module == "services.scheduler"]
    assert len(schedulers) == 2
    assert all(s.args[s.args.index("--scheduler-conf-file") + 1] == conf for s in schedulers)
    (agent,) = [s for s in specs if s.module == "services.node_agent"]
    assert agent.args[agent.args.index("--node-cpu") + 1] == "3"
    assert agent.args[agent.args.index("--node-memory") + 1] == "8Gi"
    assert "--node-pods" not in agent.args
    # hollow nodes are sized by the agent's sim options, not these
    (hollow,) = [
        s
        for s in service_specs(tmp_path, 5, "box", 1, node_flags=node_flags(args))
        if s.module.endswith("node_agent")
    ]
    assert "--node-cpu" not in hollow.args
    # the detached supervisor is told the same
    assert forwarded(args)[:2] == ["--scheduler-conf", conf]


GPU_NODES = """\
apiVersion: v1
kind: Node
metadata: {name: gpu-0, labels: {accelerator: a100}}
spec:
  taints: [{key: gpu, value: "true", effect: NoSchedule}]
status:
  allocatable: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "4"}
"""


def test_bad_labels_and_a_bad_nodes_file_are_named(tmp_path: Path) -> None:
    not_nodes = tmp_path / "queue.yaml"
    not_nodes.write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n")
    problems = up_problems(parsed("--node-labels", "zone=a,=x,tier", "--sim-nodes-file", str(not_nodes)))
    assert [p.split(":")[0] for p in problems] == ["--node-labels", "--node-labels", "--sim-nodes-file"]
    assert "'tier': expected key=value" in problems[1]
    assert "expected only Node manifests" in problems[2]
    missing = up_problems(parsed("--sim-nodes-file", str(tmp_path / "none.yaml")))
    assert missing and missing[0].startswith("--sim-nodes-file:") and "cannot read" in missing[0]
    twice = tmp_path / "twice.yaml"
    twice.write_text(GPU_NODES + "---\n" + GPU_NODES)
    assert "'gpu-0' named twice" in " ".join(up_problems(parsed("--sim-nodes-file", str(twice))))


def test_hollow_nodes_come_from_the_file_and_labels_reach_the_node_agent(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(GPU_NODES)
    args = parsed("--sim-nodes-file", str(nodes), "--node-labels", "zone=a", "--node-cpu", "3")
    assert up_problems(args) == []
    specs = service_specs(tmp_path, 0, "box", 1, node_flags=node_flags(args), hollow=True)
    (agent,) = [s for s in specs if s.module == "services.node_agent"]
    assert agent.args[agent.args.index("--runtime") + 1] == "sim"
    assert agent.args[agent.args.index("--sim-nodes-file") + 1] == str(nodes.resolve())
    assert agent.args[agent.args.index("--node-labels") + 1] == "zone=a"
    assert "--node-cpu" not in agent.args  # hollow nodes are sized by the sim runtime or the file
    assert forwarded(args)[-2:] == ["--sim-nodes-file", str(nodes.resolve())]


POLICY = ROOT / "examples" / "descheduler" / "policy.yaml"


def test_the_descheduler_runs_only_with_a_policy_and_its_problems_are_named(tmp_path: Path) -> None:
    from services.cli.stack.up_options import descheduler_args

    assert descheduler_args(parsed()) == ()
    assert [s.name for s in service_specs(tmp_path, 0, "box", 1)].count("descheduler") == 0
    bad = tmp_path / "policy.yaml"
    bad.write_text(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles: [{name: p, pluginConfg: []}]\n"
    )
    problems = up_problems(parsed("--descheduler-policy", str(bad), "--descheduling-interval", "soon"))
    assert any("profiles[0].pluginConfg" in p and 'did you mean "pluginConfig"' in p for p in problems), (
        problems
    )
    assert any(p.startswith("--descheduling-interval:") for p in problems), problems
    assert up_problems(parsed("--descheduler-dry-run")) == [
        "--descheduling-interval and --descheduler-dry-run need --descheduler-policy"
    ]
    args = parsed(
        "--descheduler-policy", str(POLICY), "--descheduling-interval", "60s", "--descheduler-dry-run"
    )
    assert up_problems(args) == []
    (spec,) = [
        s
        for s in service_specs(tmp_path, 0, "box", 1, descheduler_args=descheduler_args(args))
        if s.name == "descheduler"
    ]
    assert spec.module == "services.descheduler" and spec.identity is not None
    assert spec.args == ("--policy-config-file", str(POLICY), "--descheduling-interval", "60s", "--dry-run")
    assert forwarded(args)[-5:] == [
        "--descheduler-policy",
        str(POLICY),
        "--descheduling-interval",
        "60s",
        "--descheduler-dry-run",
    ]
