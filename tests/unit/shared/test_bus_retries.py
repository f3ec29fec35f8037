"""What a publish that got no answer does: a stream electing its leader is waited for, a missing reply is
tried a few times, and either ends in a BusError once its budget is spent."""

from __future__ import annotations

from typing import Any

import nats.errors
import nats.js.errors
import pytest

from shared.bus.errors import BusError
from shared.bus.retries import until_answered, with_retries


class Answers:
    """send(): raises the given errors in turn, then answers."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> dict[str, Any]:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return {"seq": self.calls}


async def test_a_stream_without_a_leader_is_waited_for_beyond_the_attempts_for_a_missing_reply() -> None:
    leaderless = [nats.errors.NoRespondersError(), nats.js.errors.NoStreamResponseError()] * 3
    send = Answers(*leaderless)
    assert await with_retries("publish", send, attempts=3, leaderless_wait_s=5.0) == {"seq": 7}


async def test_a_stream_that_stays_leaderless_fails_after_the_wait() -> None:
    send = Answers(*[nats.errors.NoRespondersError()] * 1000)
    with pytest.raises(BusError, match="no stream answered"):
        await with_retries("publish", send, attempts=3, leaderless_wait_s=0.3)
    assert 2 <= send.calls < 1000


async def test_a_missing_reply_is_tried_attempts_times() -> None:
    send = Answers(*[nats.errors.TimeoutError()] * 3)
    with pytest.raises(BusError, match="no reply after 3 attempts"):
        await with_retries("publish", send, attempts=3, leaderless_wait_s=5.0)
    assert send.calls == 3
    assert await with_retries("publish", Answers(TimeoutError()), attempts=3, leaderless_wait_s=1) == {
        "seq": 2
    }


async def test_an_api_request_is_asked_again_until_jetstream_answers() -> None:
    send = Answers(nats.js.errors.ServiceUnavailableError(), nats.errors.TimeoutError())
    assert await until_answered("stream info", send, wait_s=5.0) == {"seq": 3}
    never = Answers(*[nats.errors.NoRespondersError()] * 1000)
    with pytest.raises(nats.errors.NoRespondersError):
        await until_answered("stream info", never, wait_s=0.3)
