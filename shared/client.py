"""The Python client of a lahar cluster: writes go to admission (request/reply on core NATS), reads come
from the etcd read model, a job's history from the event log and a pod's output from its node agent.

    async with await LaharClient.connect("nats://127.0.0.1:4222", "127.0.0.1:2379") as lahar:
        answer = await lahar.apply(open("job.yaml").read())
        result = await lahar.wait_job("train", phase="Completed", timeout_s=60)

Logs: `lahar.logs.<namespace>.<pod>` (tokens escaped as in event subjects) is answered by the node agent
running the pod: request JSON {"container": name or null, "offset": bytes already read}, reply JSON
{"data": text from offset, "offset": the new offset, "done": true once the output is complete}, or
{"error": message}.
"""

from __future__ import annotations

import asyncio
import builtins  # LaharClient has a method named list: its annotations name the type as builtins.list
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any, Self

import nats
import nats.errors
import nats.js.errors

from contracts.job_shape import GROUP_NAME, JOB_NAME
from contracts.known_fields import STRICT
from contracts.objects import ApiObject, Job
from shared.bus.jetstream import Bus
from shared.bus.subjects import CLUSTER_SCOPE, event_filter, logs_subject
from shared.bus.tls_handshake import first_connection
from shared.client_events import bundled_events, read_events
from shared.client_reads import (
    API_KINDS,
    DELETED,
    NAMESPACED,
    WAITABLE,
    Answer,
    HistoryEntry,
    WaitResult,
    changed_object,
    decode_stored,
    history_of,
    job_history,
    resolve_kind,
)
from shared.config import parse_endpoints
from shared.security.credentials import CredentialsError, read_credentials
from shared.security.tls import TlsError, client_context
from shared.store.etcd import Etcd, EtcdError
from shared.store.etcd_auth import EtcdAuthError, client_etcd_credentials
from shared.store.read_model import ReadModel
from shared.telemetry.tracing import trace_headers

_LOG_POLL_S = 0.5  # while following a pod's output that has nothing new yet


class LaharError(RuntimeError):
    """A request could not be carried out; the message says which part failed and why."""


class Unreachable(LaharError):
    """A part of the cluster (NATS, etcd, admission, a node agent) could not be reached or did not answer."""


