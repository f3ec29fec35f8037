"""Volcano's `ssh` job plugin: every pod of the job gets the same RSA key pair and an ssh config naming
every pod of the job, so that its pods can log in to one another (mpirun's remote launch).

Volcano writes a Secret `<job>-ssh` with `id_rsa`, `id_rsa.pub`, `authorized_keys` (the public key) and
`config` (`StrictHostKeyChecking no`, `UserKnownHostsFile /dev/null`, then per pod `Host <hostname>`,
`HostName <hostname>.<subdomain>`, `Port <port>`) and mounts it at `/root/.ssh` in every container. Flags:
`--ssh-key-file-path` (/root/.ssh), `--ssh-private-key` and `--ssh-public-key` (the keys' text; without a
private key the controller generates an RSA-2048 pair when the job is added), `--ssh-port` (22; a port
outside 1..65535 becomes 22).

lahar: the four files go under the pod's directory, at the key file path made relative (`root/.ssh/` by
default), and `VC_SSH_DIR` (lahar's own variable) holds that directory's absolute path; the process
runtime's containers share the agent's HOME, so point ssh at them: `ssh -F "$VC_SSH_DIR/config" -i
"$VC_SSH_DIR/id_rsa" <pod>`. A key file path that leaves the pod's directory becomes the default one.

Generating a key pair takes randomness, which a pure function has none of: the pair comes in as data
(`contribute(given, keys)`). Admission generates it when it accepts the job (services/admission/keygen.py)
and writes it to the log right after the JobSubmitted, in the same batch, as a JobSecretCreated (subject
the job, payload `name` `<job>-ssh`, the job's `uid` and the data {id_rsa, id_rsa.pub} sealed to the node
agents, shared/security/sealing.py); node agents fold it like the job itself and open it when a pod
starts, so every pod of the job gets the same pair on whichever agent it runs. The job-controller never
reads the secret. Without keys (no flag, no pair in the log) the plugin gives nothing.

Differences from Volcano: the private key file is made 0600 by the agent even under a custom key file
path (Volcano uses 0644 there, for a non-root user to read a root-owned file; here the agent's user owns
both); the keys come from the flags as they are when the pod starts, not when the job was added.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

from contracts.job_plugins.common import Contribution, PluginInput, go_flags
from contracts.job_shape import pod_name
from contracts.objects import Job

NAME = "ssh"
KEY_FILE_PATH = "ssh-key-file-path"
PRIVATE_KEY_FLAG = "ssh-private-key"
PUBLIC_KEY_FLAG = "ssh-public-key"
PORT_FLAG = "ssh-port"
DEFAULT_KEY_FILE_PATH = "/root/.ssh"
DEFAULT_PORT = 22
DEFAULTS = {
    KEY_FILE_PATH: DEFAULT_KEY_FILE_PATH,
    PRIVATE_KEY_FLAG: "",
    PUBLIC_KEY_FLAG: "",
    PORT_FLAG: str(DEFAULT_PORT),
}

PRIVATE_KEY = "id_rsa"
PUBLIC_KEY = "id_rsa.pub"
AUTHORIZED_KEYS = "authorized_keys"
CONFIG = "config"
VC_SSH_DIR = "VC_SSH_DIR"

# Go's strconv.ParseInt(s, 0, 64): an optional sign, then 0x / 0o / 0b / a leading 0 (octal) or decimal,
# with underscores only after a base prefix
_GO_INT = re.compile(r"[+-]?(0[xX][_0-9a-fA-F]+|0[oO][_0-7]+|0[bB][_01]+|0[_0-7]*|[1-9][_0-9]*)")
_INT64 = range(-(2**63), 2**63)


@dataclass(frozen=True, slots=True)
class KeyPair:
    """An ssh key pair: the private key in PEM (id_rsa), the public key in authorized_keys format."""

    private: bytes
    public: bytes


@dataclass(frozen=True, slots=True)
class Flags:
    key_dir: str  # relative to the pod's directory
    private_key: str
    public_key: str
    port: int


def parse_flags(arguments: tuple[str, ...]) -> Flags:
    """The plugin's flags as Volcano's flag set reads them. `--ssh-port` is an int flag: a value Go cannot
    parse ends the parsing there (the flags after it are not read) and the port stays 22."""
    values = go_flags(arguments, DEFAULTS)
    if _go_int(values[PORT_FLAG]) is None:
        values = go_flags(_before_bad_port(arguments), DEFAULTS)
    port = _go_int(values[PORT_FLAG])
    return Flags(
        key_dir=key_dir(values[KEY_FILE_PATH]),
        private_key=values[PRIVATE_KEY_FLAG],
        public_key=values[PUBLIC_KEY_FLAG],
        port=port if port is not None and 0 < port <= 65535 else DEFAULT_PORT,
    )


def _before_bad_port(arguments: tuple[str, ...]) -> tuple[str, ...]:
    """The arguments before the flag that gives `--ssh-port` a value Go cannot parse."""
    for end in range(1, len(arguments) + 1):
        if _go_int(go_flags(arguments[:end], DEFAULTS)[PORT_FLAG]) is None:
            return arguments[: end - 1]
    return arguments


def _go_int(text: str) -> int | None:
    if not _GO_INT.fullmatch(text) or "__" in text or text.rstrip("_") != text:
        return None
    digits = text.lstrip("+-")
    if len(digits) > 1 and digits[0] == "0" and digits[1] not in "xXoObB":
        digits = "0o" + digits[1:]  # Go's leading 0 is octal, Python's is an error
    value = int(digits, 0) * (-1 if text.startswith("-") else 1)
    return value if value in _INT64 else None


def key_dir(path: str) -> str:
    """Where the key file path lands in the pod's directory: the path made relative; one that would leave
    the directory (or name it) is the default's."""
    relative = posixpath.normpath(path).lstrip("/")
    if relative in ("", ".") or relative == ".." or relative.startswith("../"):
        relative = DEFAULT_KEY_FILE_PATH.lstrip("/")
    return relative


