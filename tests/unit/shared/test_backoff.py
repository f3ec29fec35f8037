"""Waiting out an outage: growing delays, and a call retried while its server is unavailable only."""

from __future__ import annotations

import itertools

import pytest

from shared.backoff import delays, retry_while_unavailable


def test_delays_double_up_to_the_cap_and_go_on_forever() -> None:
    assert list(itertools.islice(delays(0.1, 1.0), 7)) == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0]


class Down(Exception):
    pass


async def test_a_call_is_retried_while_its_server_is_unavailable_and_its_result_returned() -> None:
    attempts = []

    async def call() -> str:
        attempts.append(len(attempts))
        if len(attempts) < 4:
            raise Down("connection refused")
        return "answered"

    assert await retry_while_unavailable("test", call, (Down,), initial_s=0.001, max_s=0.002) == "answered"
    assert len(attempts) == 4


async def test_any_other_error_is_not_retried() -> None:
    attempts = []

    async def call() -> str:
        attempts.append(1)
        raise ValueError("refused: a real answer, not an outage")

    with pytest.raises(ValueError):
        await retry_while_unavailable("test", call, (Down,), initial_s=0.001)
    assert attempts == [1]
