"""`lahar tenant add|list|remove`: the operator's tenants (docs/security.md, "Tenants").

`add NAME --namespaces NS[,NS...] [--queues Q[,Q...]] [-o FILE]` makes a new nkey for the tenant,
registers it with admission (which then authorizes the tenant's requests: its namespaces, its queues;
every queue without --queues), adds its public key to the local stack's nats-server configuration,
reloads the servers, and writes the tenant's credentials file (default <home>/creds/tenant-NAME.nk, mode
0600). It returns once the server accepts the new credentials. Adding a tenant that exists replaces it:
a new key (the old one stops working: that is how a tenant's key is rotated) and the namespaces and
queues given now.

`remove NAME` unregisters the tenant and removes its key from the server's configuration: its requests
are refused, and so are its new connections.

Both need the operator's credentials (the default) and a stack run by `lahar up` with identities.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import nats
import nats.errors
from nats.aio.client import Client as NatsClient

from services.cli import output
from services.cli.cluster_cmd import command, run
from services.cli.stack.etcd_users import PASSWORD_SUFFIX, add_tenant_etcd, remove_tenant_etcd
from services.cli.stack.layout import StackState, lahar_home, process_alive
from services.cli.stack.tenants import (
    TenantRecord,
    forget_tenant,
    reload_servers,
    save_tenant,
    tenant_creds_path,
    write_auth_conf,
)
from shared.bus.tls_handshake import ErrorCallback, first_connection
from shared.client import LaharClient, LaharError
from shared.client_reads import Answer
from shared.config import parse_endpoints
from shared.security.credentials import new_user, read_credentials, write_private
from shared.security.permissions import TENANT, Identity
from shared.security.tls import client_context

RELOAD_TIMEOUT_S = 10.0  # how long `add` waits for the servers to accept the new key
_RETRY_S = 0.1


def register(sub: argparse._SubParsersAction) -> None:
    tenant = sub.add_parser("tenant", help="the operator's tenants: add, list, remove")
    verbs = tenant.add_subparsers(dest="verb", required=True, metavar="VERB")

    add = command(verbs, "add", "add a tenant (or replace it, with a new key) and write its credentials")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--namespaces", required=True, metavar="NS[,NS...]", help="where it may write")
    add.add_argument(
        "--queues", metavar="Q[,Q...]", help="the queues it may submit to (default: every queue)"
    )
    add.add_argument("-o", "--output-file", metavar="FILE", help="default <home>/creds/tenant-NAME.nk")
    add.set_defaults(handler=run_add)

    list_p = command(verbs, "list", "list the tenants admission knows")
    list_p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    list_p.set_defaults(handler=run_list)

    remove = command(verbs, "remove", "remove a tenant: its key is refused from then on")
    remove.add_argument("name", metavar="NAME")
    remove.set_defaults(handler=run_remove)


def _names(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    return tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


async def registry_call(client: LaharClient, verb: str, body: dict[str, Any]) -> dict[str, Any]:
    """One tenant registry call to admission (services/admission/tenant_api.py), its raw answer."""
    headers = {"Lahar-Request-Id": str(uuid.uuid4())}
    try:
        reply = await client.bus.nc.request(
            f"lahar.api.tenant.{verb}",
            json.dumps(body).encode(),
            timeout=client.request_timeout_s,
            headers=headers,
        )
    except nats.errors.NoRespondersError as exc:
        raise LaharError("admission is not running (nobody answers lahar.api.*)") from exc
    except nats.errors.TimeoutError as exc:
        raise LaharError(f"admission did not answer within {client.request_timeout_s}s") from exc
    answer: dict[str, Any] = json.loads(reply.data)
    return answer


def _local_stack(args: argparse.Namespace) -> tuple[Path, StackState]:
    home = lahar_home(args.home)
    state = StackState.read(home)
    if state is None or not process_alive(state.supervisor_pid):
        raise LaharError(f"no running lahar stack in {home}: tenants are added to a stack `lahar up` runs")
    if not state.admin_creds:
        raise LaharError(
            "the stack runs without identities on the bus (lahar up --no-auth): no tenants there"
        )
    return home, state


def run_add(args: argparse.Namespace) -> int:
    namespaces = _names(args.namespaces) or ()
    queues = _names(args.queues)
    try:
        home, state = _local_stack(args)
    except LaharError as exc:
        print(f"lahar: {exc}", file=sys.stderr)
        return output.EXIT_REFUSED
    user = new_user(Identity(args.name, TENANT, namespaces=namespaces)) if namespaces else None
    if user is None:
        print("lahar: --namespaces: at least one namespace", file=sys.stderr)
        return output.EXIT_USAGE
    target = Path(args.output_file) if args.output_file else tenant_creds_path(home, args.name)
    body = {
        "name": args.name,
        "public_keys": [user.public_key],
        "namespaces": list(namespaces),
        "queues": queues,
    }

    async def add(client: LaharClient) -> int:
        answer = await registry_call(client, "apply", body)
        code = output.report([("tenant add", Answer.of(answer))], "quiet")
        if code != output.EXIT_OK:
            return code
        record = TenantRecord(args.name, (user.public_key,), namespaces, queues)
        save_tenant(home, record)
        write_auth_conf(home)
        write_private(target, user.file_text())
        if state.admin_etcd_password:
            # its etcd user, read-only on its namespaces' objects: `lahar get` with its credentials
            # finds the password beside them (shared/store/etcd_auth.py), naming the user
            endpoints, tls_ca = parse_endpoints(state.etcd_endpoint), state.tls_ca or None
            etcd_text = await add_tenant_etcd(home, record, endpoints, tls_ca)
            write_private(target.with_suffix(PASSWORD_SUFFIX), etcd_text)
        missed = reload_servers(state)
        if missed:
            print(
                f"lahar: could not signal {', '.join(missed)}; they load the key when restarted",
                file=sys.stderr,
            )
        if not await accepted(state.nats_url, target, state.tls_ca or None):
            print(
                f"lahar: the servers did not accept {target} within {RELOAD_TIMEOUT_S:.0f}s", file=sys.stderr
            )
            return output.EXIT_UNREACHABLE
        print(f"tenant/{args.name} {answer['objects'][0]['action']}; credentials in {target}")
        return output.EXIT_OK

    return run(args, add)


async def accepted(nats_url: str, creds: Path, tls_ca: str | None) -> bool:
    """Whether every server of the stack accepts the credentials, trying each until RELOAD_TIMEOUT_S (a
    reload takes a moment): a tenant connecting to any of them once `add` returns gets in. tls_ca: the
    stack's CA, when its servers take TLS only."""
    options: dict[str, Any] = dict(read_credentials(creds).connect_options())
    if tls_ca:
        options["tls"] = client_context(tls_ca)
    deadline = time.monotonic() + RELOAD_TIMEOUT_S

    async def quiet(_exc: Exception) -> None:  # a refusal before the reload is expected, not news
        return None

    def connector(url: str) -> Callable[[ErrorCallback], Awaitable[NatsClient]]:
        async def connect(error_cb: ErrorCallback) -> NatsClient:
            return await nats.connect(
                url, allow_reconnect=False, connect_timeout=2, error_cb=error_cb, **options
            )

        return connect

    for url in nats_url.split(","):
        while True:
            try:
                # guarded: nats-py would wait forever after a failed first TLS handshake (tls_handshake.py)
                nc = await first_connection(connector(url), quiet, tls=bool(tls_ca))
            except Exception:  # refused (not reloaded yet), or the server is busy: again, until the deadline
                if time.monotonic() > deadline:
                    return False
                await asyncio.sleep(_RETRY_S)
                continue
            await nc.close()
            break
    return True


