"""The provisioner of a compose deployment: a one-shot container every lahar service waits for
(`service_completed_successfully`). It does what `lahar up` does before any service starts:

- creates the standard streams, with the deployment's replica count, as the only user allowed to
  (docs/security.md); a service's own `ensure_stream` then finds them as specified;
- makes every service's and the operator's etcd user, each with the role limited to its own keys
  (shared/security/etcd_roles.py), and turns etcd authentication on, as root.

Configured from the environment, as the services are: LAHAR_NATS_URL (every server, comma-separated),
LAHAR_NATS_CREDS (the provisioner's credentials file), LAHAR_TLS_CA (the CA the servers' certificates
chain to), LAHAR_STREAM_REPLICAS, LAHAR_ETCD_ENDPOINT, LAHAR_CREDS_DIR (where `lahar deploy keys` put
identities.json, the users' .etcd password files and etcd-root.password). Exits 0 once both are done,
1 if they could not be within LAHAR_PROVISION_TIMEOUT_S (default 120). Running it again is safe.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import structlog

from services.cli.deploy.keys import ETCD_ROOT_PASSWORD, IDENTITIES, read_identities
from shared.bus.provision import create_streams_until_ready
from shared.config import parse_endpoints
from shared.security.etcd_roles import stack_roles
from shared.store.etcd_auth import EtcdCredentials
from shared.store.etcd_provision import provision as provision_etcd
from shared.store.etcd_provision import users_of

log = structlog.get_logger(__name__)


async def provision(
    nats_url: str, creds: str | None, replicas: int, timeout_s: float, tls_ca: str | None = None
) -> None:
    deadline = time.monotonic() + timeout_s
    await create_streams_until_ready(
        nats_url.split(","), replicas=replicas, creds=creds, tls_ca=tls_ca, deadline=deadline
    )
    log.info("streams provisioned", replicas=replicas)


async def provision_etcd_users(etcd_endpoint: str, creds_dir: Path, tls_ca: str | None) -> None:
    """Every user of identities.json with a password file in creds_dir, as root."""
    roles = stack_roles(read_identities(creds_dir / IDENTITIES))
    passwords = {user: EtcdCredentials.from_file(user, creds_dir / f"{user}.etcd").password for user in roles}
    root = EtcdCredentials.from_file("root", creds_dir / ETCD_ROOT_PASSWORD).password
    await provision_etcd(
        parse_endpoints(etcd_endpoint), root_password=root, users=users_of(roles, passwords), tls_ca=tls_ca
    )
    log.info("etcd users provisioned", users=sorted(roles))


async def provision_all(env: Mapping[str, str]) -> None:
    tls_ca = env.get("LAHAR_TLS_CA") or None
    await provision(
        env.get("LAHAR_NATS_URL", "nats://127.0.0.1:4222"),
        env.get("LAHAR_NATS_CREDS") or None,
        int(env.get("LAHAR_STREAM_REPLICAS", "1")),
        float(env.get("LAHAR_PROVISION_TIMEOUT_S", "120")),
        tls_ca,
    )
    creds_dir = env.get("LAHAR_CREDS_DIR")
    if creds_dir:
        await provision_etcd_users(env.get("LAHAR_ETCD_ENDPOINT", "127.0.0.1:2379"), Path(creds_dir), tls_ca)


def main() -> int:
    try:
        asyncio.run(provision_all(os.environ))
    except (RuntimeError, ValueError, OSError) as exc:
        print(f"lahar provisioner: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
