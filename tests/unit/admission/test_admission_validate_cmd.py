"""`lahar validate`: exit status and output over files, the repo's examples (all valid) and
examples/invalid (every file rejected, by the rule it demonstrates)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.volcano_typos import needs_warn

from contracts.limits import MAX_MANIFEST_BYTES
from contracts.parse import document_name
from services.admission import validate_cmd

ROOT = Path(__file__).resolve().parents[3]
# lahar's own examples; Volcano's (examples/volcano/) are checked as a Volcano user applies them, in
# tests/scenarios/test_volcano_examples.py
VOLCANO = ROOT / "examples" / "volcano"
# descheduler policies are no API objects: tests/unit/descheduler/test_desched_policy.py reads them
DESCHEDULER = ROOT / "examples" / "descheduler"
EXAMPLES = sorted(
    p
    for p in (ROOT / "examples").rglob("*.yaml")
    if p.parent.name != "invalid" and VOLCANO not in p.parents and DESCHEDULER not in p.parents
)
INVALID = sorted((ROOT / "examples" / "invalid").glob("*.yaml"))

# each invalid example and a field path its rule reports
INVALID_PATHS = {
    "command.yaml": "target.name",
    "duplicated-policy-event.yaml": "spec.policies[1].event",
    "duplicated-task-name.yaml": "spec.tasks[1].name",
    "hypernode.yaml": "spec.members[0].selector.regexMatch.pattern",
    "job-depends-on-cycle.yaml": "spec.tasks",
    "job-network-topology.yaml": "spec.networkTopology.highestTierName",
    "job-numa-topology-policy.yaml": "spec.tasks[0].template.spec.containers[0].resources.requests.cpu",
    "job-partition-policy.yaml": "spec.tasks[0].replicas",
    "job-plugins.yaml": "spec.plugins[mpi]",
    "job-pod-name-too-long.yaml": "spec.tasks[0].name",
    "job-priority-class.yaml": "spec.priorityClassName",
    "job-queues.yaml": "spec.queue",
    "job-task-counts.yaml": "spec.tasks[0].minAvailable",
    "job-volumes.yaml": "spec.volumes[1].mountPath",
    "min-available.yaml": "spec.minAvailable",
    "pod-disruption-budget.yaml": "metadata.annotations[volcano.sh/jdb-max-unavailable]",
    "pod-unschedulable-here.yaml": "spec.schedulerName",
    "podgroup.yaml": "spec.subGroupPolicy[0].networkTopology.highestTierName",
    "policy-exit-code.yaml": "spec.tasks[0].policies[0].exitCode",
    "priority-class.yaml": "value",
    "queue-hierarchy-annotations.yaml": "metadata.annotations[volcano.sh/hierarchy-weights]",
    "queue-overcommit-factor.yaml": "metadata.annotations[volcano.sh/overcommit-factor]",
    "queue-parent.yaml": "spec.capability.cpu",
    "queue-resources.yaml": "spec.deserved.cpu",
    "sim-annotations.yaml": "spec.tasks[0].template.metadata.annotations[lahar.dev/sim-duration]",
}


def validate_flag(*paths: Path) -> list[str]:
    """--validate=warn for Volcano's examples with a field no API knows (support/volcano_typos.py)."""
    volcano = ROOT / "examples" / "volcano"
    relative = [p.relative_to(volcano).as_posix() for p in paths if volcano in p.parents]
    return ["--validate=warn"] if needs_warn(relative) else []


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="lahar")
    validate_cmd.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["validate", *argv])
    return args.handler(args)


def files(*paths: Path) -> list[str]:
    return [arg for path in paths for arg in ("-f", str(path))]


