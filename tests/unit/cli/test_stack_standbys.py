"""`lahar up --standbys`: which processes the stack runs, and which of them share an election."""

from __future__ import annotations

from pathlib import Path

from services.cli.stack.supervisor import service_specs


def instance_id(args: tuple[str, ...]) -> str:
    return args[args.index("--instance-id") + 1]


def test_standbys_add_a_second_instance_of_each_leader_elected_service_started_after_the_first() -> None:
    plain = service_specs(Path("/home"), 4, "here", 2)
    spared = service_specs(Path("/home"), 4, "here", 2, standbys=True)
    added = [spec for spec in spared if spec not in plain]
    assert [spec.name for spec in added] == ["queue-controller-2", "job-controller-2", "binder-2"]
    names = [spec.name for spec in spared]
    for spec in added:
        first = next(s for s in spared if s.name == spec.name.removesuffix("-2"))
        # the same program (so the same election), campaigning under its own name, started later
        assert spec.module == first.module
        assert instance_id(spec.args) == spec.name and instance_id(first.args) == first.name
        assert names.index(first.name) < names.index(spec.name)
    # every other process is the same either way
    assert [s for s in spared if s not in added] == plain
    assert len(set(names)) == len(names)  # each its own log file and record
