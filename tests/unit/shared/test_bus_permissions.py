"""The bus permissions derived from the event catalogue (shared/security/permissions.py): one writer per
event type, under its own producer token; clients publish no event, plan or heartbeat; nobody but the
provisioner can change a stream, and nobody can ask JetStream for a raw stored message."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from contracts.events import (
    ADMISSION,
    BINDER,
    DESCHEDULER,
    EVENT_TYPES,
    JOB_CONTROLLER,
    NODE_AGENT,
    QUEUE_CONTROLLER,
    SCHEDULER,
    writer_of,
)
from shared.bus.heartbeats import heartbeat_subject
from shared.bus.subjects import (
    event_subject,
    intake_subject,
    logs_subject,
    plan_subject,
    quarantine_subject,
    reconcile_failure_subject,
    tenant_intake_subject,
)
from shared.security.credentials import (
    CredentialsError,
    new_user,
    read_credentials,
    server_accounts,
    write_private,
)
from shared.security.permissions import (
    ADMIN,
    CLIENT_JS_PREFIX,
    CLIENTS_ACCOUNT,
    PROVISIONER,
    SERVICES_ACCOUNT,
    TENANT,
    Identity,
    account_of,
    client_js_calls,
    client_services,
    event_writers,
    inbox_prefix,
    permissions,
    subject_matches,
)

KEY = "UKEY"
SERVICES = [
    Identity("admission", ADMISSION, ADMISSION),
    Identity("job-controller", JOB_CONTROLLER, JOB_CONTROLLER),
    Identity("job-controller-2", JOB_CONTROLLER, JOB_CONTROLLER),
    Identity("queue-controller", QUEUE_CONTROLLER, QUEUE_CONTROLLER),
    Identity("binder", BINDER, BINDER),
    Identity("binder-2", BINDER, BINDER),
    Identity("scheduler-0", SCHEDULER, "scheduler-0"),
    Identity("scheduler-1", SCHEDULER, "scheduler-1"),
    Identity("descheduler", DESCHEDULER, DESCHEDULER),
    Identity("node-agent", NODE_AGENT, f"{NODE_AGENT}.sim"),
    Identity("node-agent-b", NODE_AGENT, f"{NODE_AGENT}.host.b"),
]
CLIENTS = [Identity(ADMIN, ADMIN), Identity("team-a", TENANT, namespaces=("team-a",))]
EVERYONE = [*SERVICES, *CLIENTS, Identity(PROVISIONER, PROVISIONER)]


def may_publish(identity: Identity, subject: str) -> bool:
    return any(subject_matches(p, subject) for p in permissions(identity, KEY).publish)


def may_subscribe(identity: Identity, subject: str) -> bool:
    return any(subject_matches(p, subject) for p in permissions(identity, KEY).subscribe)


def test_every_event_type_has_exactly_its_writer_under_its_own_producer_token() -> None:
    writers = event_writers((identity, KEY) for identity in EVERYONE)
    assert writers.keys() == EVENT_TYPES.keys()
    for name, granted in writers.items():
        roles = {next(i.role for i in EVERYONE if i.user == user) for user, _ in granted}
        assert roles == {writer_of(name)}, f"{name}: granted to {sorted(granted)}"
        for user, token in granted:
            identity = next(i for i in EVERYONE if i.user == user)
            assert token == event_subject("x", None, "y", "T", identity.producer).split(".")[3], (
                f"{user} may publish {name} under another producer's token {token}"
            )


def test_a_node_agent_publishes_only_under_its_own_agent_token() -> None:
    agent_a, agent_b = SERVICES[-2], SERVICES[-1]
    mine = event_subject("pod", "default", "p", "PodRunning", agent_a.producer)
    theirs = event_subject("pod", "default", "p", "PodRunning", agent_b.producer)
    assert may_publish(agent_a, mine) and not may_publish(agent_a, theirs)
    assert may_publish(agent_a, heartbeat_subject("sim"))
    assert not may_publish(agent_a, heartbeat_subject("host.b"))


@pytest.mark.parametrize("identity", [*CLIENTS, Identity(PROVISIONER, PROVISIONER)], ids=lambda i: i.user)
def test_clients_publish_no_event_plan_heartbeat_quarantine_or_dead_letter(identity: Identity) -> None:
    forbidden = [
        event_subject("pod", "team-a", "p", "PodBound", BINDER),
        event_subject("job", "team-a", "j", "JobSubmitted", ADMISSION),
        plan_subject("scheduler-0"),
        heartbeat_subject("sim"),
        "lahar.quarantine.binder.7",
        "lahar.dead.LAHAR_INTAKE.admission",
    ]
    for subject in forbidden:
        assert not may_publish(identity, subject), subject
    assert not any(p.startswith("lahar.ev") for p in permissions(identity, KEY).publish)


@pytest.mark.parametrize("identity", SERVICES, ids=lambda i: i.user)
def test_a_service_records_its_own_quarantined_events_and_failing_reconciles_only(identity: Identity) -> None:
    own, other = identity.producer, "someone-else"
    assert may_publish(identity, quarantine_subject(own, 7))
    assert may_publish(identity, reconcile_failure_subject(own, "k3y"))
    assert not may_publish(identity, quarantine_subject(other, 7))
    assert not may_publish(identity, reconcile_failure_subject(other, "k3y"))


def test_the_scheduler_may_publish_its_plans_and_no_event_nor_another_replicas_plans() -> None:
    scheduler = SERVICES[6]
    assert may_publish(scheduler, plan_subject("scheduler-0"))
    assert not may_publish(scheduler, plan_subject("scheduler-1"))
    assert not may_publish(scheduler, event_subject("pod", "default", "p", "PodBound", BINDER))
    assert not may_publish(scheduler, event_subject("pod", "default", "p", "PodBound", "scheduler-0"))


def test_the_descheduler_may_publish_its_plans_and_no_event() -> None:
    """Its evictions are plans: the binder commits them (PodEvicting is the binder's)."""
    descheduler = next(i for i in SERVICES if i.role == DESCHEDULER)
    assert may_publish(descheduler, plan_subject(DESCHEDULER))
    assert not may_publish(descheduler, plan_subject("scheduler-0"))
    for event_type, writer in (
        ("PodEvicting", BINDER),
        ("PodEvicting", DESCHEDULER),
        ("PodCreated", DESCHEDULER),
    ):
        assert not may_publish(descheduler, event_subject("pod", "default", "p", event_type, writer))
    assert may_publish(descheduler, "$JS.API.STREAM.INFO.LAHAR_EVENTS")  # it follows the log


def test_only_the_provisioner_changes_streams_and_nobody_may_direct_get() -> None:
    for identity in EVERYONE:
        publish = permissions(identity, KEY).publish
        changes = [p for p in publish if ".STREAM.CREATE." in p or ".STREAM.UPDATE." in p]
        assert bool(changes) == (identity.role == PROVISIONER), identity.user
        for verb in ("DIRECT.GET", "STREAM.PURGE", "STREAM.MSG.DELETE", "STREAM.SNAPSHOT", "STREAM.RESTORE"):
            for api in ("$JS.API", CLIENT_JS_PREFIX):
                assert not may_publish(identity, f"{api}.{verb}.LAHAR_EVENTS"), (identity.user, verb)
                assert not may_publish(identity, f"{api}.{verb}.LAHAR_INTAKE"), (identity.user, verb)
        assert not may_publish(identity, "$JS.API.STREAM.DELETE.LAHAR_EVENTS"), identity.user
    assert not any("DIRECT" in call or "CREATE.LAHAR_INTAKE" in call for call in client_js_calls())


def test_a_work_queue_is_read_only_by_its_consumer() -> None:
    """Its messages come from others, and a consumer delivers where its creator says."""
    for identity in EVERYONE:
        api = CLIENT_JS_PREFIX if account_of(identity.role) == CLIENTS_ACCOUNT else "$JS.API"
        assert not may_publish(identity, f"{api}.CONSUMER.CREATE.LAHAR_INTAKE.x"), identity.user
        intake = may_publish(identity, "$JS.API.CONSUMER.CREATE.LAHAR_INTAKE.admission")
        plans = may_publish(identity, "$JS.API.CONSUMER.CREATE.LAHAR_PLANS.binder")
        assert intake == (identity.role == ADMISSION), identity.user
        assert plans == (identity.role == BINDER), identity.user
        assert not may_publish(identity, "$JS.API.CONSUMER.CREATE.LAHAR_INTAKE"), identity.user
        assert not may_publish(identity, "$JS.API.CONSUMER.CREATE.LAHAR_PLANS.other"), identity.user


def test_clients_send_api_requests_intake_and_log_requests() -> None:
    admin, tenant = CLIENTS
    for subject in ("lahar.api.apply", intake_subject("job", "team-b", "j"), logs_subject("team-b", "p")):
        assert may_publish(admin, subject), subject
    # a tenant publishes intake in its namespaces, under its own name only (admission reads it there)
    assert may_publish(tenant, tenant_intake_subject("job", "team-a", "j", "team-a"))
    assert not may_publish(tenant, intake_subject("job", "team-a", "j"))  # the operator's form
    assert not may_publish(tenant, tenant_intake_subject("job", "team-a", "j", "team-b"))
    assert not may_publish(tenant, tenant_intake_subject("job", "team-b", "j", "team-a"))
    assert may_publish(admin, tenant_intake_subject("job", "team-b", "j", "team-b"))
    # API requests (admission authorizes them by the caller's key) and the intake stream's info; no
    # reads of the log, no other stream, no dead letters
    assert may_publish(tenant, "lahar.api.apply") and may_publish(tenant, "lahar.api.tenant.apply")
    assert may_publish(tenant, f"{CLIENT_JS_PREFIX}.STREAM.INFO.LAHAR_INTAKE")
    for call in ("STREAM.INFO.LAHAR_EVENTS", "CONSUMER.CREATE.LAHAR_EVENTS", "STREAM.MSG.GET.LAHAR_EVENTS"):
        assert not may_publish(tenant, f"{CLIENT_JS_PREFIX}.{call}"), call
    assert not may_publish(tenant, f"{CLIENT_JS_PREFIX}.STREAM.INFO.LAHAR_DEADLETTER")
    assert may_publish(tenant, logs_subject("team-a", "p"))
    assert not may_publish(tenant, logs_subject("team-b", "p"))
    assert not may_subscribe(admin, "lahar.api.apply")  # nobody but admission hears the API


def test_every_user_subscribes_only_to_its_own_inbox_beside_what_it_serves() -> None:
    for identity in EVERYONE:
        subscribe = permissions(identity, "UOWN").subscribe
        own = inbox_prefix(account_of(identity.role), "UOWN")
        assert f"{own}.>" in subscribe
        other = inbox_prefix(account_of(identity.role), "UOTHER")
        assert not any(subject_matches(p, f"{other}.x") for p in subscribe), identity.user
    served = {i.user: permissions(i, KEY) for i in EVERYONE}
    assert served["admission"].allow_responses and served["node-agent"].allow_responses
    assert not served["binder"].allow_responses and not served[ADMIN].allow_responses


def test_identities_need_what_their_role_needs() -> None:
    with pytest.raises(ValueError, match="unknown role"):
        Identity("x", "root")
    with pytest.raises(ValueError, match="producer"):
        Identity("binder", BINDER)
    with pytest.raises(ValueError, match="namespace"):
        Identity("t", TENANT)


def test_subject_matching_follows_nats_wildcards() -> None:
    assert subject_matches("a.*.c", "a.b.c") and not subject_matches("a.*.c", "a.b.c.d")
    assert subject_matches("a.>", "a.b.c") and not subject_matches("a.>", "a")
    assert not subject_matches("a.b", "a.b.c")


def test_credentials_files_are_private_and_say_how_the_user_connects(tmp_path: Path) -> None:
    for identity, account, api in (
        (Identity(ADMIN, ADMIN), CLIENTS_ACCOUNT, CLIENT_JS_PREFIX),
        (SERVICES[0], SERVICES_ACCOUNT, None),
    ):
        user = new_user(identity)
        path = tmp_path / "creds" / f"{identity.user}.nk"
        old = os.umask(0)  # even a permissive umask must not make a seed readable by others
        try:
            write_private(path, user.file_text())
        finally:
            os.umask(old)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        creds = read_credentials(path)
        assert (creds.public_key, creds.account, creds.js_api_prefix) == (user.public_key, account, api)
        assert creds.connect_options() == {
            "nkeys_seed_str": user.seed,
            "inbox_prefix": inbox_prefix(account, user.public_key),
        }
    (tmp_path / "bad.nk").write_text("# account: CLIENTS\nnot a seed\n")
    with pytest.raises(CredentialsError, match="not an nkey user seed"):
        read_credentials(tmp_path / "bad.nk")
    (tmp_path / "two.nk").write_text(f"{user.seed}\n{user.seed}\n")
    with pytest.raises(CredentialsError, match="expected one"):
        read_credentials(tmp_path / "two.nk")


def test_a_client_may_call_only_what_its_account_imports() -> None:
    """Clients live in CLIENTS: a permission on a subject nothing imports would reach nothing (or, for
    the default JetStream API prefix, CLIENTS' own JetStream, which is off)."""
    imported = [*client_services(), *(f"{CLIENT_JS_PREFIX}.{call}" for call in client_js_calls())]
    for identity in CLIENTS:
        for pattern in permissions(identity, KEY).publish:
            concrete = pattern.replace("*", "x").replace(">", "x")
            assert any(subject_matches(i, concrete) for i in imported), (identity.user, pattern)


def test_the_accounts_block_lists_every_user_in_its_account_with_the_clients_imports() -> None:
    users = [new_user(identity) for identity in (SERVICES[0], CLIENTS[0])]
    block = server_accounts(users)
    assert block.startswith("accounts {")
    services, clients = block.split(f"  {CLIENTS_ACCOUNT} {{")
    assert f'"nkey": "{users[0].public_key}"' in services and "jetstream: enabled" in services
    assert f'"nkey": "{users[1].public_key}"' in clients and "jetstream" not in clients
    assert '"lahar.ev.job.admission.JobSubmitted.>"' in services and '"allow_responses": true' in services
    assert '"to": "lahar.js.STREAM.INFO.LAHAR_EVENTS"' in clients
    # the API's import is shared: the server tells admission who asked (Nats-Request-Info)
    assert '{"service": {"account": "LAHAR", "subject": "lahar.api.>"}, "share": true}' in clients
    assert '"subject": "lahar.intake.>"}}' in clients  # the intake is not (JetStream would not keep it)


def test_a_tenants_credentials_name_the_tenant_and_its_namespaces(tmp_path: Path) -> None:
    user = new_user(Identity("team-a", TENANT, namespaces=("team-a", "team-a-dev")))
    text = user.file_text()
    assert "# tenant: team-a\n" in text and "# namespaces: team-a,team-a-dev\n" in text
    write_private(tmp_path / "t.nk", text)
    creds = read_credentials(tmp_path / "t.nk")
    assert (creds.public_key, creds.account) == (user.public_key, CLIENTS_ACCOUNT)
