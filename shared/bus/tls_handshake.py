"""A failed TLS handshake while nats-py makes its first connection: reported, never a hang.

nats-py reads the server's INFO in the clear and then upgrades the connection with asyncio's start_tls.
When that handshake fails (a certificate that does not verify, a server that drops the connection
mid-handshake), its first-connection loop reports the error to error_cb and then waits for the plain
stream it handed to start_tls to close, which never happens: the stream's protocol was replaced and
never hears the connection end. `nats.connect` would wait forever (measured with nats-py 2.16).

HandshakeGuard.on_error is an error_cb that, until the first connection is made, turns such an error into
TlsHandshakeFailed raised out of `nats.connect`, before the loop gets to that wait. The caller decides:
a certificate that does not verify is a configuration error to report; a dropped handshake, a reason to
try again with a new client. Once connected, every error goes to the wrapped callback as before (a
failed TLS handshake while reconnecting takes another path in nats-py, which does not wait on the stream).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable

from nats.aio.client import Client as NatsClient

ErrorCallback = Callable[[Exception], Awaitable[None]]


class TlsHandshakeFailed(ConnectionError):
    """The first connection's TLS handshake failed; `verify_failed`: the server's certificate does not
    chain to the CA the client trusts (or is not valid for its address), which trying again cannot fix."""

    def __init__(self, cause: Exception) -> None:
        self.verify_failed = isinstance(cause, ssl.SSLCertVerificationError)
        super().__init__(f"TLS handshake failed: {cause}")


class HandshakeGuard:
    def __init__(self, error_cb: ErrorCallback, *, tls: bool) -> None:
        self._error_cb = error_cb
        self._connecting = tls  # without TLS there is no handshake to guard

    def connected(self) -> None:
        """The first connection is made: from now on every error goes to the wrapped callback."""
        self._connecting = False

    async def on_error(self, exc: Exception) -> None:
        """The error_cb to give nats-py (which takes coroutine functions only, not callable objects)."""
        # A connection reset during the first connection comes from the handshake: a refused or
        # unreachable server fails at the TCP connect, which raises other errors.
        if self._connecting and isinstance(exc, ssl.SSLError | ConnectionResetError):
            raise TlsHandshakeFailed(exc) from exc
        await self._error_cb(exc)


async def first_connection(
    connect: Callable[[ErrorCallback], Awaitable[NatsClient]],
    error_cb: ErrorCallback,
    *,
    tls: bool,
    retry_wait_s: float | None = None,
) -> NatsClient:
    """connect(error_cb) (nats.connect with the given callback), guarded. A certificate that does not
    verify raises TlsHandshakeFailed; so does a dropped handshake when retry_wait_s is None, else that
    is reported to error_cb and a new client tries again after retry_wait_s."""
    while True:
        guard = HandshakeGuard(error_cb, tls=tls)
        try:
            nc = await connect(guard.on_error)
        except TlsHandshakeFailed as exc:
            if exc.verify_failed or retry_wait_s is None:
                raise
            await error_cb(exc)
            await asyncio.sleep(retry_wait_s)
            continue
        guard.connected()
        return nc
