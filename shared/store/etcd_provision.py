"""Provisioning etcd authentication on a cluster: the root user, a role per service (its key ranges from
shared/security/etcd_roles.py), a user per service process granted its role, then authentication on.

Once per cluster: users and roles are replicated like keys, so the calls go to whichever member answers.
Idempotent: a role that exists gets exactly the wanted permissions (extra ones revoked), a user that
exists gets the new password and exactly its role, and a cluster with authentication already on is
provisioned as root with the root password it was given before (etcd refuses anyone else).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aetcd import rpc

from shared.security.etcd_roles import ROOT, EtcdRole, distinct_roles
from shared.store.etcd import Etcd, EtcdError
from shared.store.etcd_auth import EtcdAuthError, EtcdCredentials

_READ, _READWRITE = rpc.Permission.READ, rpc.Permission.READWRITE


@dataclass(frozen=True, slots=True)
class EtcdUser:
    name: str
    password: str
    role: EtcdRole


async def _connect(endpoints: Sequence[tuple[str, int]], tls_ca: str | None, root_password: str) -> Etcd:
    """A client as root when authentication is on, unauthenticated while it is off (etcd then refuses to
    authenticate anyone, and answers everyone)."""
    root = EtcdCredentials(ROOT, root_password)
    try:
        return await Etcd.connect_cluster(endpoints, tls_ca=tls_ca, credentials=root)
    except EtcdAuthError as exc:
        if "not enabled" not in str(exc):
            raise
    return await Etcd.connect_cluster(endpoints, tls_ca=tls_ca)


async def auth_enabled(etcd: Etcd) -> bool:
    """Whether the cluster has authentication on (anyone may ask)."""
    return bool((await etcd.auth("AuthStatus", rpc.AuthStatusRequest())).enabled)


async def provision(
    endpoints: Sequence[tuple[str, int]],
    *,
    root_password: str,
    users: Sequence[EtcdUser],
    tls_ca: str | None = None,
) -> None:
    """Make the cluster's users and roles what they are given, and turn authentication on. Raises
    EtcdAuthError when authentication is on already and root_password is not root's."""
    etcd = await _connect(endpoints, tls_ca, root_password)
    try:
        enabled = etcd.credentials is not None
        if not enabled:  # root's password is set only while nobody is logged in with it
            await _ensure_user(etcd, ROOT, root_password, [ROOT])
        for role in distinct_roles({user.name: user.role for user in users}):
            await _ensure_role(etcd, role)
        for user in users:
            await _ensure_user(etcd, user.name, user.password, [user.role.name])
        if not enabled:
            await etcd.auth("AuthEnable", rpc.AuthEnableRequest())
    finally:
        await etcd.close()


async def disable(
    endpoints: Sequence[tuple[str, int]], *, root_password: str, tls_ca: str | None = None
) -> bool:
    """Turn authentication off (as root) if it is on; whether it was on."""
    etcd = await _connect(endpoints, tls_ca, root_password)
    try:
        if etcd.credentials is None:
            return False
        await etcd.auth("AuthDisable", rpc.AuthDisableRequest())
        return True
    finally:
        await etcd.close()


async def remove_user(
    endpoints: Sequence[tuple[str, int]], *, root_password: str, user: str, tls_ca: str | None = None
) -> None:
    """Delete a user and the role of the same name (a tenant's), as root; nothing if they are gone."""
    etcd = await _connect(endpoints, tls_ca, root_password)
    try:
        for method, request in (
            ("UserDelete", rpc.AuthUserDeleteRequest(name=user)),
            ("RoleDelete", rpc.AuthRoleDeleteRequest(role=user)),
        ):
            try:
                await etcd.auth(method, request)
            except EtcdError as exc:
                if "not found" not in str(exc):
                    raise
    finally:
        await etcd.close()


def _permissions(role: EtcdRole) -> set[tuple[int, bytes, bytes]]:
    return {(_READ, r.key, r.range_end) for r in role.read} | {
        (_READWRITE, r.key, r.range_end) for r in role.readwrite
    }


async def _ensure_role(etcd: Etcd, role: EtcdRole) -> None:
    try:
        await etcd.auth("RoleAdd", rpc.AuthRoleAddRequest(name=role.name))
        have: set[tuple[int, bytes, bytes]] = set()
    except EtcdError as exc:
        if "already exists" not in str(exc):
            raise
        reply = await etcd.auth("RoleGet", rpc.AuthRoleGetRequest(role=role.name))
        have = {(int(p.permType), bytes(p.key), bytes(p.range_end)) for p in reply.perm}
    want = _permissions(role)
    for _, key, range_end in have - want:
        revoke = rpc.AuthRoleRevokePermissionRequest(role=role.name, key=key, range_end=range_end)
        await etcd.auth("RoleRevokePermission", revoke)
    for perm_type, key, range_end in want - have:
        perm = rpc.Permission(permType=perm_type, key=key, range_end=range_end)
        await etcd.auth("RoleGrantPermission", rpc.AuthRoleGrantPermissionRequest(name=role.name, perm=perm))


async def _ensure_user(etcd: Etcd, name: str, password: str, roles: Sequence[str]) -> None:
    try:
        await etcd.auth("UserAdd", rpc.AuthUserAddRequest(name=name, password=password))
        have: set[str] = set()
    except EtcdError as exc:
        if "already exists" not in str(exc):
            raise
        change = rpc.AuthUserChangePasswordRequest(name=name, password=password)
        await etcd.auth("UserChangePassword", change)
        have = set((await etcd.auth("UserGet", rpc.AuthUserGetRequest(name=name))).roles)
    for role in have - set(roles):
        await etcd.auth("UserRevokeRole", rpc.AuthUserRevokeRoleRequest(name=name, role=role))
    for role in set(roles) - have:
        await etcd.auth("UserGrantRole", rpc.AuthUserGrantRoleRequest(user=name, role=role))


def users_of(roles: Mapping[str, EtcdRole], passwords: Mapping[str, str]) -> list[EtcdUser]:
    """The users to provision: each user's role and password."""
    missing = sorted(set(roles) - set(passwords))
    if missing:
        raise EtcdAuthError(f"no password for etcd users: {', '.join(missing)}")
    return [EtcdUser(name, passwords[name], role) for name, role in roles.items()]
