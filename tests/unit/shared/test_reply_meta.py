"""A delivery's positions read from its reply subject agree with nats.py's own reading."""

from __future__ import annotations

import pytest
from nats.aio.msg import Msg
from nats.errors import NotJSMessageError

from shared.bus.reply_meta import reply_meta

_REPLIES = [
    "$JS.ACK.lahar-events.consumer-1.1.123456.789.1732600000123456789.42",
    "$JS.ACK.hub.ACCHASH.lahar-plans.binder.3.17.5.1732600000000000000.0",
    "$JS.ACK.hub.ACCHASH.lahar-plans.binder.3.17.5.1732600000000000000.0.r4nd0m",
]


@pytest.mark.parametrize("reply", _REPLIES)
def test_the_positions_are_nats_py_s(reply: str) -> None:
    ours, theirs = reply_meta(reply), Msg.Metadata._from_reply(reply)
    assert ours.stream == theirs.stream
    assert (ours.stream_seq, ours.consumer_seq) == (theirs.sequence.stream, theirs.sequence.consumer)
    assert (ours.delivered, ours.pending) == (theirs.num_delivered, theirs.num_pending)
    assert ours.stored_at == pytest.approx(theirs.timestamp.timestamp())


@pytest.mark.parametrize(
    "reply",
    [
        None,
        "",
        "_INBOX.abc",
        "$JS.ACK.s.c.1.2",
        "$JS.API.s.c.1.2.3.4.5",
        "$JS.ACK.s.c.one.2.3.4.5",
        "$JS.ACK.a.b.s.c.1.2.3.4",
    ],
)
def test_a_reply_that_is_not_a_deliverys_is_refused(reply: str | None) -> None:
    with pytest.raises(NotJSMessageError):
        reply_meta(reply)
