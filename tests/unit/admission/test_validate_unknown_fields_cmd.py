"""`lahar validate --validate=strict|warn|ignore` (kubectl's flag): an unknown field is an error naming
its path and the nearest known field (exit 1), a warning on stderr (exit 0) or nothing."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from services.cli import output
from services.cli.main import main
from shared.client_reads import Answer

JOB = textwrap.dedent("""\
    apiVersion: batch.volcano.sh/v1alpha1
    kind: Job
    metadata: {name: train}
    spec:
      minAvaliable: 1
      tasks:
        - name: worker
          replicas: 1
          template:
            spec:
              containers:
                - {name: a, image: busybox}
                - name: b
                  image: busybox
                  resoures: {requests: {cpu: 1}}
    """)
DOCUMENT = "#1 (Job default/train)"
MIN_AVAILABLE = 'spec.minAvaliable: unknown field "minAvaliable"; did you mean "minAvailable"?'
RESOURCES = (
    'spec.tasks[0].template.spec.containers[1].resoures: unknown field "resoures"; did you mean "resources"?'
)


@pytest.fixture
def job_file(tmp_path: Path) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(JOB)
    return str(path)


def validate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["validate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("flag", [[], ["--validate=strict"], ["--validate", "true"], ["--validate"]])
def test_strict_refuses_and_names_every_unknown_field(
    job_file: str, capsys: pytest.CaptureFixture[str], flag: list[str]
) -> None:
    code, out, err = validate(capsys, "-f", job_file, *flag)
    assert code == 1
    assert out.splitlines() == [
        f"{job_file}{DOCUMENT}: {MIN_AVAILABLE}",
        f"{job_file}{DOCUMENT}: {RESOURCES}",
    ]
    assert err == "2 error(s) in 1 document(s)\n"


def test_warn_accepts_and_prints_each_unknown_field_as_kubectl_does(
    job_file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = validate(capsys, "-f", job_file, "--validate=warn")
    assert (code, out) == (0, "1 document(s) valid\n")
    assert err.splitlines() == [
        f"Warning: {job_file}{DOCUMENT}: {MIN_AVAILABLE}",
        f"Warning: {job_file}{DOCUMENT}: {RESOURCES}",
    ]


def test_warn_lists_the_warnings_in_the_json_report(
    job_file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = validate(capsys, "-f", job_file, "--validate=warn", "-o", "json")
    report = json.loads(out)
    assert code == 0 and report["valid"] and report["errors"] == []
    assert [w["path"] for w in report["warnings"]] == [
        "spec.minAvaliable",
        "spec.tasks[0].template.spec.containers[1].resoures",
    ]


@pytest.mark.parametrize("mode", ["ignore", "false", "IGNORE"])
def test_ignore_accepts_silently(job_file: str, capsys: pytest.CaptureFixture[str], mode: str) -> None:
    assert validate(capsys, "-f", job_file, f"--validate={mode}") == (0, "1 document(s) valid\n", "")


def test_warn_still_refuses_what_is_wrong_for_other_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(JOB.replace("replicas: 1", "replicas: -1"))
    code, out, _ = validate(capsys, "-f", str(path), "--validate=warn")
    assert code == 1 and "spec.tasks[0].replicas: expected an integer >= 0" in out


def test_an_unknown_mode_is_a_usage_error(job_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["validate", "-f", job_file, "--validate=lenient"])
    assert exited.value.code == 2
    assert "expected strict, warn or ignore (or true, false), got 'lenient'" in capsys.readouterr().err


def test_apply_takes_the_same_flag() -> None:
    # the flag parses offline; what admission does with it: tests/integration/test_admission_unknown_fields.py
    with pytest.raises(SystemExit) as exited:
        main(["apply", "-f", "x.yaml", "--validate=lenient"])
    assert exited.value.code == 2


def test_apply_prints_the_warnings_of_an_accepted_request_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    warning = {
        "document": "job.yaml#1 (Job default/train)",
        "path": "spec.minAvaliable",
        "message": "unknown",
    }
    reply = {"accepted": True, "code": "ok", "objects": [], "errors": [], "warnings": [warning], "seq": 3}
    assert output.report([("job.yaml", Answer.of(reply))], "text") == output.EXIT_OK
    assert capsys.readouterr().err == "Warning: job.yaml#1 (Job default/train): spec.minAvaliable: unknown\n"
    assert Answer.of(reply).to_dict()["warnings"] == [warning]  # what -o json and -o yaml print
