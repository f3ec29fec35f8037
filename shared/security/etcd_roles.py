"""Who may read and write which keys in etcd: each role's key ranges, derived from the prefixes the code
itself uses (checkpoints, elections, the scheduler ring, the read model), so a service's etcd user can
touch its own keys and nothing else (docs/security.md, "etcd").

A service role may read and write (readwrite) its checkpoint under ``/lahar/checkpoints/<producer>/``;
an elected service (every read-model writer) also its election key and the read-model kinds it owns
(contracts/read_model_kinds.py); a scheduler replica reads the ring's members and writes its own
registration. Every role may read the one key whose count gives the cluster's revision
(REVISION_PROBE_KEY). ``admin`` (the operator's CLI, Python client and benchmarks) reads the read model
and writes nothing; a tenant reads its namespaces' objects and the cluster-scoped kinds it needs.

A role is named after the producer token it writes under, so a service's standby (``binder-2``) shares
its leader's role (``binder``): both campaign in the same election and write the same keys.
Pure data and functions: shared/store/etcd_auth.py provisions these roles on a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from contracts.events import SCHEDULER
from contracts.read_model_kinds import KINDS_BY_WRITER
from shared.client_reads import API_KINDS, NAMESPACED
from shared.security.permissions import ADMIN, SERVICE_ROLES, Identity
from shared.store.checkpoint import CHECKPOINT_PREFIX
from shared.store.election import ELECTION_PREFIX
from shared.store.etcd_ops import REVISION_PROBE_KEY, prefix_end
from shared.store.membership import MEMBERS_PREFIX, SCHEDULER_GROUP
from shared.store.read_model import OBJECTS_PREFIX, scope

ROOT = "root"  # etcd's superuser (it must exist, with the role of the same name, to enable auth)
# what a tenant sees beyond its namespaces: the queues it submits to and the nodes its pods run on
TENANT_CLUSTER_KINDS: tuple[str, ...] = ("queue", "node")


@dataclass(frozen=True, slots=True)
class KeyRange:
    """The keys from `key` up to `range_end` (exclusive); an empty range_end is the one key."""

    key: bytes
    range_end: bytes = b""

    @classmethod
    def prefix(cls, prefix: str | bytes) -> KeyRange:
        raw = prefix.encode() if isinstance(prefix, str) else prefix
        return cls(raw, prefix_end(raw))

    def covers(self, key: bytes, range_end: bytes = b"") -> bool:
        """Whether every key of [key, range_end) (or the one key) lies inside this range."""
        if not self.range_end:
            return key == self.key and range_end in (b"", key + b"\0")
        last_inside = range_end or key + b"\0"
        return self.key <= key and last_inside <= self.range_end


@dataclass(frozen=True, slots=True)
class EtcdRole:
    name: str
    read: tuple[KeyRange, ...]  # read only
    readwrite: tuple[KeyRange, ...]

    def may_read(self, key: bytes, range_end: bytes = b"") -> bool:
        return any(r.covers(key, range_end) for r in (*self.read, *self.readwrite))

    def may_write(self, key: bytes, range_end: bytes = b"") -> bool:
        return any(r.covers(key, range_end) for r in self.readwrite)


def checkpoint_range(producer: str) -> KeyRange:
    """A service's checkpoints (shared/store/checkpoint.py: CheckpointStore(etcd, <core name>))."""
    return KeyRange.prefix(f"{CHECKPOINT_PREFIX}{producer}/")


def election_range(producer: str) -> KeyRange:
    """A service's election key, read as a prefix by its campaign (shared/store/election.py)."""
    return KeyRange.prefix(f"{ELECTION_PREFIX}{producer}")


def service_role(identity: Identity) -> EtcdRole:
    """The role of a service's user: the keys its own code reads and writes, nothing of another's."""
    if identity.role not in SERVICE_ROLES:
        raise ValueError(f"{identity.user}: role {identity.role!r} is not a service's")
    producer = identity.producer
    read = [KeyRange(REVISION_PROBE_KEY)]
    readwrite = [checkpoint_range(producer)]
    kinds = KINDS_BY_WRITER.get(producer, ())
    if kinds:  # a read-model writer: elected, its writes fenced by its election key
        readwrite.append(election_range(producer))
        readwrite += [KeyRange.prefix(scope(kind)) for kind in kinds]
    if identity.role == SCHEDULER:  # the hash ring: every member read, its own registration written
        ring = f"{MEMBERS_PREFIX}{SCHEDULER_GROUP}/"
        read.append(KeyRange.prefix(ring))
        readwrite.append(KeyRange(f"{ring}{producer}".encode()))
    return EtcdRole(producer, tuple(read), tuple(readwrite))


def admin_role() -> EtcdRole:
    """The operator: `lahar get`, `lahar status`, waiting for a job (the read model); no writes."""
    return EtcdRole(ADMIN, (KeyRange(REVISION_PROBE_KEY), KeyRange.prefix(OBJECTS_PREFIX)), ())


def tenant_role(
    name: str, namespaces: Sequence[str], cluster_kinds: Sequence[str] = TENANT_CLUSTER_KINDS
) -> EtcdRole:
    """A tenant's client: read-only on the namespaced objects of its namespaces and on the cluster-scoped
    kinds given. Raises ValueError naming every bad argument."""
    problems = []
    if not name or name in (ROOT, ADMIN):
        problems.append(f"name: expected a tenant's own name, got {name!r}")
    if not namespaces:
        problems.append("namespaces: expected at least one namespace")
    problems += [f"namespaces: {ns!r} is not a namespace name" for ns in namespaces if not ns or "/" in ns]
    problems += [
        f"cluster_kinds: {kind!r} is not a cluster-scoped kind"
        for kind in cluster_kinds
        if kind not in API_KINDS or kind in NAMESPACED
    ]
    if problems:
        raise ValueError("; ".join(problems))
    read = [KeyRange(REVISION_PROBE_KEY)]
    read += [KeyRange.prefix(scope(kind, ns)) for ns in namespaces for kind in sorted(NAMESPACED)]
    read += [KeyRange.prefix(scope(kind)) for kind in cluster_kinds]
    return EtcdRole(name, tuple(read), ())


def stack_roles(identities: Iterable[Identity]) -> dict[str, EtcdRole]:
    """user -> role, for every service user and the admin among identities (others get no etcd user:
    the provisioner works on NATS only, the supervisor provisions etcd as root)."""
    roles: dict[str, EtcdRole] = {}
    for identity in identities:
        if identity.role in SERVICE_ROLES:
            roles[identity.user] = service_role(identity)
        elif identity.role == ADMIN:
            roles[identity.user] = admin_role()
    return roles


def distinct_roles(roles: Mapping[str, EtcdRole]) -> list[EtcdRole]:
    """Each role once (a leader and its standby share theirs)."""
    return list({role.name: role for role in roles.values()}.values())
