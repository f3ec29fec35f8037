"""The commands that talk to a running cluster: `lahar apply`, `get`, `delete`, `wait`, `events`, `logs`.

They find the cluster from `stack.json` in the lahar home (`lahar up`), unless --nats-url and
--etcd-endpoint (or $LAHAR_NATS_URL and $LAHAR_ETCD_ENDPOINT) name one, and connect to NATS with --creds
(or $LAHAR_CREDS), by default the local stack's operator credentials (<home>/creds/admin.nk, written by
`lahar up` and named in stack.json), authenticating with etcd as --etcd-user (default admin) with
--etcd-password-file (or $LAHAR_ETCD_USER, $LAHAR_ETCD_PASSWORD_FILE), by default the local stack's
(<home>/creds/admin.etcd), verifying NATS's and etcd's certificates with --tls-ca (or
$LAHAR_TLS_CA), by default the local stack's CA (<home>/tls/ca.pem). Writes go to admission, reads
come from the read model, `events` from the event log and `logs` from the pod's node agent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from contracts.codec import DecodeError
from contracts.label_selector import matches
from contracts.objects import Job, Pod
from contracts.parse import duration_seconds
from services.admission.validate_cmd import add_validate_flag
from services.cli import output, selection
from services.cli.apply_lists import unpack_lists
from services.cli.cli_tracing import traced_command
from services.cli.stack.layout import StackState, lahar_home, process_alive
from shared.client import LaharClient, LaharError, Unreachable
from shared.client_reads import NAMESPACED, UnknownKind, resolve_kind

Body = Callable[[LaharClient], Awaitable[int]]


def add_connection(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("cluster")
    group.add_argument(
        "--nats-url", default=os.environ.get("LAHAR_NATS_URL"), help="default: from stack.json"
    )
    group.add_argument(
        "--etcd-endpoint",
        default=os.environ.get("LAHAR_ETCD_ENDPOINT"),
        help="host:port; default: from stack.json",
    )
    group.add_argument(
        "--creds",
        default=os.environ.get("LAHAR_CREDS"),
        metavar="FILE",
        help="NATS credentials file (default $LAHAR_CREDS, else the local stack's admin credentials)",
    )
    group.add_argument(
        "--tls-ca",
        default=os.environ.get("LAHAR_TLS_CA"),
        metavar="FILE",
        help="CA file NATS's and etcd's certificates chain to (default $LAHAR_TLS_CA, else the local "
        "stack's, when it runs with TLS)",
    )
    group.add_argument(
        "--etcd-user", default=os.environ.get("LAHAR_ETCD_USER"), help="etcd user (default admin)"
    )
    group.add_argument(
        "--etcd-password-file",
        default=os.environ.get("LAHAR_ETCD_PASSWORD_FILE"),
        metavar="FILE",
        help="the etcd user's password file (default $LAHAR_ETCD_PASSWORD_FILE, else the local stack's "
        "admin password, when etcd runs with authentication)",
    )
    group.add_argument("--home", help="the stack's state directory (default $LAHAR_HOME or ~/.lahar)")


def command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str
) -> argparse.ArgumentParser:
    """A cluster subcommand: connection flags, and the exit codes in its help."""
    parser = sub.add_parser(name, help=help_text, description=help_text, epilog=output.EXIT_CODES_HELP)
    add_connection(parser)
    return parser


def endpoints(args: argparse.Namespace) -> tuple[str, str]:
    if args.nats_url and args.etcd_endpoint:
        return args.nats_url, args.etcd_endpoint
    home = lahar_home(args.home)
    state = StackState.read(home)
    if state is None or not process_alive(state.supervisor_pid) or not state.ready:
        raise Unreachable(
            f"no running lahar stack in {home} "
            "(start one with `lahar up -d`, or pass --nats-url and --etcd-endpoint)"
        )
    return args.nats_url or state.nats_url, args.etcd_endpoint or state.etcd_endpoint


def credentials(args: argparse.Namespace) -> str | None:
    """--creds or $LAHAR_CREDS, else the admin credentials of the stack running from the home (none when
    it runs without authentication, or no stack runs there)."""
    return str(args.creds) if args.creds else _from_stack(args, "admin_creds")


def etcd_password_file(args: argparse.Namespace) -> str | None:
    """--etcd-password-file or $LAHAR_ETCD_PASSWORD_FILE, else the admin's etcd password of the stack
    running from the home (none when its etcd runs without authentication, or no stack runs there). With
    --creds naming someone else's credentials, none: the client takes the password file beside them (a
    tenant's, shared/store/etcd_auth.py), never the operator's."""
    if args.etcd_password_file:
        return str(args.etcd_password_file)
    return None if args.creds else _from_stack(args, "admin_etcd_password")


def tls_ca(args: argparse.Namespace) -> str | None:
    """--tls-ca or $LAHAR_TLS_CA, else the CA of the stack running from the home (none when it runs
    without TLS, or no stack runs there)."""
    return str(args.tls_ca) if args.tls_ca else _from_stack(args, "tls_ca")


def _from_stack(args: argparse.Namespace, field: str) -> str | None:
    """A file the stack running from the home records (its admin credentials, etcd password, CA); None
    when no stack runs there or it runs without that part of security."""
    state = StackState.read(lahar_home(args.home))
    value = getattr(state, field) if state is not None else ""
    return str(value) if value else None


def run(args: argparse.Namespace, body: Body) -> int:
    """Connect, run body, close; errors become a message on stderr and an exit status."""

    async def main() -> int:
        nats_url, etcd_endpoint = endpoints(args)
        async with await LaharClient.connect(
            nats_url,
            etcd_endpoint,
            creds=credentials(args),
            tls_ca=tls_ca(args),
            etcd_user=args.etcd_user,
            etcd_password_file=etcd_password_file(args),
        ) as client:
            return await body(client)

    try:
        with traced_command(getattr(args, "command", None) or "command") as span:
            code = asyncio.run(main())
            span.set_attribute("lahar.exit_code", code)
            return code
    except Unreachable as exc:
        print(f"lahar: {exc}", file=sys.stderr)
        return output.EXIT_UNREACHABLE
    except UnknownKind as exc:
        print(f"lahar: {exc}", file=sys.stderr)
        return output.EXIT_USAGE
    except (LaharError, OSError) as exc:
        print(f"lahar: {exc}", file=sys.stderr)
        return output.EXIT_REFUSED
    except DecodeError as exc:  # a read-model value this version cannot read
        print(f"lahar: cannot read a stored object: {exc}", file=sys.stderr)
        return output.EXIT_REFUSED
    except KeyboardInterrupt:  # ends -w and -f
        return output.EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    apply = command(
        sub, "apply", "create or update the objects of manifest files (through admission); a List's items too"
    )
    apply.add_argument("-f", "--filename", action="append", required=True, metavar="FILE", help="- for stdin")
    apply.add_argument("--dry-run", action="store_true", help="validate and default, write nothing")
    apply.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    add_validate_flag(apply)
    apply.set_defaults(handler=run_apply)

    get = command(sub, "get", "show objects from the read model (jobs, podgroups, pods, queues, nodes, ...)")
    get.add_argument("kind", metavar="KIND")
    get.add_argument("name", nargs="?", metavar="NAME")
    scope = get.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", default="default")
    scope.add_argument("-A", "--all-namespaces", action="store_true")
    get.add_argument("-o", "--output", choices=output.FORMATS, default="table")
    get.add_argument("-w", "--watch", action="store_true", help="after the listing, print every change")
    selection.add_selector(get)
    get.set_defaults(handler=run_get)

    delete = command(sub, "delete", "delete an object (through admission)")
    delete.add_argument("kind", metavar="KIND")
    delete.add_argument("name", metavar="NAME")
    delete.add_argument("-n", "--namespace", default="default")
    delete.add_argument("--dry-run", action="store_true")
    delete.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    delete.set_defaults(handler=run_delete)

    wait = command(sub, "wait", "wait for a job or pod to reach a phase (progress on stderr)")
    wait.add_argument("kind", choices=(*WAIT_KINDS,), metavar="job|pod")
    wait.add_argument("name", metavar="NAME")
    wait.add_argument("-n", "--namespace", default="default")
    wait.add_argument(
        "--for",
        dest="phase",
        default=WAIT_DEFAULT,
        help="the phase, or Deleted (default: Completed for a job, Succeeded for a pod)",
    )
    wait.add_argument("--timeout", default="60s", help="a duration such as 90s or 5m (default 60s)")
    wait.add_argument("-o", "--output", choices=("text", "json"), default="text")
    wait.set_defaults(handler=run_wait)

    events = command(
        sub, "events", "a job's history from the event log: time, event, object, producer, cause"
    )
    events.add_argument("job", metavar="JOB")
    events.add_argument("-n", "--namespace", default="default")
    events.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    events.set_defaults(handler=run_events)

    logs = command(sub, "logs", "print a pod's output (from its node agent)")
    logs.add_argument("pod", metavar="POD")
    logs.add_argument("-n", "--namespace", default="default")
    logs.add_argument("-c", "--container")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing until the pod is done")
    logs.set_defaults(handler=run_logs)


def run_apply(args: argparse.Namespace) -> int:
    try:
        texts = [
            (name, sys.stdin.read() if name == "-" else Path(name).read_text()) for name in args.filename
        ]
    except (OSError, UnicodeDecodeError) as exc:
        print(f"lahar apply: cannot read the file: {exc}", file=sys.stderr)
        return output.EXIT_REFUSED

    async def body(client: LaharClient) -> int:
        answers = []
        for name, text in texts:
            source = "stdin" if name == "-" else name
            text = unpack_lists(text)
            answer = await client.apply(text, dry_run=args.dry_run, source=source, validate=args.validate)
            answers.append((source, answer))
        return output.report(answers, args.output)

    return run(args, body)


def run_delete(args: argparse.Namespace) -> int:
    async def body(client: LaharClient) -> int:
        answer = await client.delete(args.kind, args.name, args.namespace, dry_run=args.dry_run)
        return output.report([("delete", answer)], args.output)

    return run(args, body)


def run_get(args: argparse.Namespace) -> int:
    try:
        kind = resolve_kind(args.kind)
    except UnknownKind as exc:
        print(f"lahar get: {exc}", file=sys.stderr)
        return output.EXIT_USAGE
    requirements = selection.read_selector(args, "lahar get")
    if requirements is None:
        return output.EXIT_USAGE
    if args.name and requirements:
        print("lahar get: give a NAME or a selector (-l), not both", file=sys.stderr)
        return output.EXIT_USAGE
    namespace = None if args.all_namespaces else args.namespace
    show_namespace = args.all_namespaces and kind in NAMESPACED

    async def body(client: LaharClient) -> int:
        changes = None
        if args.name and not args.watch:
            found = await client.get(kind, args.name, namespace or "default")
            objects = [found] if found is not None else []
        elif args.watch:
            objects, changes = await client.watch(kind, namespace)
        else:
            objects = await client.list(kind, namespace)
        if args.name:
            objects = [o for o in objects if o.meta.name == args.name]
            if not objects and not args.watch:
                print(f'Error: {kind} "{args.name}" not found', file=sys.stderr)
                return output.EXIT_REFUSED
        objects = selection.selected(objects, requirements)
        cols = output.headers(kind, wide=args.output == "wide", namespaced=show_namespace)
        if changes is not None:
            await output.follow(
                objects,
                changes,
                cols,
                args.output,
                only=args.name,
                keep=lambda obj: matches(requirements, obj.meta.labels),
            )
        elif args.output in ("json", "yaml"):
            output.dump(output.document(objects[0]) if args.name else output.listing(objects), args.output)
        elif objects:
            now = time.time()
            print(output.table(cols, ([output.row(o, now)[c] for c in cols] for o in objects)))
        else:
            where = "" if namespace is None or kind not in NAMESPACED else f" in {namespace} namespace"
            print(f"No resources found{where}.", file=sys.stderr)
        return output.EXIT_OK

    return run(args, body)


WAIT_DEFAULT = "default"
# `lahar wait KIND`: the kinds it waits for, by the names it accepts
WAIT_KINDS = {"job": "job", "jobs": "job", "vcjob": "job", "pod": "pod", "pods": "pod", "po": "pod"}


def _progress(obj: Job | Pod) -> None:
    if isinstance(obj, Pod):
        where = f" on {obj.spec.node_name}" if obj.spec.node_name else ""
        print(f"pod {obj.meta.key}: {obj.status.phase}{where}", file=sys.stderr, flush=True)
        return
    s = obj.status
    counts = f"pending {s.pending}, running {s.running}, succeeded {s.succeeded}, failed {s.failed}"
    print(f"job {obj.meta.key}: {s.state.phase} ({counts})", file=sys.stderr, flush=True)


def seconds(text: str) -> float:
    """A duration such as 90s, 5m or 1h30m; a bare number is seconds."""
    try:
        return float(text)
    except ValueError:
        return duration_seconds(text)


def run_wait(args: argparse.Namespace) -> int:
    try:
        timeout_s = seconds(args.timeout)
    except ValueError as exc:
        print(f"lahar wait: --timeout: {exc}", file=sys.stderr)
        return output.EXIT_USAGE
    phase = args.phase.removeprefix("phase=").removeprefix("jsonpath={.status.state.phase}=")
    phase = phase.removeprefix("jsonpath={.status.phase}=")
    kind = WAIT_KINDS[args.kind]
    what = f"{kind} {args.namespace}/{args.name}"
    if args.phase == WAIT_DEFAULT:
        phase = "Completed" if kind == "job" else "Succeeded"

    async def body(client: LaharClient) -> int:
        print(f"waiting up to {args.timeout} for {what} to be {phase}", file=sys.stderr)
        result = await client.wait_for(
            kind, args.name, args.namespace, phase=phase, timeout_s=timeout_s, on_change=_progress
        )
        if args.output == "json":
            print(
                json.dumps({"reached": result.reached, "phase": result.phase, "timed_out": result.timed_out})
            )
        if result.timed_out:
            seen = f"it is {result.phase}" if result.phase else "it was never seen"
            print(f"timed out after {args.timeout} waiting for {phase}: {seen}", file=sys.stderr)
            return output.EXIT_TIMEOUT
        if not result.reached:
            print(f"{what} ended {result.phase}, not {phase}", file=sys.stderr)
            return output.EXIT_REFUSED
        if args.output != "json":
            print(f"{what} {phase}")
        return output.EXIT_OK

    return run(args, body)


def run_events(args: argparse.Namespace) -> int:
    async def body(client: LaharClient) -> int:
        history = await client.events(args.job, args.namespace)
        if args.output in ("json", "yaml"):
            output.dump([entry.to_dict() for entry in history], args.output)
        else:
            cols = ("TIME", "EVENT", "OBJECT", "PRODUCER", "CAUSE", "DETAIL")
            rows = [
                (
                    output.utc(e.time, with_ms=True),
                    e.type,
                    e.object,
                    e.producer,
                    e.cause,
                    output.summary(e.payload),
                )
                for e in history
            ]
            print(output.table(cols, rows))
        if not history:
            print(f"no events about job {args.namespace}/{args.job}", file=sys.stderr)
            return output.EXIT_REFUSED
        return output.EXIT_OK

    return run(args, body)


def run_logs(args: argparse.Namespace) -> int:
    async def body(client: LaharClient) -> int:
        async for chunk in client.logs(
            args.pod, args.namespace, container=args.container, follow=args.follow
        ):
            sys.stdout.write(chunk)
            sys.stdout.flush()
        return output.EXIT_OK

    return run(args, body)
