"""The provisioner of a compose deployment: a one-shot container every lahar service waits for
(`service_completed_successfully`). With identities on the bus only the `provisioner` user may create or
change streams (docs/security.md), so it creates the standard streams, with the deployment's replica
count, before any service starts; a service's own `ensure_stream` then finds them as specified.

Configured from the environment, as the services are: LAHAR_NATS_URL (every server, comma-separated),
LAHAR_NATS_CREDS (the provisioner's credentials file), LAHAR_TLS_CA (the CA the servers' certificates
chain to), LAHAR_STREAM_REPLICAS. Exits 0 once the streams
exist, 1 if the cluster could not create them within LAHAR_PROVISION_TIMEOUT_S (default 120).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

import structlog

from shared.bus.provision import create_streams_until_ready

log = structlog.get_logger(__name__)


async def provision(
    nats_url: str, creds: str | None, replicas: int, timeout_s: float, tls_ca: str | None = None
) -> None:
    deadline = time.monotonic() + timeout_s
    await create_streams_until_ready(
        nats_url.split(","), replicas=replicas, creds=creds, tls_ca=tls_ca, deadline=deadline
    )
    log.info("streams provisioned", replicas=replicas)


def main() -> int:
    env = os.environ
    try:
        asyncio.run(
            provision(
                env.get("LAHAR_NATS_URL", "nats://127.0.0.1:4222"),
                env.get("LAHAR_NATS_CREDS") or None,
                int(env.get("LAHAR_STREAM_REPLICAS", "1")),
                float(env.get("LAHAR_PROVISION_TIMEOUT_S", "120")),
                env.get("LAHAR_TLS_CA") or None,
            )
        )
    except (RuntimeError, ValueError) as exc:
        print(f"lahar provisioner: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
