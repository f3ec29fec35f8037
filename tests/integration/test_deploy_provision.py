"""A compose deployment's keys and provisioner on a real nats-server: the server loads the accounts
`lahar deploy keys` wrote for the compose file's services, the one-shot provisioner creates every
stream as the only user allowed to, and then each service's user may do its own job and no other's."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import nats
import nats.errors
import pytest
import yaml

from services.cli.deploy.identities import compose_identities
from services.cli.deploy.keys import DeploymentKeys, write_deployment_keys
from services.cli.deploy.provision import provision
from shared.bus.envelope import Envelope
from shared.bus.jetstream import Bus
from shared.bus.streams import standard_streams
from shared.bus.subjects import EVENTS_STREAM, PLANS_STREAM, event_subject
from shared.security.credentials import read_credentials
from shared.security.tls import client_context
from shared.servers import NatsServer

COMPOSE = Path(__file__).resolve().parents[2] / "deploy" / "compose" / "docker-compose.yaml"


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NatsServer, DeploymentKeys]]:
    keys = write_deployment_keys(
        tmp_path_factory.mktemp("secrets") / "secrets",
        compose_identities(yaml.safe_load(COMPOSE.read_text())),
    )
    server = NatsServer.start_in(
        tmp_path_factory.mktemp("nats"), extra_args=("--config", str(keys.auth_conf))
    )
    yield server, keys
    server.stop()


def ca(keys: DeploymentKeys) -> str:
    return str(keys.tls.ca)


def creds(keys: DeploymentKeys, user: str) -> str:
    return str(keys.out / "creds" / f"{user}.nk")


async def test_the_provisioner_creates_every_stream_and_services_find_them(
    deployment: tuple[NatsServer, DeploymentKeys],
) -> None:
    server, keys = deployment
    await provision(server.url, creds(keys, "provisioner"), 1, 30, ca(keys))
    bus = await Bus.connect(server.url, name="binder-check", creds=creds(keys, "binder"), tls_ca=ca(keys))
    try:
        # a service checks the streams it uses exist as specified; it could not create them itself
        used = {EVENTS_STREAM, PLANS_STREAM}
        await bus.ensure_streams([spec for spec in standard_streams(replicas=1) if spec.name in used])
    finally:
        await bus.close()
    await provision(server.url, creds(keys, "provisioner"), 1, 30, ca(keys))  # again: a no-op


async def test_a_service_may_not_write_another_services_fact(
    deployment: tuple[NatsServer, DeploymentKeys],
) -> None:
    server, keys = deployment
    await provision(server.url, creds(keys, "provisioner"), 1, 30, ca(keys))
    refused: list[str] = []

    async def on_error(exc: Exception) -> None:
        refused.append(str(exc).lower())

    nc = await nats.connect(
        server.url,
        allow_reconnect=False,
        error_cb=on_error,
        tls=client_context(ca(keys)),
        **read_credentials(creds(keys, "scheduler-1")).connect_options(),
    )
    try:
        envelope = Envelope.create(
            "PodBound",
            time=time.time(),
            producer="binder",
            correlation_id="default/p",
            payload={"node": "no-such-node", "plan": str(uuid.uuid4())},
        )
        subject = event_subject("pod", "default", "p", "PodBound", "binder")
        with pytest.raises((nats.errors.TimeoutError, nats.errors.NoRespondersError)):
            await nc.jetstream().publish(
                subject, envelope.encode(), timeout=2.0, headers={"Nats-Msg-Id": str(uuid.uuid4())}
            )
        await nc.flush()
    finally:
        await nc.close()
    assert any("permissions violation" in text and subject.lower() in text for text in refused), refused
