"""The users of a compose deployment, read from its compose file: one bus user per lahar service
definition (every replica of a `deploy: replicas: N` service shares it, as they share the container's
configuration), plus the operator's `admin` and the `provisioner` that creates the streams.

A service's role comes from the module its command runs; its producer token, as on `lahar up`
(services/cli/stack/supervisor.py), from its command: a scheduler writes under its `--replica-id`, a
node agent under `node-agent.<--agent-id>`, every other service under its role's name. Deriving the users
from the compose file keeps one description of the topology: a service added there gets its user.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contracts.events import (
    ADMISSION,
    BINDER,
    DESCHEDULER,
    JOB_CONTROLLER,
    NODE_AGENT,
    QUEUE_CONTROLLER,
    SCHEDULER,
)
from shared.security.permissions import ADMIN, PROVISIONER, Identity

# the module a container runs -> the role of its user
ROLE_OF_MODULE: Mapping[str, str] = {
    "services.admission": ADMISSION,
    "services.job_controller": JOB_CONTROLLER,
    "services.queue_controller": QUEUE_CONTROLLER,
    "services.binder": BINDER,
    "services.scheduler": SCHEDULER,
    "services.node_agent": NODE_AGENT,
    "services.descheduler": DESCHEDULER,
}
PROVISIONER_MODULE = "services.cli.deploy.provision"


class TopologyError(ValueError):
    """A compose service whose user cannot be derived; the message names the service and the field."""


def _option(command: Sequence[str], flag: str) -> str | None:
    for index, word in enumerate(command):
        if word == flag and index + 1 < len(command):
            return command[index + 1]
        if word.startswith(flag + "="):
            return word.split("=", 1)[1]
    return None


def service_identity(name: str, command: Sequence[str]) -> Identity | None:
    """The bus user of the compose service `name` running `command` (module first, as the image's
    entrypoint is `python -m`); None for a container that is no lahar service (the provisioner, whose
    user is always made)."""
    if not command:
        raise TopologyError(f"services.{name}.command: empty; expected a lahar service module first")
    module = command[0]
    if module == PROVISIONER_MODULE:
        return None
    role = ROLE_OF_MODULE.get(module)
    if role is None:
        raise TopologyError(f"services.{name}.command[0]: {module!r} is not a lahar service module")
    if role == SCHEDULER:
        replica = _option(command, "--replica-id")
        if not replica:
            raise TopologyError(
                f"services.{name}.command: a scheduler needs --replica-id (its producer token)"
            )
        return Identity(name, role, replica)
    if role == NODE_AGENT:
        agent = _option(command, "--agent-id")
        if not agent:
            raise TopologyError(
                f"services.{name}.command: a node agent needs --agent-id (its producer token)"
            )
        return Identity(name, role, f"{NODE_AGENT}.{agent}")
    return Identity(name, role, role)


def compose_identities(compose: Mapping[str, Any]) -> list[Identity]:
    """Every user of the deployment: each lahar service of the compose document (those built from
    lahar's image), then `admin` and `provisioner`. Raises TopologyError naming every bad service."""
    identities: list[Identity] = []
    errors: list[str] = []
    for name, service in (compose.get("services") or {}).items():
        if "build" not in service:
            continue  # nats, etcd: not users of the bus
        try:
            identity = service_identity(name, [str(word) for word in service.get("command") or []])
        except TopologyError as exc:
            errors.append(str(exc))
            continue
        if identity is not None:
            identities.append(identity)
    if errors:
        raise TopologyError("; ".join(errors))
    return [*identities, Identity(ADMIN, ADMIN), Identity(PROVISIONER, PROVISIONER)]


def server_hosts(compose: Mapping[str, Any]) -> list[str]:
    """The host names of the deployment's servers (the compose services not built from lahar's image:
    nats, etcd), which their TLS certificates must name."""
    return [name for name, service in (compose.get("services") or {}).items() if "build" not in service]
