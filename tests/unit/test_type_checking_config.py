"""mypy's configuration in pyproject.toml. "Strict on contracts/, shared/, every core/ and ops/" has to be
spelt out flag by flag in an override section (`strict = true` there would switch strict mode on for every
module), so the list must keep up with what --strict means in the mypy the project installs."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from mypy.main import define_options

ROOT = Path(__file__).resolve().parents[2]
STRICT_MODULES = ["contracts.*", "shared.*", "services.*.core.*", "ops.*"]


def _mypy_config() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    return config


def _strict_override(config: dict[str, Any]) -> dict[str, Any]:
    (override,) = [o for o in config["overrides"] if o["module"] == STRICT_MODULES]
    return {key: value for key, value in override.items() if key != "module"}


def test_the_strict_modules_get_every_flag_of_mypys_strict_mode() -> None:
    config = _mypy_config()
    override = _strict_override(config)
    # what --strict sets, as (option, value): ("disallow_untyped_defs", True), ("implicit_reexport", False)
    _, _, strict_assignments = define_options()
    missing = [
        (option, value)
        for option, value in strict_assignments
        # an option only the global section takes (warn_unused_ignores, ...) counts there
        if override.get(option, config.get(option)) != value
    ]
    assert not missing, f"add to the strict override in pyproject.toml: {missing}"


def test_strict_mode_is_not_switched_on_for_everything() -> None:
    # `strict = true` in an override section would apply to every module, the shells and the CLI too
    config = _mypy_config()
    assert "strict" not in config
    assert all("strict" not in override for override in config["overrides"])
