"""What `lahar up` writes for the bus's identities (services/cli/stack/identities.py): a private
credentials file per user, fresh keys at every start, and the server configuration listing them."""

from __future__ import annotations

import stat
from pathlib import Path

from services.cli.stack.identities import issue_credentials
from services.cli.stack.supervisor import service_specs
from services.cli.stack.tenants import (
    TenantRecord,
    forget_tenant,
    save_tenant,
    tenant_creds_path,
    write_auth_conf,
)
from shared.security.credentials import new_user, read_credentials
from shared.security.permissions import CLIENTS_ACCOUNT, SERVICES_ACCOUNT, TENANT, Identity
from shared.security.secret_keys import issue_secrets_keys


def test_every_process_and_the_operator_get_a_private_file_and_a_place_in_the_config(tmp_path: Path) -> None:
    specs = service_specs(tmp_path, 4, "host-a", 2, standbys=True)
    issued = issue_credentials(tmp_path, specs)
    expected = {spec.name for spec in specs} | {"admin", "provisioner"}
    assert set(issued.files) == expected
    assert stat.S_IMODE((tmp_path / "creds").stat().st_mode) == 0o700
    conf = issued.conf.read_text()
    for user, path in issued.files.items():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, user
        creds = read_credentials(path)
        assert creds.account == (CLIENTS_ACCOUNT if user == "admin" else SERVICES_ACCOUNT), user
        assert f'"nkey": "{creds.public_key}"' in conf, user
        assert creds.seed not in conf  # the server gets public keys only
    assert issued.server_args == ("--config", str(issued.server_conf))
    # the server's name and the accounts: what a reload (lahar tenant add) reads from the file
    assert issued.server_conf.read_text() == 'server_name: $LAHAR_NATS_SERVER_NAME\ninclude "auth.conf"\n'


def test_tenants_added_on_a_home_stay_in_the_next_starts_configuration(tmp_path: Path) -> None:
    specs = service_specs(tmp_path, 4, "host-a", 1)
    issue_credentials(tmp_path, specs)
    tenant = new_user(Identity("team-a", TENANT, namespaces=("team-a",)))
    save_tenant(tmp_path, TenantRecord("team-a", (tenant.public_key,), ("team-a",), None))
    creds = tenant_creds_path(tmp_path, "team-a")
    creds.write_text(tenant.file_text())
    write_auth_conf(tmp_path)  # what `lahar tenant add` does while the stack runs
    assert f'"nkey": "{tenant.public_key}"' in (tmp_path / "nats" / "auth.conf").read_text()
    again = issue_credentials(tmp_path, specs, ha=True)  # the next `lahar up`
    conf = again.conf.read_text()
    assert f'"nkey": "{tenant.public_key}"' in conf and '"lahar.intake.*.team-a.*.team-a"' in conf
    assert creds.exists()  # its credentials are the tenant's, not a stale stack user's
    assert "cluster { name: lahar }" in again.server_conf.read_text()
    forget_tenant(tmp_path, "team-a")
    assert tenant.public_key not in write_auth_conf(tmp_path).read_text()


def test_every_start_makes_fresh_keys_and_forgets_an_earlier_runs_users(tmp_path: Path) -> None:
    first = issue_credentials(tmp_path, service_specs(tmp_path, 4, "host-a", 3))
    before = read_credentials(first.admin).public_key
    second = issue_credentials(tmp_path, service_specs(tmp_path, 4, "host-a", 1))
    assert read_credentials(second.admin).public_key != before
    assert not (tmp_path / "creds" / "scheduler-2.nk").exists()
    assert before not in second.conf.read_text()


def test_the_node_agent_writes_under_its_agent_id(tmp_path: Path) -> None:
    sim = next(s for s in service_specs(tmp_path, 4, "host-a", 1) if s.name == "node-agent")
    real = next(s for s in service_specs(tmp_path, 0, "host-a", 1) if s.name == "node-agent")
    assert sim.identity is not None and sim.identity.producer == "node-agent.sim"
    assert real.identity is not None and real.identity.producer == "node-agent.host-a"
    assert sim.args[sim.args.index("--agent-id") + 1] == "sim"
    assert real.args[real.args.index("--agent-id") + 1] == "host-a"


def test_only_admission_gets_the_secrets_public_key_and_only_node_agents_the_private_one(
    tmp_path: Path,
) -> None:
    specs = service_specs(tmp_path, 0, "host-a", 2, standbys=True)
    keys = issue_secrets_keys(tmp_path / "creds")
    given = {spec.name: spec.secrets_args(keys) for spec in specs}
    assert given.pop("admission") == ("--secrets-public-key", str(keys.public))
    assert given.pop("node-agent") == ("--secrets-key", str(keys.private))
    assert all(args == () for args in given.values()), given  # nobody else may open or seal secrets
    # an open stack (`lahar up --no-auth`) has no key: admission writes secrets unsealed, as before
    assert all(spec.secrets_args(None) == () for spec in specs)
