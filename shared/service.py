"""One lifecycle for every lahar service, and the process entry point that runs it.

A service is built by an async factory from its config (opening connections onto an exit stack that
run_main closes last), then run() works until shutdown is requested and drains: stop taking new work,
finish what is in flight, checkpoint, return. run_main turns SIGTERM / SIGINT into that shutdown and the
outcome into the exit status (0 clean, 1 crashed or drain timed out, 2 bad configuration).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import signal
import sys
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, NoReturn, TypeVar

import structlog

try:
    import uvloop
except ImportError:  # uvloop builds on Linux and macOS: elsewhere services run on asyncio's loop
    uvloop = None  # type: ignore[assignment]

from shared.backoff import retry_while_unavailable
from shared.bus.jetstream import Bus
from shared.config import ConfigError, ServiceConfig, load_config
from shared.store.etcd import Etcd, EtcdUnavailable
from shared.store.etcd_auth import EtcdAuthError, EtcdCredentials
from shared.telemetry.logs import setup_logging
from shared.telemetry.metrics import MetricsServer, default_registry
from shared.telemetry.tracing import setup_tracing

log = structlog.get_logger(__name__)

C = TypeVar("C", bound=ServiceConfig)
R = TypeVar("R")

# The longest a run_until_idle() waiter sleeps between checks when no progress is signalled: idleness can
# also change through the outside world (a message landing in a stream), which nobody signals.
_IDLE_RECHECK_S = 0.25
_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Service(ABC):
    """The lifecycle every service shares.

    Subclasses implement serve() (the work, until self.stopping is set, then the drain), health() and
    idle(), and call progressed() whenever they finish a unit of work so run_until_idle() re-checks.
    """

    name: str

    def __init__(self) -> None:
        self.stopping = asyncio.Event()
        self._stopped = asyncio.Event()
        self._progress = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @abstractmethod
    async def serve(self) -> None:
        """Work until self.stopping is set, then drain (stop taking work, finish in-flight work,
        checkpoint) and return. Raising means the service crashed."""

    @abstractmethod
    def health(self) -> dict[str, Any]:
        """{"ok": bool, ...details}: served on /healthz (503 when not ok)."""

    @abstractmethod
    async def idle(self) -> bool:
        """True when no event or work is pending: everything that arrived has been processed."""

    async def run(self) -> None:
        """Run until shutdown is requested and the drain is complete; raises if the service crashed."""
        current = asyncio.current_task()
        if self._task is not None and self._task is not current:
            raise RuntimeError(f"service {self.name} was already started")
        self._task = current
        try:
            await self.serve()
        finally:
            self._stopped.set()
            self.progressed()

    def request_shutdown(self) -> None:
        """Ask the service to drain and stop, without waiting (safe from a signal handler)."""
        self.stopping.set()
        self.progressed()

    async def shutdown(self) -> None:
        """Request a graceful stop and wait for the drain to finish. Idempotent; a no-op if never run."""
        self.request_shutdown()
        if self._task is None or self._task is asyncio.current_task():
            return
        await self._stopped.wait()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def progressed(self) -> None:
        """Signal that work was done (idleness may have changed)."""
        self._progress.set()

    async def run_until_idle(self, timeout_s: float) -> None:
        """For tests: start run() in the background unless it runs already, and return once idle() holds.

        The service keeps running afterwards (call shutdown()). Raises TimeoutError if it is not idle in
        time, and the service's own exception if it crashed meanwhile.
        """
        if self._task is None:
            # Recorded before run() takes its first step, so shutdown() right after this call waits.
            self._task = asyncio.create_task(self.run(), name=f"service-{self.name}")
        task = self._task
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            self._progress.clear()
            if task.done():
                task.result()  # re-raises a crash
                raise RuntimeError(f"service {self.name} stopped before becoming idle")
            if await self.idle():
                return
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"service {self.name} not idle after {timeout_s}s: {self.health()}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._progress.wait(), min(remaining, _IDLE_RECHECK_S))


ServiceFactory = Callable[[C, contextlib.AsyncExitStack], Awaitable[Service]]


async def connect_bus(config: ServiceConfig, stack: contextlib.AsyncExitStack, *, name: str) -> Bus:
    """A bus connection closed when the stack unwinds (after the service's drain). It waits for a server
    that is down and reconnects after every drop, forever (Bus.connect)."""
    # a comma-separated list names several servers of a NATS cluster; the client fails over among them
    servers = [url.strip() for url in config.nats_url.split(",")]
    bus = await Bus.connect(servers, name=name, creds=config.nats_creds or None, tls_ca=config.tls_ca or None)
    stack.push_async_callback(bus.close)
    return bus


async def connect_etcd(config: ServiceConfig, stack: contextlib.AsyncExitStack) -> Etcd:
    """An etcd client closed when the stack unwinds (after the service's drain), to every member of
    the cluster: its calls move to another member whenever theirs is unavailable (shared/store/etcd.py).

    While no member answers (etcd is down or restarting), it waits and tries again: a service started
    during an outage comes up once etcd does, instead of exiting and being restarted over and over."""

    credentials = (
        EtcdCredentials.from_file(config.etcd_user, config.etcd_password_file) if config.etcd_user else None
    )

    async def first_answering() -> Etcd:
        try:
            return await Etcd.connect_cluster(
                config.etcd_endpoints, tls_ca=config.tls_ca or None, credentials=credentials
            )
        except EtcdAuthError:
            raise  # a wrong user or password does not come right by waiting
        except Exception as exc:
            raise EtcdUnavailable(f"no etcd endpoint of {config.etcd_endpoint!r} answered: {exc}") from exc

    etcd = await retry_while_unavailable("connecting to etcd", first_answering, (EtcdUnavailable,))
    stack.push_async_callback(etcd.close)
    return etcd


def run_main(
    service_factory: ServiceFactory[C],
    config_cls: type[C],
    argv: Sequence[str] | None = None,
    *,
    name: str,
) -> NoReturn:
    """The body of a service's __main__: parse config, set up telemetry, run, exit with the outcome."""
    try:
        config = load_config(config_cls, argv)
    except ConfigError as exc:
        print(f"{name}: invalid configuration:\n{exc}", file=sys.stderr)
        sys.exit(2)
    tune_gc()
    sys.exit(run_event_loop(_main(service_factory, config, name)))


def run_event_loop(main: Coroutine[Any, Any, R]) -> R:
    """Run a service's main coroutine on uvloop where it is installed, else on asyncio's own loop.

    A service spends much of its time in the event loop's transport and TLS code (nats-py, grpc): uvloop
    does that work in C, and the whole stack uses about 0.9x the CPU per pod on it (docs/benchmarks.md).
    """
    if uvloop is None:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


# Young-generation size: CPython's default (700) makes a service that folds a few hundred thousand
# events scan its long-lived state over and over; its state is trees of frozen dataclasses with almost
# no cyclic garbage (what dies is freed by its reference count, not by a collection), so collecting
# rarely costs little memory. At 50,000 the collector still took about a fifth of the job-controller's,
# the scheduler's and the node agent's CPU in a 4,500-job burst, most of it scanning new state and then
# scanning it again in the middle generation; at 500,000 the middle generation is almost never
# collected (docs/benchmarks.md, "The garbage collector's young generation").
YOUNG_GENERATION_OBJECTS = 500_000


def tune_gc() -> None:
    """Exempt what start-up built (modules, classes) from every collection and collect less often."""
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_OBJECTS, older, oldest)


async def _main(service_factory: ServiceFactory[C], config: C, name: str) -> int:
    setup_logging(name, level=config.log_level)
    provider = setup_tracing(name)
    log.info("starting", config=dataclasses.asdict(config))
    async with contextlib.AsyncExitStack() as stack:
        stack.callback(provider.shutdown)  # runs last: flushes the spans of the drain too
        try:
            service = await service_factory(config, stack)
        except Exception:
            log.exception("service could not start")
            return 1
        server = MetricsServer(
            default_registry(), service.health, host=config.metrics_host, port=config.metrics_port
        )
        await server.start()
        stack.push_async_callback(server.close)
        log.info("metrics and health endpoints listening", host=config.metrics_host, port=server.port)
        code = await _run_with_signals(service, config.shutdown_timeout_s)
    return code


async def _run_with_signals(service: Service, shutdown_timeout_s: float) -> int:
    loop = asyncio.get_running_loop()
    task = asyncio.create_task(service.run(), name=f"service-{service.name}")
    asked = asyncio.create_task(service.stopping.wait())
    signals_seen: list[int] = []

    def on_signal(signum: int) -> None:
        signals_seen.append(signum)
        name = signal.Signals(signum).name
        if len(signals_seen) == 1:
            log.info("shutdown requested, draining", signal=name)
            service.request_shutdown()
        else:
            log.warning("second signal: stopping without finishing the drain", signal=name)
            task.cancel()

    for signum in _SIGNALS:
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        await asyncio.wait({task, asked}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            done, _ = await asyncio.wait({task}, timeout=shutdown_timeout_s)
            if not done:
                log.error("drain did not finish in time, stopping", timeout_s=shutdown_timeout_s)
                task.cancel()
        await task
    except asyncio.CancelledError:
        return 1
    except Exception:
        log.exception("service crashed")
        return 1
    finally:
        asked.cancel()
        for signum in _SIGNALS:
            loop.remove_signal_handler(signum)
    if not service.stopping.is_set():
        log.error("service stopped without being asked to")
        return 1
    log.info("service stopped cleanly")
    return 0
