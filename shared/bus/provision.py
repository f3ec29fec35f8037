"""Creating the standard streams before any service starts, as the only user allowed to (the
provisioner, docs/security.md): on `lahar up` (services/cli/stack/stack_servers.py) and in a compose
deployment's one-shot provisioner (services/cli/deploy/provision.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import nats.errors
import nats.js.errors
import structlog

from shared.bus.errors import BusError
from shared.bus.jetstream import Bus
from shared.bus.streams import standard_streams

log = structlog.get_logger(__name__)
# short: a request made before a cluster's meta leader is elected gets no answer
_STREAM_REQUEST_TIMEOUT_S = 2.0


async def create_streams_until_ready(
    servers: Sequence[str], *, replicas: int, creds: str | None, tls_ca: str | None, deadline: float
) -> None:
    """Create every standard stream with `replicas`, trying again until the JetStream cluster can (its
    meta leader elected, every server joined) or `deadline` (time.monotonic()) passes: RuntimeError.
    creds: the provisioner's credentials file; tls_ca: the CA the servers' certificates chain to."""
    bus = await Bus.connect(
        list(servers),
        name="lahar-provisioner",
        request_timeout_s=_STREAM_REQUEST_TIMEOUT_S,
        creds=creds,
        tls_ca=tls_ca,
    )
    try:
        while True:
            try:
                await bus.ensure_streams(standard_streams(replicas=replicas))
                return
            except (nats.errors.Error, nats.js.errors.Error, BusError, TimeoutError) as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the NATS cluster could not create its streams: {exc!r}") from exc
                log.info("NATS cluster not ready for streams yet", error=repr(exc))
                await asyncio.sleep(0.2)
    finally:
        await bus.close()
