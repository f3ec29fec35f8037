"""How the etcd client's gRPC channel is built: plain, or TLS verifying the member's certificate against
a CA (docs/security.md).

aetcd only opens plain channels, so a TLS client is an aetcd.Client whose connect() opens a secure
channel instead and then sets up the same stubs and watcher aetcd's own connect() does; everything else
(calls, watches, close) is aetcd's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aetcd
import grpc
from aetcd import rpc, watcher

from shared.security.tls import read_ca


def etcd_client(
    host: str, port: int, *, timeout_s: float, options: Mapping[str, Any], tls_ca: str | None = None
) -> aetcd.Client:
    """A client of one member (its channel is opened by connect()). tls_ca: the CA file the member's
    certificate must chain to (TlsError when unreadable); None for plain HTTP/2."""
    if tls_ca is None:
        return aetcd.Client(host=host, port=port, timeout=timeout_s, options=dict(options))
    credentials = grpc.ssl_channel_credentials(root_certificates=read_ca(tls_ca))
    return _TlsClient(credentials, host=host, port=port, timeout=timeout_s, options=dict(options))


class _TlsClient(aetcd.Client):  # type: ignore[misc]  # aetcd ships no types
    def __init__(self, credentials: grpc.ChannelCredentials, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._channel_credentials = credentials

    async def connect(self) -> None:
        """aetcd's connect() with a secure channel; like it, nothing is sent before the first call
        (but an authentication, when the client was given a user and password)."""
        if self._connected.is_set():
            return
        target = f"{self._host}:{self._port}"
        self.channel = rpc.secure_channel(target, self._channel_credentials, options=self._options.items())
        if self._username is not None and self._password is not None:
            self.auth_stub = rpc.AuthStub(self.channel)
            request = rpc.AuthenticateRequest(name=self._username, password=self._password)
            resp = await self.auth_stub.Authenticate(request, timeout=self._timeout)
            self.metadata = (("token", resp.token),)
        self.kvstub = rpc.KVStub(self.channel)
        self.clusterstub = rpc.ClusterStub(self.channel)
        self.leasestub = rpc.LeaseStub(self.channel)
        self.maintenancestub = rpc.MaintenanceStub(self.channel)
        self._watcher = watcher.Watcher(
            rpc.WatchStub(self.channel), timeout=self._timeout, metadata=self.metadata
        )
        self._connected.set()
