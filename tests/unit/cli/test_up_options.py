"""`lahar up --scheduler-conf FILE --node-cpu/--node-memory/--node-pods`: checked before anything starts,
then given to every scheduler replica and to the process node's agent."""

from __future__ import annotations

import argparse
from pathlib import Path

from services.cli.stack.supervisor import service_specs
from services.cli.stack.up_options import add_up_options, forwarded, node_size, scheduler_conf, up_problems

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
    specs = service_specs(tmp_path, 0, "box", 2, scheduler_conf=conf, node_size=node_size(args))
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
        for s in service_specs(tmp_path, 5, "box", 1, node_size=node_size(args))
        if s.module.endswith("node_agent")
    ]
    assert "--node-cpu" not in hollow.args
    # the detached supervisor is told the same
    assert forwarded(args)[:2] == ["--scheduler-conf", conf]
