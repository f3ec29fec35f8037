"""The options of `lahar up` that shape the stack's services, shared by the command (stack_cmd.py) and
the detached supervisor it starts (`python -m services.cli.stack`): one's own volcano-scheduler.conf for
every scheduler replica, the size and labels of this machine's process node, and hollow nodes described
by Node manifests."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

from contracts.names import parse_label_flag
from contracts.resources import parse_quantity
from services.cli.stack.identities import SIM_AGENT
from services.cli.stack.layout import ServiceSpec
from services.cli.stack.supervisor import service_specs
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
    return problems


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
    return [*(["--scheduler-conf", conf] if conf else []), *node_flags(args)]


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
    )