def json_report(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = run(*argv, "-o", "json")
    return code, json.loads(capsys.readouterr().out)


def test_the_examples_are_all_there() -> None:
    assert {p.parent.name for p in EXAMPLES} >= {
        "examples",
        "gang-experiment",
        "lifecycle",
        "plain-pods",
        "queues",
        "topology",
    }
    assert sorted(p.name for p in INVALID) == sorted(INVALID_PATHS)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_example_is_valid_on_its_own(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(*files(path), *validate_flag(path)) == 0
    assert "valid" in capsys.readouterr().out


@pytest.mark.parametrize("directory", sorted({p.parent for p in EXAMPLES}), ids=lambda p: p.name)
def test_every_example_directory_is_valid(directory: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = sorted(directory.glob("*.yaml"))
    code, report = json_report(capsys, *files(*paths), *validate_flag(*paths))
    report.pop("warnings", None)
    assert (code, report) == (0, {"valid": True, "errors": []})


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_every_invalid_example_is_rejected_by_its_rule(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = json_report(capsys, *files(path))
    assert code == 1 and report["valid"] is False
    assert INVALID_PATHS[path.name] in {e["path"] for e in report["errors"]}
    assert all(e["document"].startswith(f"{path}#") for e in report["errors"])


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


QUEUE = textwrap.dedent("""\
    apiVersion: scheduling.volcano.sh/v1beta1
    kind: Queue
    metadata: {name: ml}
    spec: {weight: 2}
    """)
JOB = textwrap.dedent("""\
    apiVersion: batch.volcano.sh/v1alpha1
    kind: Job
    metadata: {name: train}
    spec:
      queue: ml
      minAvailable: %d
      tasks:
      - name: worker
        replicas: 2
        template: {spec: {containers: [{name: c, image: busybox}]}}
    """)


def test_a_job_may_name_a_queue_from_another_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queue, job = write(tmp_path, "queue.yaml", QUEUE), write(tmp_path, "job.yaml", JOB % 2)
    assert run(*files(job, queue)) == 0
    assert capsys.readouterr().out == "2 document(s) valid\n"
    assert run(*files(job)) == 1
    assert "spec.queue: unable to find job queue 'ml'" in capsys.readouterr().out


def test_every_error_is_listed_in_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = write(tmp_path, "job.yaml", (JOB % 3) + "---\n" + QUEUE.replace("ml", "ML"))
    assert run(*files(job)) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"{job}#1 (Job default/train): spec.minAvailable: job 'minAvailable' 3 should not be greater than "
        "total replicas in tasks (2)",
        f"{job}#1 (Job default/train): spec.queue: unable to find job queue 'ml'",
        f"{job}#2 (Queue ML): metadata.name: invalid name: 'ML' is not a lowercase RFC 1123 subdomain: lower "
        "case alphanumeric characters, '-' or '.', starting and ending with an alphanumeric character "
        "(e.g. 'example.com')",
    ]
    assert err == "3 error(s) in 2 document(s)\n"


def test_parse_errors_do_not_hide_rule_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = write(
        tmp_path,
        "broken.yaml",
        "kind: Job\napiVersion: batch.volcano.sh/v1alpha1\nmetadata: {name: x}\nspec: {tasks: 3}\n",
    )
    job = write(tmp_path, "job.yaml", JOB % 3)
    code, report = json_report(capsys, *files(broken, job, tmp_path / "absent.yaml"))
    assert code == 1
    assert [(e["document"], e["path"]) for e in report["errors"]] == [
        (f"{broken}#1 (Job default/x)", "spec.tasks"),
        (str(tmp_path / "absent.yaml"), ""),
        (f"{job}#1 (Job default/train)", "spec.minAvailable"),
        (f"{job}#1 (Job default/train)", "spec.queue"),
    ]
    assert "cannot read the file" in report["errors"][1]["message"]


def test_yaml_syntax_errors_are_reported_with_their_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "bad.yaml", QUEUE + "---\nkind: [unclosed\n")
    code, report = json_report(capsys, *files(path))
    assert code == 1
    (error,) = report["errors"]
    assert error["document"] == f"{path}#2" and "YAML syntax error at line" in error["message"]


def test_empty_documents_are_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "queue.yaml", "---\n# nothing\n---\n" + QUEUE)
    assert run(*files(path)) == 0
    assert capsys.readouterr().out == "1 document(s) valid\n"


def test_document_names_follow_the_parser() -> None:
    assert document_name("a.yaml", 3, {"kind": "Job", "metadata": {"name": "j", "namespace": "ml"}}) == (
        "a.yaml#3 (Job ml/j)"
    )
    assert document_name("a.yaml", 1, {"kind": "Queue", "metadata": {"name": "q", "namespace": "x"}}) == (
        "a.yaml#1 (Queue q)"
    )
    assert document_name("a.yaml", 1, {"kind": "Job"}) == "a.yaml#1 (Job)"
    assert document_name("a.yaml", 1, [1]) == "a.yaml#1"


POD = textwrap.dedent("""\
    apiVersion: v1
    kind: Pod
    metadata: {name: %s}
    spec: {schedulerName: volcano, containers: [{name: c, image: busybox}]}
    """)


def test_a_plain_pod_may_not_take_the_name_of_a_jobs_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = write(tmp_path, "job.yaml", QUEUE + "---\n" + JOB % 2)
    taken = write(tmp_path, "pod.yaml", POD % "train-worker-1")
    code, report = json_report(capsys, *files(job, taken))
    assert code == 1
    assert [(e["document"], e["path"]) for e in report["errors"]] == [
        (f"{job}#2 (Job default/train)", "spec.tasks[0].replicas"),
        (f"{taken}#1 (Pod default/train-worker-1)", "metadata.name"),
    ]
    assert run(*files(job, write(tmp_path, "free.yaml", POD % "train-worker-2"))) == 0


# --- bounded input (contracts/limits.py) ------------------------------------------------------------


def test_replicas_beyond_int32_are_refused_at_their_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        "job.yaml",
        QUEUE + "---\n" + (JOB % 1).replace("replicas: 2", "replicas: 9223372036854775807"),
    )
    code, report = json_report(capsys, *files(path))
    assert code == 1
    assert [(e["path"], e["message"]) for e in report["errors"]] == [
        (
            "spec.tasks[0].replicas",
            "expected an integer <= 2147483647 (a 32-bit integer), got 9223372036854775807",
        )
    ]


