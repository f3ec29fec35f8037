"""`lahar up`, `lahar down`, `lahar status`: the whole stack on this machine, on loopback."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time

from services.cli.stack.health import classify
from services.cli.stack.layout import (
    RUNNING,
    RunningServer,
    RunningService,
    StackState,
    lahar_home,
    process_alive,
)
from services.cli.stack.supervisor import Supervisor, service_health
from services.cli.stack.up_options import add_up_options, forwarded, stack_specs, up_problems
from shared.servers import http_ok

UP_TIMEOUT_S = 420.0  # healthy processes, then every node bindable (supervisor: up to 300 s)
DOWN_TIMEOUT_S = 60.0


def register(sub: argparse._SubParsersAction) -> None:
    up = sub.add_parser("up", help="start nats-server, etcd and every service locally")
    up.add_argument("-d", "--detach", action="store_true", help="run in the background")
    up.add_argument("--sim-nodes", type=int, default=0, help="N hollow nodes instead of this machine")
    up.add_argument("--replicas", type=int, default=1, help="scheduler replicas (default 1)")
    up.add_argument(
        "--standbys",
        action="store_true",
        help="a hot standby of the binder, job-controller and queue-controller (fast failover)",
    )
    up.add_argument(
        "--ha",
        action="store_true",
        help="3 clustered nats-servers (streams with 3 replicas) and 3 etcd members; implies --standbys",
    )
    up.add_argument(
        "--no-auth",
        action="store_true",
        help="run the bus and etcd without authentication and NATS and etcd without TLS, open to anyone who "
        "reaches them (debugging, measuring)",
    )
    up.add_argument(
        "--no-tls",
        action="store_true",
        help="NATS and etcd over plain TCP (authentication stays on; measuring what TLS costs)",
    )
    add_up_options(up)
    up.add_argument("--home", help="state directory (default $LAHAR_HOME or ~/.lahar)")
    up.set_defaults(handler=run_up)
    down = sub.add_parser("down", help="stop the local stack")
    down.add_argument("--home")
    down.set_defaults(handler=run_down)
    status = sub.add_parser("status", help="show the local stack and its health")
    status.add_argument("--home")
    status.add_argument("-o", "--output", choices=("table", "json"), default="table")
    status.set_defaults(handler=run_status)


def _running(home) -> StackState | None:
    state = StackState.read(home)
    return state if state is not None and process_alive(state.supervisor_pid) else None


def describe(state: StackState) -> str:
    scheme = "https" if state.tls_ca else "http"
    etcd = ",".join(f"{scheme}://{endpoint}" for endpoint in state.etcd_endpoint.split(","))
    lines = [f"nats      {state.nats_url}", f"etcd      {etcd}"]
    if state.admin_creds:
        lines.append(f"creds     {state.admin_creds} (admin; the CLI's default)")
    if state.admin_etcd_password:
        lines.append(f"etcd user admin, password {state.admin_etcd_password} (the CLI's default)")
    if state.tls_ca:
        lines.append(f"tls ca    {state.tls_ca} (the CLI's default)")
    for service in state.services:
        lines.append(
            f"{service.name:<20} pid {service.pid:<8} http://127.0.0.1:{service.metrics_port}/metrics"
        )
    lines.append(f"logs      {state.home}/logs/")
    return "\n".join(lines)


def run_up(args: argparse.Namespace) -> int:
    home = lahar_home(args.home)
    if _running(home) is not None:
        print(
            f"lahar up: a stack is already running from {home} (lahar status / lahar down)", file=sys.stderr
        )
        return 1
    problems = up_problems(args)
    if problems:
        for problem in problems:
            print(f"lahar up: {problem}", file=sys.stderr)
        return 1
    standbys = args.standbys or args.ha
    if not args.detach:
        specs = stack_specs(home, args, standbys=standbys)

        def ready(state: StackState) -> None:
            print(describe(state) + "\nready; Ctrl-C stops the stack", flush=True)

        tls = not (args.no_auth or args.no_tls)  # --no-auth: everything open, as before
        foreground = Supervisor(home, specs, on_ready=ready, ha=args.ha, secure=not args.no_auth, tls=tls)
        return asyncio.run(foreground.run())
    home.mkdir(parents=True, exist_ok=True)
    with (home / "supervisor.log").open("ab") as log:
        command = [sys.executable, "-m", "services.cli.stack", "--home", str(home)]
        command += ["--sim-nodes", str(args.sim_nodes), "--replicas", str(args.replicas)]
        command += ["--standbys"] if standbys else []
        command += ["--ha"] if args.ha else []
        command += ["--no-auth"] if args.no_auth else []
        command += ["--no-tls"] if args.no_tls else []
        command += forwarded(args)
        supervisor = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
    deadline = time.monotonic() + UP_TIMEOUT_S
    shown, waited = 0, ""
    while time.monotonic() < deadline:
        state = StackState.read(home)
        if state is not None and state.supervisor_pid == supervisor.pid:
            if state.error:
                print(f"lahar up: {state.error}", file=sys.stderr)
                return 1
            if state.ready:
                print(describe(state))
                return 0
            if len(state.services) > shown:
                shown = len(state.services)
                print(f"starting {state.services[-1].name} ...", file=sys.stderr, flush=True)
            if state.waiting and state.waiting != waited:
                waited = state.waiting
                print(f"waiting for {waited} ...", file=sys.stderr, flush=True)
        if supervisor.poll() is not None:
            print(
                f"lahar up: the supervisor exited ({supervisor.returncode}); see {home}/supervisor.log",
                file=sys.stderr,
            )
            return 1
        time.sleep(0.2)
    print(f"lahar up: not ready within {UP_TIMEOUT_S:.0f}s; see {home}/logs/", file=sys.stderr)
    return 1


def run_down(args: argparse.Namespace) -> int:
    home = lahar_home(args.home)
    state = StackState.read(home)
    if state is None or not process_alive(state.supervisor_pid):
        print("no stack is running")
        return 0
    os.kill(state.supervisor_pid, signal.SIGTERM)
    deadline = time.monotonic() + DOWN_TIMEOUT_S
    while process_alive(state.supervisor_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if process_alive(state.supervisor_pid):
        # the supervisor is stuck: stop what it started ourselves, by the PIDs it recorded
        for pid in [s.pid for s in state.services] + [*state.server_pids, state.supervisor_pid]:
            if pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL) if pid != state.supervisor_pid else os.kill(
                        pid, signal.SIGKILL
                    )
        print("stack stopped (forced)")
        return 1
    print("stack stopped")
    return 0


def process_rows(state: StackState) -> list[dict[str, object]]:
    """Every process of the stack as `lahar status` shows it: its state from the supervisor's record
    and a health probe (health.py), never from its PID alone; a service's role (leader, standby, or
    active where nothing is elected) as its /healthz reports it."""
    rows: list[dict[str, object]] = []
    for server in state.servers:
        healthy = http_ok(server.health_url)
        rows.append(_row(server, server.url, healthy, role=""))
    for service in state.services:
        health = service_health(service.metrics_port)
        healthy = health is not None and bool(health.get("ok"))
        role = str(health.get("role", "")) if health is not None else ""
        rows.append(_row(service, f"http://127.0.0.1:{service.metrics_port}", healthy, role))
    return rows


def _row(
    process: RunningServer | RunningService, endpoint: str, healthy: bool, role: str
) -> dict[str, object]:
    return {
        "name": process.name,
        "pid": process.pid,
        "state": classify(process.phase, process_alive(process.pid), healthy),
        "role": role,
        "restarts": process.restarts,
        "endpoint": endpoint,
    }


def run_status(args: argparse.Namespace) -> int:
    state = _running(lahar_home(args.home))
    if state is None:
        print("no stack is running")
        return 1
    rows = process_rows(state)
    if args.output == "json":
        document = {
            "ready": state.ready,
            "home": state.home,
            "nats_url": state.nats_url,
            "etcd_endpoint": state.etcd_endpoint,
            "admin_creds": state.admin_creds,
            "admin_etcd_password": state.admin_etcd_password,
            "tls_ca": state.tls_ca,
            "processes": rows,
        }
        print(json.dumps(document, indent=2))
    else:
        print(f"{'NAME':<20} {'PID':<8} {'STATE':<11} {'ROLE':<8} {'RESTARTS':<9} ENDPOINT")
        for row in rows:
            name, pid, label, role, restarts = (
                row["name"],
                row["pid"],
                row["state"],
                row["role"],
                row["restarts"],
            )
            print(f"{name:<20} {pid:<8} {label:<11} {role:<8} {restarts:<9} {row['endpoint']}")
    return 0 if state.ready and all(row["state"] == RUNNING for row in rows) else 1
