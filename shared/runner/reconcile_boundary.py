"""The loop's error boundary around a core's reconcile (docs/reliability.md, "Failing reconciles").

A core's reconcile that raises (a bug, a state nobody foresaw) would stop the service, and raise again
after every restart: a crash loop. Here the failure is kept to the keys that fail:

- a keyed reconcile that raises is done again one key at a time, so every other key's outputs are
  still written; a full reconcile (keys None) that raises is done again over the keys the core lists
  (`reconcile_keys`, optional), or, for a core that lists none, set aside whole;
- a key that raised waits before it is tried again, 1 s doubling to 60 s: its events may heal the state,
  and a key that keeps failing costs one attempt per minute, never a busy loop. Events that touch it
  meanwhile do not bring it back early (each attempt logs a traceback);
- each failure is counted (lahar_runner_reconcile_errors_total), logged with the key and the traceback,
  and, when a key starts failing, recorded on LAHAR_QUARANTINE (ReconcileFailure) for `lahar quarantine
  --reconciles`; the keys failing now are a gauge and in the service's health.

Cores are pure, so a reconcile that raised changed nothing: trying one key again is safe.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, runtime_checkable

import structlog

from contracts.bus_messages import ReconcileFailure
from shared.bus.poison import error_text
from shared.runner.metrics import RunnerMetrics
from shared.runner.quarantine import Quarantine
from shared.runner_types import Core, Key, Output, S

log = structlog.get_logger(__name__)

FIRST_RETRY_S = 1.0
MAX_RETRY_S = 60.0
MAX_KEY_CHARS = 512
FULL = "<full reconcile>"  # what a full reconcile that failed as a whole is filed under
DUE = "<due>"  # and the core's due(), which the timer calls


@runtime_checkable
class ListsReconcileKeys(Protocol):
    """A core that can list every key a full reconcile covers, so that a full reconcile that raised can
    be done again key by key (optional: without it, a full reconcile that raises is set aside whole)."""

    def reconcile_keys(self, state: Any) -> Iterable[Key]: ...


@dataclass(slots=True)
class Failing:
    attempts: int
    retry_at: float  # monotonic
    since: float  # epoch seconds


class ReconcileBoundary(Generic[S]):
    def __init__(
        self,
        core: Core[S],
        metrics: RunnerMetrics,
        quarantine: Quarantine,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.core = core
        self.metrics = metrics
        self.quarantine = quarantine
        self.clock = clock
        self.monotonic = monotonic
        self.failing: dict[Key, Failing] = {}
        self.max_retry_s = MAX_RETRY_S

    def reconcile(self, state: S, now: float, keys: Collection[Key] | None, seq: int) -> list[Output]:
        """What the core decides about keys (None: everything), leaving out the keys that raise."""
        at = self.monotonic()
        if keys is None:
            try:
                outputs = self.core.reconcile(state, now, None)
            except Exception as exc:
                return self._full_failed(state, now, exc, at, seq)
            if self.failing:  # every key was reconciled with it (due() was not)
                self._healed([key for key in self.failing if key != DUE])
            return outputs
        if self.failing:
            keys = [key for key in keys if not self._waiting(key, at)]
            if not keys:
                return []
        try:
            outputs = self.core.reconcile(state, now, keys)
        except Exception:
            return self._one_by_one(state, now, keys, at, seq)
        if self.failing:
            self._healed(keys)
        return outputs

    def timed(self, state: S, now: float, seq: int) -> list[Key]:
        """The core's due() keys, behind the same boundary (filed under DUE): the timer never raises."""
        at = self.monotonic()
        if self.failing and self._waiting(DUE, at):
            return []
        try:
            keys = list(self.core.due(state, now))
        except Exception as exc:
            self._failed(DUE, exc, at, seq)
            return []
        if self.failing:
            self._healed([DUE])
        return keys

    def due(self, now_monotonic: float) -> tuple[list[Key], bool]:
        """The failing keys whose retry is due, and whether a full reconcile's is."""
        due = [key for key, f in self.failing.items() if f.retry_at <= now_monotonic]
        full = FULL in due
        return [key for key in due if key not in (FULL, DUE)], full

    def _waiting(self, key: Key, at: float) -> bool:
        failing = self.failing.get(key)
        return failing is not None and failing.retry_at > at

    def _full_failed(self, state: S, now: float, exc: Exception, at: float, seq: int) -> list[Output]:
        # tried again on its own schedule too: what a full reconcile adds beyond its keys (the binder's
        # plans in flight, the node agent's registrations) is decided only by a full one
        self._failed(FULL, exc, at, seq)
        if not isinstance(self.core, ListsReconcileKeys):
            return []
        try:
            keys = [key for key in self.core.reconcile_keys(state) if not self._waiting(key, at)]
        except Exception as listing:
            log.error(
                "cannot list the keys to reconcile one by one", service=self.metrics.service, exc_info=listing
            )
            return []
        return self._one_by_one(state, now, keys, at, seq)

    def _one_by_one(self, state: S, now: float, keys: Collection[Key], at: float, seq: int) -> list[Output]:
        outputs: list[Output] = []
        for key in keys:
            try:
                outputs.extend(self.core.reconcile(state, now, [key]))
            except Exception as exc:
                self._failed(key, exc, at, seq)
            else:
                if key in self.failing:
                    self._healed([key])
        return outputs

    def _failed(self, key: Key, exc: Exception, at: float, seq: int) -> None:
        failing = self.failing.get(key)
        attempts = 1 if failing is None else failing.attempts + 1
        delay = min(self.max_retry_s, FIRST_RETRY_S * 2 ** min(attempts - 1, 16))
        since = self.clock() if failing is None else failing.since
        self.failing[key] = Failing(attempts, at + delay, since)
        text = _key_text(key)
        self.metrics.reconcile_errors.inc()
        self.metrics.reconcile_failing.set(len(self.failing))
        log.error(
            "reconcile failed",
            service=self.metrics.service,
            key=text,
            attempts=attempts,
            retry_in_s=delay,
            seq=seq,
            error=repr(exc),
            exc_info=exc,
        )
        if failing is None:
            self.quarantine.note(
                ReconcileFailure(
                    service=self.metrics.service,
                    key=text,
                    seq=seq,
                    error_type=type(exc).__name__,
                    error=error_text(exc),
                    time=since,
                )
            )

    def _healed(self, keys: Iterable[Key]) -> None:
        for key in keys:
            failing = self.failing.pop(key, None)
            if failing is not None:
                log.info(
                    "reconcile recovered",
                    service=self.metrics.service,
                    key=_key_text(key),
                    attempts=failing.attempts,
                )
        self.metrics.reconcile_failing.set(len(self.failing))


def _key_text(key: Key) -> str:
    text = key if isinstance(key, str) else repr(key)
    return text if len(text) <= MAX_KEY_CHARS else text[:MAX_KEY_CHARS] + "..."
