"""`lahar simulate`'s descheduler options: a descheduler policy runs the descheduler's core on the
simulated clock (services/simulator/descheduling.py), with the service's timing and cool-down flags."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from contracts.errors import ManifestError
from services.descheduler.core.evictor import Settings
from services.descheduler.core.policy_parse import parse_policy
from services.simulator.descheduling import DEFAULT_INTERVAL_S, SimDescheduler

DEFAULT_COOLDOWN_S = Settings().cooldown_s


class OptionError(ValueError):
    """Every problem with the descheduler options, one per line, each naming its option."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


def add_arguments(p: argparse.ArgumentParser, duration: Callable[[str], float]) -> None:
    p.add_argument(
        "--descheduler-policy",
        metavar="FILE",
        help="run the descheduler with this descheduler/v1alpha2 DeschedulerPolicy on the simulated "
        "clock; LoadAware reads the simulated usage, whatever its metrics type (default: no descheduler)",
    )
    p.add_argument(
        "--descheduling-interval",
        type=duration,
        metavar="DURATION",
        help="with --descheduler-policy: how often it runs on the simulated clock, e.g. 60s "
        f"(default {DEFAULT_INTERVAL_S / 60:.0f}m)",
    )
    p.add_argument(
        "--descheduler-cooldown",
        type=duration,
        metavar="DURATION",
        help="with --descheduler-policy: how long a descheduled pod is left alone "
        f"(default {DEFAULT_COOLDOWN_S / 60:.0f}m)",
    )


def descheduler_from(args: argparse.Namespace, usage_stale_after_s: float) -> SimDescheduler | None:
    """The descheduler the options ask for (None: no policy given). Raises OptionError naming every
    problem: a policy that cannot be read or is invalid (each field by its path), a timing flag
    without a policy."""
    path = args.descheduler_policy
    if not path:
        given = [
            flag
            for flag, value in (
                ("--descheduling-interval", args.descheduling_interval),
                ("--descheduler-cooldown", args.descheduler_cooldown),
            )
            if value is not None
        ]
        if given:
            raise OptionError([f"{flag}: only with --descheduler-policy" for flag in given])
        return None
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise OptionError([f"--descheduler-policy: cannot read {path}: {exc.strerror or exc}"]) from exc
    try:
        policy = parse_policy(text, path)
    except ManifestError as exc:
        raise OptionError([f"--descheduler-policy: {error}" for error in exc.errors]) from exc
    interval = args.descheduling_interval if args.descheduling_interval is not None else DEFAULT_INTERVAL_S
    cooldown = args.descheduler_cooldown if args.descheduler_cooldown is not None else DEFAULT_COOLDOWN_S
    return SimDescheduler(policy, interval, Settings(cooldown, usage_stale_after_s))
