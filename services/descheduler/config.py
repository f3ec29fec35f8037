"""The descheduler's configuration: its policy file, when it runs (Volcano's flags), dry run, and lahar's
own knobs (the cool-down, how stale a usage sample may be)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from contracts.cron import Schedule, ScheduleError, parse_schedule
from contracts.errors import ManifestError
from contracts.parse_fields import duration_seconds
from services.descheduler.core.evictor import Settings
from services.descheduler.core.policy import DeschedulerPolicy
from services.descheduler.core.policy_parse import parse_policy
from shared.runner import RunnerConfig

DEFAULT_INTERVAL = "10m"  # Volcano's descheduler runs every 10 minutes unless told otherwise


@dataclasses.dataclass(frozen=True, kw_only=True)
class DeschedulerConfig(RunnerConfig):
    """lahar descheduler: evicts pods from overloaded or underused nodes by its policy, via the binder.

    Durations are Go's (60s, 10m, 1h30m), as Volcano's flags take them."""

    policy_config_file: str  # a descheduler/v1alpha2 DeschedulerPolicy (Volcano's --policy-config-file)
    descheduling_interval: str = DEFAULT_INTERVAL  # a Go duration; 0: run on the cron expression
    # five-field cron (UTC, or a CRON_TZ=zone prefix); used when the interval is 0
    descheduling_interval_cron_expression: str = ""
    dry_run: bool = False  # list what would be evicted and why, evict nothing
    cooldown: str = "30m"  # a pod the descheduler evicted is left alone this long (its replacement too)
    usage_stale_after: str = "5m"  # LoadAware: a node whose newest usage sample is older is not judged

    def problems(self) -> list[str]:
        problems = super().problems()
        for name in ("descheduling_interval", "cooldown", "usage_stale_after"):
            try:
                seconds = duration_seconds(getattr(self, name))
            except ValueError as exc:
                problems.append(f"{name}: {exc}")
                continue
            if seconds < 0:
                problems.append(f"{name}: expected a non-negative duration, got {getattr(self, name)!r}")
        if self.descheduling_interval_cron_expression:
            try:
                parse_schedule(self.descheduling_interval_cron_expression)
            except ScheduleError as exc:
                problems.append(f"descheduling_interval_cron_expression: {exc}")
        elif not problems and duration_seconds(self.descheduling_interval) == 0:
            problems.append(
                "descheduling_interval: 0 runs on descheduling_interval_cron_expression, which is empty"
            )
        path = Path(self.policy_config_file)
        if not path.is_file():
            problems.append(f"policy_config_file: no such file {self.policy_config_file!r}")
        else:
            try:
                parse_policy(path.read_text(), str(path))
            except ManifestError as exc:
                problems += [f"policy_config_file: {error}" for error in exc.errors]
        return problems

    @property
    def interval_s(self) -> float:
        """0: the cron expression decides (Volcano: a non-zero interval takes precedence)."""
        return duration_seconds(self.descheduling_interval)

    @property
    def schedule(self) -> Schedule | None:
        """The cron schedule runs follow (UTC unless the expression names a zone with CRON_TZ=), when
        the interval is 0; the same parser as a CronJob's (contracts/cron.py)."""
        if self.interval_s > 0 or not self.descheduling_interval_cron_expression:
            return None
        return parse_schedule(self.descheduling_interval_cron_expression)

    @property
    def settings(self) -> Settings:
        return Settings(duration_seconds(self.cooldown), duration_seconds(self.usage_stale_after))

    def policy(self) -> DeschedulerPolicy:
        path = Path(self.policy_config_file)
        return parse_policy(path.read_text(), str(path))
