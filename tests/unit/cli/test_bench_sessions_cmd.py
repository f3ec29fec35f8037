"""`lahar bench sessions` refuses bad arguments by name, before reading anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.cli.main import main


def test_bad_arguments_are_each_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "sessions", "--home", str(tmp_path), "--every", "0", "--passes", "-1"])
    error = capsys.readouterr().err
    assert code == 2
    assert "every and passes: expected integers >= 1" in error
    assert f"home: {tmp_path} holds no nats directory" in error
