"""`lahar bench codec` runs and reports every kind it measures; its sample objects survive the codec."""

from __future__ import annotations

import orjson
import pytest

from contracts.codec import decode_object, encode_object
from services.cli.bench_codec import sample_objects
from services.cli.main import main


def test_the_sample_objects_round_trip() -> None:
    for obj in sample_objects().values():
        assert decode_object(encode_object(obj)) == obj


def test_bench_codec_reports_microseconds_per_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "codec", "-n", "3", "-o", "json"]) == 0
    result = orjson.loads(capsys.readouterr().out)
    assert result["iterations"] == 3
    assert set(result["us_per_call"]) == {"Pod", "PodGroup", "Job", "Node"}
    for times in result["us_per_call"].values():
        assert times["encode"] > 0 and times["decode"] > 0


def test_bench_codec_rejects_a_count_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "codec", "-n", "0"]) == 2
    assert "iterations: expected an integer >= 1" in capsys.readouterr().err