class LaharClient:
    def __init__(self, bus: Bus, etcd: Etcd, *, request_timeout_s: float = 10.0) -> None:
        self.bus = bus
        self.etcd = etcd
        self.reads = ReadModel(etcd)
        self.request_timeout_s = request_timeout_s

    @classmethod
    async def connect(
        cls,
        nats_url: str,
        etcd_endpoint: str,
        *,
        creds: str | None = None,
        tls_ca: str | None = None,
        etcd_user: str | None = None,
        etcd_password_file: str | None = None,
        timeout_s: float = 5.0,
    ) -> LaharClient:
        """Connect to NATS and etcd; LaharError naming the one that cannot be reached or refuses the
        credentials. Either may name several servers of a cluster, comma-separated (etcd as host:port),
        to use whichever answers. creds: a credentials file (`lahar up` writes the operator's to
        <home>/creds/admin.nk); None for a server without authentication. tls_ca: the CA file both
        servers' certificates must chain to (`lahar up` writes <home>/tls/ca.pem); None: plain TCP.
        etcd_user, etcd_password_file: the etcd user (default `admin`) and its password file; by default
        the `<user>.etcd` file `lahar up` writes beside the credentials file `<user>.nk`, if there is one;
        none for an etcd without authentication."""
        try:
            endpoints = parse_endpoints(etcd_endpoint)
        except ValueError as exc:
            raise LaharError(f"etcd endpoint: {exc}") from exc

        async def quiet(_exc: Exception) -> None:
            return None

        try:
            credentials = read_credentials(creds) if creds else None
            tls = client_context(tls_ca) if tls_ca else None
            etcd_credentials = client_etcd_credentials(creds, etcd_user, etcd_password_file)
        except (CredentialsError, TlsError, EtcdAuthError) as exc:
            raise LaharError(str(exc)) from exc
        options = credentials.connect_options() if credentials is not None else {}
        if tls is not None:
            options["tls"] = tls
        try:
            # a few attempts only: a client reports an unreachable server instead of waiting forever
            nc = await first_connection(
                lambda error_cb: nats.connect(
                    [url.strip() for url in nats_url.split(",")],
                    connect_timeout=timeout_s,
                    max_reconnect_attempts=3,
                    reconnect_time_wait=0.3,
                    error_cb=error_cb,
                    **options,
                ),
                quiet,
                tls=tls is not None,
            )
        except nats.errors.Error as exc:
            if "authorization violation" in str(exc).lower():
                raise LaharError(f"NATS at {nats_url} refused the credentials {creds or '(none)'}") from exc
            raise Unreachable(f"cannot reach NATS at {nats_url}: {exc or type(exc).__name__}") from exc
        except OSError as exc:  # a refused connection, or a certificate that does not verify (ssl.SSLError)
            raise Unreachable(f"cannot reach NATS at {nats_url}: {exc or type(exc).__name__}") from exc
        try:
            etcd = await Etcd.connect_cluster(
                endpoints, timeout_s=timeout_s, tls_ca=tls_ca, credentials=etcd_credentials
            )
        except EtcdAuthError as exc:
            await nc.close()
            raise LaharError(f"etcd at {etcd_endpoint} refused the credentials: {exc}") from exc
        except (OSError, EtcdError) as exc:
            await nc.close()
            raise Unreachable(f"cannot reach etcd at {etcd_endpoint}: {exc}") from exc
        prefix = credentials.js_api_prefix if credentials is not None else None
        bus = Bus(nc, request_timeout_s=timeout_s, js_api_prefix=prefix)
        return cls(bus, etcd, request_timeout_s=timeout_s * 2)

    async def close(self) -> None:
        await self.etcd.close()
        await self.bus.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    # --- writes (admission) ---------------------------------------------------------------------

    async def _request(
        self, verb: str, data: bytes, *, dry_run: bool, request_id: str | None, **options: str
    ) -> Answer:
        """options: more headers, each left out when empty (Lahar-Source, Lahar-Validate)."""
        limit = self.bus.nc.max_payload
        if len(data) > limit:
            raise LaharError(f"the request is {len(data)} bytes; the server takes at most {limit}")
        headers = {"Lahar-Request-Id": request_id or str(uuid.uuid4()), **trace_headers()}
        if dry_run:
            headers["Lahar-Dry-Run"] = "true"
        headers.update((name, value) for name, value in options.items() if value)
        try:
            reply = await self.bus.nc.request(
                f"lahar.api.{verb}", data, timeout=self.request_timeout_s, headers=headers
            )
        except nats.errors.NoRespondersError as exc:
            raise Unreachable("admission is not running (nobody answers lahar.api.*)") from exc
        except nats.errors.TimeoutError as exc:
            raise Unreachable(f"admission did not answer within {self.request_timeout_s}s") from exc
        return Answer.of(json.loads(reply.data))

    async def apply(
        self,
        text: str | bytes,
        *,
        dry_run: bool = False,
        request_id: str | None = None,
        source: str = "",
        validate: str = STRICT,
    ) -> Answer:
        """Create or update every object of a manifest text (YAML or JSON, several documents), all or none.
        source names the text in errors (e.g. its file name); validate (strict, warn or ignore) says
        what a field its kind's API does not know makes: an error, a warning in the answer, nothing."""
        data = text.encode() if isinstance(text, str) else text
        # strict is admission's default: a request without the header is one any admission reads alike
        options = {"Lahar-Source": source, "Lahar-Validate": "" if validate == STRICT else validate}
        return await self._request("apply", data, dry_run=dry_run, request_id=request_id, **options)

    async def delete(
        self, kind: str, name: str, namespace: str = "default", *, dry_run: bool = False
    ) -> Answer:
        body = {"kind": API_KINDS[resolve_kind(kind)], "namespace": namespace, "name": name}
        return await self._request("delete", json.dumps(body).encode(), dry_run=dry_run, request_id=None)

    async def command(
        self,
        action: str,
        name: str,
        namespace: str = "default",
        *,
        target_kind: str | None = None,
        weight: int | None = None,
        dry_run: bool = False,
    ) -> Answer:
        """suspend/resume/restart/terminate a Job, open/close a Queue, or "update" a Queue's weight."""
        body: dict[str, Any] = {"action": action, "namespace": namespace, "name": name}
        if target_kind is not None:
            body["target_kind"] = API_KINDS[resolve_kind(target_kind)]
        if weight is not None:
            body["weight"] = weight
        return await self._request("command", json.dumps(body).encode(), dry_run=dry_run, request_id=None)

    # --- reads (read model) ---------------------------------------------------------------------

    def _scope(self, kind: str, namespace: str | None) -> tuple[str, str | None]:
        resolved = resolve_kind(kind)
        return resolved, (namespace or "default") if resolved in NAMESPACED else None

    async def get(self, kind: str, name: str, namespace: str | None = None) -> ApiObject | None:
        resolved, scope = self._scope(kind, namespace)
        stored = await self.reads.get(resolved, scope, name)
        return None if stored is None else decode_stored(resolved, stored.object)

    async def list(self, kind: str, namespace: str | None = None) -> list[ApiObject]:
        """Objects of a kind, in one namespace or (None) all, ordered by namespace and name."""
        resolved = resolve_kind(kind)
        scope = namespace if resolved in NAMESPACED else None
        stored, _ = await self.reads.list(resolved, scope)
        return [decode_stored(resolved, s.object) for s in stored]

    async def watch(
        self, kind: str, namespace: str | None = None
    ) -> tuple[builtins.list[ApiObject], AsyncIterator[tuple[str, ApiObject]]]:
        """The objects now, and from then on each change: ("put", object) or ("delete", its last state)."""
        resolved = resolve_kind(kind)
        scope = namespace if resolved in NAMESPACED else None
        stored, revision = await self.reads.list(resolved, scope)
        known = {
            self.reads.key(resolved, s.namespace, s.name): decode_stored(resolved, s.object) for s in stored
        }
        # every key of the kind (in the namespace): a key without its name (and namespace) tokens
        sample = self.reads.key(resolved, scope or "x", "x")
        prefix = sample[: -len(b"x")] if scope else sample[: -len(b"x/x")]
        return list(known.values()), self._changes(resolved, prefix, revision, known)

    async def _changes(
        self, kind: str, prefix: bytes, revision: int, known: dict[bytes, ApiObject]
    ) -> AsyncIterator[tuple[str, ApiObject]]:
        async for change in self.etcd.watch_prefix(prefix, start_revision=revision + 1):
            obj = changed_object(kind, change.kind, change.value) if change.value else None
            if obj is None:  # a tombstone or a delete
                gone = known.pop(change.key, None)
                if gone is not None:
                    yield "delete", gone
                continue
            known[change.key] = obj
            yield "put", obj

    async def wait_job(
        self,
        name: str,
        namespace: str = "default",
        *,
        phase: str = "Completed",
        timeout_s: float = 60.0,
        on_change: Callable[[Job], None] | None = None,
    ) -> WaitResult:
        """Wait until the job is in `phase` (reached), in another final phase or deleted (not reached),
        or timeout_s passes (timed_out). on_change sees each new state of the job."""
        return await self.wait_for(
            "job", name, namespace, phase=phase, timeout_s=timeout_s, on_change=on_change
        )

    async def wait_for(
        self,
        kind: str,
        name: str,
        namespace: str = "default",
        *,
        phase: str,
        timeout_s: float = 60.0,
        on_change: Callable[[Any], None] | None = None,
    ) -> WaitResult:
        """Wait until a job or pod is in `phase` (reached), in another final phase or deleted (not
        reached), or timeout_s passes (timed_out). The phase "Deleted" waits for the object to be gone
        (reached at once when it is not there). on_change sees each new state of the object."""
        phase_of, final = WAITABLE[kind]
        key = self.reads.key(kind, namespace, name)
        last: Any = None
        deadline = time.monotonic() + timeout_s

        def settle(obj: Any) -> WaitResult | None:
            nonlocal last
            if obj is None:
                gone = last is not None or phase == DELETED
                return WaitResult(phase == DELETED, DELETED, last) if gone else None
            if on_change is not None and obj != last:
                on_change(obj)
            last = obj
            current = phase_of(obj)
            if current == phase:
                return WaitResult(True, current, obj)
            return WaitResult(False, current, obj) if current in final and phase != DELETED else None

        revision = await self.etcd.revision()
        result = settle(await self.get(kind, name, namespace))
        if result is not None:
            return result
        changes = self.etcd.watch_prefix(key, start_revision=revision + 1)
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    change = await asyncio.wait_for(anext(changes), remaining)
                except TimeoutError:
                    break
                if change.key != key:
                    continue  # another object whose name starts with this one's
                result = settle(changed_object(kind, change.kind, change.value) if change.value else None)
                if result is not None:
                    return result
        finally:
            await changes.aclose()
        return WaitResult(False, phase_of(last) if last is not None else "", last, timed_out=True)

    # --- history (event log) and logs (node agents) -----------------------------------------------

    async def events(self, job: str, namespace: str = "default") -> builtins.list[HistoryEntry]:
        """The job's history: every event about it, its PodGroup, its pods and commands on it."""
        return job_history(await read_events(self.bus, event_filter(None, namespace)), namespace, job)

    async def object_events(
        self, kind: str, name: str, namespace: str | None = None
    ) -> builtins.list[HistoryEntry]:
        """The events about one object: on its own subject and, for a pod or a PodGroup, in its
        namespace's bundles (a job's: its whole history, as `events`)."""
        resolved, scope = self._scope(kind, namespace)
        if resolved == "job":
            return await self.events(name, scope or "default")
        subject_filter = event_filter(resolved, scope or CLUSTER_SCOPE, name=name)
        events = await read_events(self.bus, subject_filter)
        if resolved in ("pod", "podgroup") and scope is not None:
            jobs = await self._pod_jobs(name, scope) if resolved == "pod" else None
            bundled = await bundled_events(self.bus, resolved, scope, name, jobs)
            events = sorted([*events, *bundled], key=lambda e: e.seq)
        return history_of(events)

    async def _pod_jobs(self, pod_name: str, namespace: str) -> set[str] | None:
        """The jobs a pod's writers may correlate its events with (its Volcano Job, else its PodGroup,
        else itself), None when the read model no longer has the pod: then every bundled event with its
        name is taken for its own."""
        pod = await self.get("pod", pod_name, namespace)
        if pod is None:
            return None
        annotations = pod.meta.annotations
        names = (annotations.get(JOB_NAME), annotations.get(GROUP_NAME), pod_name)
        return {f"{namespace}/{n}" for n in names if n}

    async def logs(
        self, pod: str, namespace: str = "default", *, container: str | None = None, follow: bool = False
    ) -> AsyncIterator[str]:
        """The pod's output from its node agent, chunk by chunk; with follow, until the pod is done."""
        subject = logs_subject(namespace, pod)
        offset = 0
        while True:
            body = json.dumps({"container": container, "offset": offset}).encode()
            try:
                reply = await self.bus.nc.request(subject, body, timeout=self.request_timeout_s)
            except nats.errors.NoRespondersError as exc:
                raise Unreachable(
                    f"no node agent serves the output of pod {namespace}/{pod} (is it bound to a live node?)"
                ) from exc
            except nats.errors.TimeoutError as exc:
                raise Unreachable(f"the node agent of pod {namespace}/{pod} did not answer") from exc
            answer = json.loads(reply.data)
            if answer.get("error"):
                raise LaharError(str(answer["error"]))
            data, offset = str(answer.get("data") or ""), int(answer.get("offset", offset))
            if data:
                yield data
                continue
            if answer.get("done") or not follow:
                return
            await asyncio.sleep(_LOG_POLL_S)
