"""`lahar deploy keys`: the credentials of a compose deployment (services/cli/deploy/keys.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from services.cli import output
from services.cli.deploy.identities import TopologyError, compose_identities, server_hosts
from services.cli.deploy.keys import KeysExistError, write_deployment_keys

DEFAULT_COMPOSE = Path("deploy") / "compose" / "docker-compose.yaml"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    deploy = sub.add_parser("deploy", help="what a multi-host deployment needs (deploy/compose/)")
    actions = deploy.add_subparsers(dest="deploy_command", required=True, metavar="ACTION")
    keys = actions.add_parser(
        "keys",
        help="make every credential of a compose deployment: bus users, the servers' configuration, TLS",
    )
    keys.add_argument("--out", required=True, help="the directory the compose file mounts (created 0700)")
    keys.add_argument(
        "--compose", default=str(DEFAULT_COMPOSE), help="the compose file whose services get users"
    )
    keys.add_argument("--replace", action="store_true", help="replace the keys already in --out")
    keys.set_defaults(handler=run_keys)


def run_keys(args: argparse.Namespace) -> int:
    try:
        compose = yaml.safe_load(Path(args.compose).read_text())
        identities = compose_identities(compose)
        made = write_deployment_keys(Path(args.out), identities, server_hosts(compose), replace=args.replace)
    except (OSError, yaml.YAMLError, TopologyError, KeysExistError) as exc:
        print(f"lahar deploy keys: {exc}", file=sys.stderr)
        return output.EXIT_REFUSED
    print(f"wrote the keys of {len(made.users)} users to {made.out}: {', '.join(made.users)}")
    return output.EXIT_OK
