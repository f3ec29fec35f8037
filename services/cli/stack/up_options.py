"""The options of `lahar up` that shape the stack's services, shared by the command (stack_cmd.py) and
the detached supervisor it starts (`python -m services.cli.stack`): one's own volcano-scheduler.conf for
every scheduler replica, the size and labels of this machine's process node, hollow nodes described
by Node manifests, and the descheduler with its policy."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

from contracts.errors import ManifestError
from contracts.names import parse_label_flag
from contracts.parse_fields import duration_seconds
from contracts.resources import parse_quantity
from services.cli.stack.identities import SIM_AGENT
from services.cli.stack.layout import ServiceSpec
from services.cli.stack.supervisor import service_specs
from services.descheduler.core.policy_parse import parse_policy
from services.node_agent.config import nodes_file_problems
from services.scheduler.core.conf import ConfError, parse_conf

NODE_SIZE_FLAGS = ("node_cpu", "node_memory", "node_pods")


def add_up_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scheduler-conf",
        metavar="FILE",
        default="",
        help="a volcano-scheduler.conf every scheduler replica runs (default: Volcano's default actions "
        "and plugins)",
    )
    parser.add_argument("--node-cpu", default="", help="this machine's node: its cpu (default: every core)")
    parser.add_argument("--node-memory", default="", help="its memory (default: MemTotal), e.g. 16Gi")
    parser.add_argument("--node-pods", default="", help="its pod capacity (default 110)")
    parser.add_argument(
        "--node-labels",
        default="",
        metavar="KEY=VALUE,...",
        help="labels for this machine's node, or for the --sim-nodes ones (besides kubernetes.io/hostname, "
        "os and arch)",
    )
    parser.add_argument(
        "--sim-nodes-file",
        default="",
        metavar="FILE",
        help="Node manifests, each hosted as a hollow node with its labels, taints and allocatable "
        "(e.g. GPUs); with --sim-nodes N, beside N uniform ones",
    )
    parser.add_argument(
        "--descheduler-policy",
        metavar="FILE",
        default="",
        help="run the descheduler with this descheduler/v1alpha2 DeschedulerPolicy (Volcano's; default: "
        "no descheduler)",
    )
    parser.add_argument(
        "--descheduling-interval",
        default="",
        metavar="DURATION",
        help="how often the descheduler runs, a Go duration such as 60s (default 10m)",
    )
    parser.add_argument(
        "--descheduler-dry-run",
        action="store_true",
        help="the descheduler only logs what it would evict, and why",
    )


def up_problems(args: argparse.Namespace) -> list[str]:
    """Every problem with the options, each naming its flag: checked before anything starts."""
    problems = []
    if args.scheduler_conf:
        path = Path(args.scheduler_conf)
        try:
            parse_conf(path.read_text(), str(path))
        except OSError as exc:
            problems.append(f"--scheduler-conf: cannot read {path}: {exc.strerror or exc}")
        except ConfError as exc:
            problems.append(f"--scheduler-conf: {exc}")
    for name in ("node_cpu", "node_memory"):
        value = getattr(args, name)
        if value:
            try:
                parse_quantity(value)
            except ValueError as exc:
                problems.append(f"--{name.replace('_', '-')}: {exc}")
    if args.node_pods and (not args.node_pods.isdigit() or int(args.node_pods) < 1):
        problems.append(f"--node-pods: expected an integer >= 1, got {args.node_pods!r}")
    problems += [f"--node-labels: {problem}" for problem in parse_label_flag(args.node_labels)[1]]
    # the uniform hollow nodes' names, as the stack's sim agent (prefix "sim") will give them
    uniform = [f"{SIM_AGENT}-{i}" for i in range(getattr(args, "sim_nodes", 0))]
    problems += [f"--sim-nodes-file: {p}" for p in nodes_file_problems(args.sim_nodes_file, uniform)]
    return problems + descheduler_problems(args)


def descheduler_problems(args: argparse.Namespace) -> list[str]:
    problems = []
    policy = getattr(args, "descheduler_policy", "")
    if policy:
        path = Path(policy)
        try:
            parse_policy(path.read_text(), str(path))
        except OSError as exc:
            problems.append(f"--descheduler-policy: cannot read {path}: {exc.strerror or exc}")
        except ManifestError as exc:
            problems += [f"--descheduler-policy: {error}" for error in exc.errors]
    elif getattr(args, "descheduling_interval", "") or getattr(args, "descheduler_dry_run", False):
        problems.append("--descheduling-interval and --descheduler-dry-run need --descheduler-policy")
    interval = getattr(args, "descheduling_interval", "")
    if interval:
        try:
            if duration_seconds(interval) <= 0:
                problems.append(f"--descheduling-interval: expected a positive duration, got {interval!r}")
        except ValueError as exc:
            problems.append(f"--descheduling-interval: {exc}")
    return problems


def descheduler_args(args: argparse.Namespace) -> tuple[str, ...]:
    """The descheduler's command line (empty: no descheduler): its policy, absolute, and its flags."""
    policy = getattr(args, "descheduler_policy", "")
    if not policy:
        return ()
    flags = ["--policy-config-file", str(Path(policy).resolve())]
    if getattr(args, "descheduling_interval", ""):
        flags += ["--descheduling-interval", args.descheduling_interval]
    if getattr(args, "descheduler_dry_run", False):
        flags.append("--dry-run")
    return tuple(flags)


def scheduler_conf(args: argparse.Namespace) -> str:
    """The conf file as every replica will be told it (absolute: they run in other directories)."""
    return str(Path(args.scheduler_conf).resolve()) if args.scheduler_conf else ""


def sim_nodes_file(args: argparse.Namespace) -> str:
    """The nodes file as the node agent will be told it (absolute, as the conf)."""
    return str(Path(args.sim_nodes_file).resolve()) if args.sim_nodes_file else ""


def node_flags(args: argparse.Namespace) -> tuple[str, ...]:
    """The flags of `lahar up` that shape the nodes, as the node agent (and the supervisor) take them."""
    flags: list[str] = []
    for name in NODE_SIZE_FLAGS:
        value = getattr(args, name)
        if value:
            flags += [f"--{name.replace('_', '-')}", str(value)]
    if args.node_labels:
        flags += ["--node-labels", args.node_labels]
    if args.sim_nodes_file:
        flags += ["--sim-nodes-file", sim_nodes_file(args)]
    return tuple(flags)


def forwarded(args: argparse.Namespace) -> list[str]:
    """The same options for the detached supervisor's command line."""
    conf = scheduler_conf(args)
    desched = descheduler_args(args)
    forwarded_desched = []
    if desched:
        forwarded_desched = ["--descheduler-policy", desched[1]]
        if getattr(args, "descheduling_interval", ""):
            forwarded_desched += ["--descheduling-interval", args.descheduling_interval]
        if getattr(args, "descheduler_dry_run", False):
            forwarded_desched.append("--descheduler-dry-run")
    return [*(["--scheduler-conf", conf] if conf else []), *node_flags(args), *forwarded_desched]


def stack_specs(home: Path, args: argparse.Namespace, *, standbys: bool) -> list[ServiceSpec]:
    """The stack's services as `lahar up`'s options describe them (sim nodes, replicas, conf, node size)."""
    return service_specs(
        home,
        args.sim_nodes,
        socket.gethostname(),
        args.replicas,
        standbys=standbys,
        scheduler_conf=scheduler_conf(args),
        node_flags=node_flags(args),
        hollow=bool(args.sim_nodes or args.sim_nodes_file),
        descheduler_args=descheduler_args(args),
    )
