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
from services.cli.deploy.provision import provision, provision_etcd_users
from shared.bus.envelope import Envelope
from shared.bus.jetstream import Bus
from shared.bus.streams import standard_streams
from shared.bus.subjects import EVENTS_STREAM, PLANS_STREAM, event_subject
from shared.security.credentials import read_credentials
from shared.security.tls import client_context
from shared.servers import EtcdServer, NatsServer
from shared.store.etcd import Etcd, EtcdError
from shared.store.etcd_auth import EtcdCredentials
from shared.store.read_model import scope

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


@pytest.fixture(scope="module")
def deployment_etcd(
    deployment: tuple[NatsServer, DeploymentKeys], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EtcdServer]:
    _, keys = deployment
    server = EtcdServer.start_in(tmp_path_factory.mktemp("etcd"), tls=keys.tls.etcd)
    yield server
    server.stop()


async def test_the_provisioner_makes_each_services_etcd_user_limited_to_its_own_keys(
    deployment: tuple[NatsServer, DeploymentKeys], deployment_etcd: EtcdServer
) -> None:
    _, keys = deployment
    endpoint = f"{deployment_etcd.host}:{deployment_etcd.port}"
    await provision_etcd_users(endpoint, keys.creds, ca(keys))
    await provision_etcd_users(endpoint, keys.creds, ca(keys))  # again: a no-op (root logs in now)
    endpoints = [(deployment_etcd.host, deployment_etcd.port)]

    async def as_user(user: str) -> Etcd:
        credentials = EtcdCredentials.from_file(user, keys.creds / f"{user}.etcd")
        return await Etcd.connect_cluster(endpoints, tls_ca=ca(keys), credentials=credentials)

    with pytest.raises(EtcdError):  # authentication is on: nobody unnamed reads anything
        anonymous = await Etcd.connect_cluster(endpoints, tls_ca=ca(keys))
        try:
            await anonymous.get(b"/lahar/objects/job/default/x")
        finally:
            await anonymous.close()
    pod_key = scope("pod", "default") + b"p"
    binder = await as_user("binder")
    scheduler = await as_user("scheduler-1")
    try:
        await binder.put(scope("node") + b"n1", b"{}")  # the binder writes the nodes it projects
        with pytest.raises(EtcdError, match=r"(?i)permission denied"):
            await scheduler.put(pod_key, b"{}")  # a scheduler writes no read model
    finally:
        await binder.close()
        await scheduler.close()
