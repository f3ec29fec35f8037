"""`lahar version`: the installed version and every API version lahar reads (vcctl users expect it)."""

from __future__ import annotations

import json

import pytest

from services.cli.main import main


def test_version_names_the_package_and_every_kinds_api_versions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version", "-o", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["version"] == "0.1.0" or info["version"] == "unknown"
    assert info["api_versions"]["Job"] == ["batch.volcano.sh/v1alpha1"]
    assert "scheduling.k8s.io/v1beta1" in info["api_versions"]["PriorityClass"]
    assert main(["version"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Version:") and "PriorityClass:" in text
