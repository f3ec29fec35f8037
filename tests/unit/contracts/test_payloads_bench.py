"""`lahar bench payloads` compares like with like: the dataclass it times holds the same fields and
decodes the same payload to the same values as the Struct lahar ships."""

from __future__ import annotations

import dataclasses

import msgspec
import orjson
import pytest

from contracts.typed_events import encode_payload
from services.cli.bench_payloads import WAYS, as_dataclass, sample_payloads
from services.cli.main import main


def test_each_dataclass_decodes_a_payload_to_the_structs_values() -> None:
    samples = sample_payloads()
    assert samples
    for payload in samples.values():
        plain = encode_payload(payload)
        dataclass = as_dataclass(type(payload))
        decoded = msgspec.convert(plain, dataclass)
        assert {f.name: getattr(decoded, f.name) for f in dataclasses.fields(decoded)} == {
            f.name: getattr(payload, f.name) for f in msgspec.structs.fields(payload)
        }
        with pytest.raises(msgspec.ValidationError):  # checked as the Struct is
            msgspec.convert({**plain, msgspec.structs.fields(payload)[0].encode_name: 7}, dataclass)


def test_bench_payloads_reports_every_type_and_way(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "payloads", "-n", "2", "-o", "json"]) == 0
    result = orjson.loads(capsys.readouterr().out)
    assert set(result["us_per_call"]) == set(sample_payloads())
    for times in result["us_per_call"].values():
        assert set(times) == set(WAYS) and all(t > 0 for t in times.values())
    assert result["relative_to_struct"]["struct"] == 1.0


def test_bench_payloads_rejects_a_count_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "payloads", "-n", "0"]) == 2
    assert "iterations: expected an integer >= 1" in capsys.readouterr().err


def test_the_ways_from_bytes_decode_to_the_struct_lahar_ships() -> None:
    for payload in sample_payloads().values():
        packed = msgspec.msgpack.encode(encode_payload(payload))
        assert msgspec.msgpack.Decoder(type(payload)).decode(packed) == payload
        assert msgspec.convert(msgspec.msgpack.decode(packed), type(payload)) == payload
