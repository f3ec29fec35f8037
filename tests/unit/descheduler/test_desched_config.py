"""The descheduler's run timing: a non-zero --descheduling-interval wins (Volcano's precedence), 0 runs on
the cron expression, read by the same parser as a CronJob's schedule (contracts/cron.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from contracts.cron import next_time
from services.descheduler.config import DeschedulerConfig
from shared.config import ConfigError

POLICY = str(Path(__file__).resolve().parents[3] / "examples" / "descheduler" / "policy.yaml")


def config(**fields: str) -> DeschedulerConfig:
    return DeschedulerConfig(policy_config_file=POLICY, **fields)


def test_an_interval_wins_over_a_cron_expression() -> None:
    chosen = config(descheduling_interval="90s", descheduling_interval_cron_expression="*/15 * * * *")
    assert chosen.interval_s == 90 and chosen.schedule is None


def test_interval_zero_runs_on_the_cron_expression() -> None:
    schedule = config(
        descheduling_interval="0", descheduling_interval_cron_expression="*/15 * * * *"
    ).schedule
    assert schedule is not None
    after = datetime(2026, 3, 1, 10, 2, 30, tzinfo=UTC).timestamp()
    assert next_time(schedule, after) == datetime(2026, 3, 1, 10, 15, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"descheduling_interval": "0", "descheduling_interval_cron_expression": "61 * * * *"}, "minute"),
        ({"descheduling_interval": "0"}, "descheduling_interval_cron_expression, which is empty"),
    ],
)
def test_a_bad_schedule_is_named(fields: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        config(**fields)