def run_remove(args: argparse.Namespace) -> int:
    try:
        home, state = _local_stack(args)
    except LaharError as exc:
        print(f"lahar: {exc}", file=sys.stderr)
        return output.EXIT_REFUSED

    async def remove(client: LaharClient) -> int:
        answer = await registry_call(client, "delete", {"name": args.name})
        code = output.report([("tenant remove", Answer.of(answer))], "quiet")
        if code != output.EXIT_OK:
            return code
        forget_tenant(home, args.name)
        write_auth_conf(home)
        reload_servers(state)
        if state.admin_etcd_password:
            endpoints, tls_ca = parse_endpoints(state.etcd_endpoint), state.tls_ca or None
            await remove_tenant_etcd(home, args.name, endpoints, tls_ca)
        tenant_creds_path(home, args.name).unlink(missing_ok=True)
        tenant_creds_path(home, args.name).with_suffix(PASSWORD_SUFFIX).unlink(missing_ok=True)
        print(f"tenant/{args.name} deleted")
        return output.EXIT_OK

    return run(args, remove)


def run_list(args: argparse.Namespace) -> int:
    async def listing(client: LaharClient) -> int:
        answer = await registry_call(client, "list", {})
        if not answer.get("accepted"):
            return output.report([("tenant list", Answer.of(answer))], "quiet")
        tenants = answer.get("tenants", [])
        if args.output in ("json", "yaml"):
            output.dump(tenants, args.output)
            return output.EXIT_OK
        rows = [
            [
                t["name"],
                ",".join(t["namespaces"]),
                "*" if t["queues"] is None else ",".join(t["queues"]),
                len(t["public_keys"]),
            ]
            for t in tenants
        ]
        print(output.table(("NAME", "NAMESPACES", "QUEUES", "KEYS"), rows))
        return output.EXIT_OK

    return run(args, listing)
