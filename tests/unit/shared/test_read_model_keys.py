"""Read-model keys: a name quote() would leave as it is is taken as it is (without calling quote), any
other is quoted, "_" alone stands for the cluster scope, and every key reads back as its object's name."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from shared.store.read_model import ReadModel, _decode, _token

NAMES = [
    "default",
    "r0-job-12-worker-3",
    "a_b",
    "n1.example.com",
    "~x",
    "a/b",
    "a b",
    "ä",
    "%5F",
    "__",
    "x\n",
]


@pytest.mark.parametrize("name", NAMES)
def test_a_token_is_the_quoted_name(name: str) -> None:
    assert _token(name) == quote(name, safe="")


def test_keys_read_back_as_their_names() -> None:
    model = ReadModel(None)  # type: ignore[arg-type]  # keys need no server
    for name in NAMES:
        key = model.key("pod", "team.a", name)
        _, obj = _decode(key, b"\x82\xa3seq\x01\xa6object\x80", model.prefix)
        assert obj is not None and (obj.kind, obj.namespace, obj.name) == ("pod", "team.a", name)
    scoped = model.key("node", None, "_")
    assert scoped.endswith(b"/_/%5F")
    _, node = _decode(scoped, b"\x82\xa3seq\x01\xa6object\x80", model.prefix)
    assert node is not None and (node.namespace, node.name) == (None, "_")
