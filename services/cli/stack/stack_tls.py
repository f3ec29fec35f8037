"""The local stack's certificates: `lahar up` makes a fresh certificate authority at every start and
signs with it a certificate for the NATS servers (clients and routes), one for etcd's clients and one for
etcd's peers, all valid for 127.0.0.1, ::1 and localhost (shared/security/tls.py).

Everything goes to <home>/tls/ (the directory 0700, every key 0600): `ca.pem` is what clients trust
(`--tls-ca`, `LAHAR_TLS_CA`, the CLI's default), `ca.key` is kept so more certificates could be signed
for this run (it is worth a new CA to whoever reads it, like the seeds under creds/). A restart makes a
new CA, so certificates and CA files copied out of an earlier run stop working: rotation is
`lahar down && lahar up`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from shared.security.tls import KeyPair, TlsFiles, issue, new_ca, write_pair

TLS_DIR = "tls"
CA_FILE = "ca.pem"
CA_KEY_FILE = "ca.key"
NATS, ETCD, ETCD_PEER = "nats", "etcd", "etcd-peer"  # the certificates' file stems and common names


def ca_path(home: Path) -> Path:
    """Where `lahar up` writes the CA clients trust."""
    return home / TLS_DIR / CA_FILE


@dataclass(frozen=True, slots=True)
class StackTls:
    ca: Path
    nats: TlsFiles  # every NATS server's client port and routes
    etcd: TlsFiles  # every etcd member's client port (and a single member's peer port)
    etcd_peer: TlsFiles  # the etcd members' connections to each other (`--ha`)


def issue_tls(home: Path, names: Sequence[str] = ()) -> StackTls:
    """A new CA and the servers' certificates, valid for the local names and `names`, under home/tls/."""
    directory = home / TLS_DIR
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(directory, 0o700)  # mkdir's mode is masked by the umask, and an older directory kept its own
    ca = new_ca()
    write_pair(ca, directory / CA_FILE, directory / CA_KEY_FILE)

    def leaf(stem: str) -> TlsFiles:
        pair: KeyPair = issue(ca, f"lahar {stem}", names)
        files = TlsFiles(directory / f"{stem}.pem", directory / f"{stem}.key", directory / CA_FILE)
        write_pair(pair, files.cert, files.key)
        return files

    return StackTls(directory / CA_FILE, leaf(NATS), leaf(ETCD), leaf(ETCD_PEER))