def test_a_quantity_beyond_int64_milli_units_is_refused_at_its_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = (JOB % 1).replace("image: busybox", "image: busybox, resources: {requests: {cpu: 1e400}}")
    code, report = json_report(capsys, *files(write(tmp_path, "job.yaml", QUEUE + "---\n" + job)))
    assert code == 1
    ((path, message),) = [(e["path"], e["message"]) for e in report["errors"]]
    assert path == "spec.tasks[0].template.spec.containers[0].resources.requests.cpu"
    assert (
        message
        == "expected a quantity of at most 9223372036854775807 milli-units (a 64-bit integer), got '1e400'"
    )


def test_pods_per_job_are_capped_by_default_and_by_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = write(tmp_path, "job.yaml", QUEUE + "---\n" + (JOB % 1).replace("replicas: 2", "replicas: 10001"))
    code, report = json_report(capsys, *files(big))
    assert code == 1 and [e["path"] for e in report["errors"]] == ["spec.tasks[0].replicas"]
    assert "max_pods_per_job" in report["errors"][0]["message"]
    assert run(*files(big), "--max-pods-per-job", "20000", "--max-pods-per-request", "20000") == 0
    capsys.readouterr()
    assert run(*files(big), "--max-pods-per-job", "0") == validate_cmd.EXIT_USAGE
    assert "max_pods_per_job" in capsys.readouterr().err


def test_a_file_larger_than_one_request_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "queue.yaml", QUEUE + "#" * MAX_MANIFEST_BYTES)
    code, report = json_report(capsys, *files(path))
    assert code == 1
    assert [(e["document"], e["path"]) for e in report["errors"]] == [(str(path), "")]
    assert f"admission takes at most {MAX_MANIFEST_BYTES}" in report["errors"][0]["message"]


@pytest.mark.parametrize(
    ("name", "opening", "closing"), [("deep.yaml", "a: ", "\n"), ("deep.json", '{"a": ', "}")]
)
def test_deeply_nested_documents_get_a_clear_error_and_no_traceback(
    tmp_path: Path, name: str, opening: str, closing: str
) -> None:
    text = opening + "[" * 100_000 + "]" * 100_000 + closing
    path = write(tmp_path, name, text)
    done = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "validate", "-f", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert done.returncode == validate_cmd.EXIT_INVALID, done.stderr
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    # the top mapping is the first level, so the 100th bracket is one too many
    assert done.stdout == (
        f"{path}#1: document too deep at line 1, column {len(opening) + 100}: mappings and lists nest more "
        "than 100 levels deep; lahar reads at most that\n"
    )