def secret_name(job: Job) -> str:
    """Volcano's name for the job's ssh Secret."""
    return f"{job.meta.name}-ssh"


def secret_data(keys: KeyPair) -> dict[str, str]:
    """The pair as the data of the job's secret (JobSecretCreated): file name -> text."""
    return {PRIVATE_KEY: keys.private.decode(), PUBLIC_KEY: keys.public.decode()}


def keys_from_secret(data: Mapping[str, object]) -> KeyPair | None:
    """The pair in a secret's data, None when it holds no ssh pair."""
    private, public = data.get(PRIVATE_KEY), data.get(PUBLIC_KEY)
    if not isinstance(private, str) or not isinstance(public, str):
        return None
    return KeyPair(private.encode(), public.encode())


def needs_key_pair(job: Job) -> bool:
    """Whether the job's pods need a generated pair: it has the plugin and no `--ssh-private-key`."""
    arguments = job.plugins.get(NAME)
    return arguments is not None and not parse_flags(tuple(arguments)).private_key


def private_files(job: Job) -> tuple[str, ...]:
    """The files (relative to the pod directory) that must be readable by their owner only."""
    arguments = job.plugins.get(NAME)
    return () if arguments is None else (f"{parse_flags(tuple(arguments)).key_dir}/{PRIVATE_KEY}",)


def ssh_config(job: Job, port: int) -> str:
    """Volcano's generateSSHConfig: one Host per pod (a template hostname names one for its task)."""
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in job.tasks:
        spec = task.template.spec
        subdomain = spec.subdomain or job.meta.name
        if spec.hostname:
            hostnames = [spec.hostname] if task.replicas > 0 else []
        else:
            hostnames = [pod_name(job.meta.name, task.name, i) for i in range(task.replicas)]
        for hostname in hostnames:
            lines += [f"Host {hostname}", f"  HostName {hostname}.{subdomain}", f"  Port {port}"]
    return "\n".join(lines) + "\n"


def contribute(given: PluginInput, keys: KeyPair | None = None) -> Contribution:
    """The key files, the config and VC_SSH_DIR; the flags' keys win over `keys` (as in Volcano, a given
    private key is used with whatever public key is given, even none)."""
    flags = parse_flags(given.arguments)
    if flags.private_key:
        keys = KeyPair(flags.private_key.encode(), flags.public_key.encode())
    if keys is None:
        return Contribution()
    files = {
        PRIVATE_KEY: keys.private,
        PUBLIC_KEY: keys.public,
        AUTHORIZED_KEYS: keys.public,
        CONFIG: ssh_config(given.job, flags.port).encode(),
    }
    return Contribution(
        env={VC_SSH_DIR: f"{given.pod_dir.rstrip('/')}/{flags.key_dir}"},
        files={f"{flags.key_dir}/{name}": content for name, content in files.items()},
    )
