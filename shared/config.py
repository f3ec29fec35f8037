"""Typed service configuration: one frozen dataclass per service, filled from four layers.

Lowest to highest precedence: the dataclass defaults, a YAML or JSON file (``--config FILE``), environment
variables ``LAHAR_<FIELD>`` and command-line flags ``--field-name VALUE`` generated from the fields. Field
types may be bool, int, float, str, tuple[str, ...] (comma lists outside files) and any of them
``| None``. Every bad value is reported at once, each error naming its field and where the value came from.
Units belong in field names (``schedule_period_s``), so no value carries a unit.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

T = TypeVar("T")

ENV_PREFIX = "LAHAR_"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class ConfigError(ValueError):
    """The configuration is invalid; problems lists every reason, one per bad field."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServiceConfig:
    """Fields every service has. A service's config subclasses this (frozen too), adds its fields (keyword
    only here, so a subclass's fields may be required) and checks them by extending problems()."""

    nats_url: str = "nats://127.0.0.1:4222"
    nats_creds: str = ""  # the service's credentials file (an nkey seed); empty: the server is open
    tls_ca: str = ""  # the CA file NATS's and etcd's certificates must chain to; empty: both plain TCP
    etcd_endpoint: str = "127.0.0.1:2379"
    metrics_host: str = "127.0.0.1"
    metrics_port: int = 0  # 0: pick a free port (logged at start)
    log_level: str = "info"
    shutdown_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ConfigError(problems)

    def problems(self) -> list[str]:
        """What is wrong with the values, one line per field; subclasses extend the list (call super())."""
        problems = []
        if self.log_level not in ("debug", "info", "warning", "error"):
            problems.append(f"log_level: expected debug, info, warning or error, got {self.log_level!r}")
        if not 0 <= self.metrics_port <= 65535:
            problems.append(f"metrics_port: expected 0..65535, got {self.metrics_port}")
        if self.shutdown_timeout_s <= 0:
            problems.append(f"shutdown_timeout_s: expected a positive number, got {self.shutdown_timeout_s}")
        try:
            _ = self.etcd_host_port
        except ValueError as exc:
            problems.append(f"etcd_endpoint: {exc}")
        if self.tls_ca and not Path(self.tls_ca).is_file():
            problems.append(f"tls_ca: no such file {self.tls_ca!r}")
        return problems

    @property
    def etcd_host_port(self) -> tuple[str, int]:
        """The first etcd endpoint as (host, port)."""
        return self.etcd_endpoints[0]

    @property
    def etcd_endpoints(self) -> list[tuple[str, int]]:
        """etcd_endpoint as (host, port) pairs (parse_endpoints)."""
        return parse_endpoints(self.etcd_endpoint)


def parse_endpoints(text: str) -> list[tuple[str, int]]:
    """A comma-separated list of ``host:port``, each with or without ``http://`` (the members of an
    etcd cluster), as (host, port) pairs; ValueError naming the first one that is not."""
    out = []
    for item in text.split(","):
        endpoint = item.strip().removeprefix("http://")
        host, sep, port = endpoint.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"expected host:port, got {item.strip()!r}")
        out.append((host, int(port)))
    return out


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def flag_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def load_config(
    cls: type[T],
    argv: Sequence[str] | None = None,
    env: Mapping[str, str] = os.environ,
    file: str | Path | None = None,
) -> T:
    """Build cls from its defaults, the config file, the environment and argv (None: sys.argv[1:]).

    ``--config FILE`` in argv overrides the file argument. ``--help`` prints the generated flags and exits.
    Raises ConfigError listing every problem.
    """
    if not (dataclasses.is_dataclass(cls) and isinstance(cls, type)):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    fields = {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}
    flags = _parse_flags(cls, fields, argv)
    raw: dict[str, tuple[object, str]] = {}  # field -> (value, where it came from)
    problems: list[str] = []
    path = flags.pop("config", None) or file
    if path is not None:
        raw.update(_read_file(Path(path), fields, problems))
    for name in fields:
        if env_name(name) in env:
            raw[name] = (env[env_name(name)], f"environment {env_name(name)}")
        if flags.get(name) is not None:
            raw[name] = (flags[name], f"flag {flag_name(name)}")
    values: dict[str, Any] = {}
    for name, (value, source) in raw.items():
        try:
            values[name] = _convert(value, fields[name])
        except ValueError as exc:
            problems.append(f"{name}: {exc} (from {source})")
    missing = [f.name for f in dataclasses.fields(cls) if f.init and f.name not in raw and _required(f)]
    problems += [
        f"{name}: required (set {flag_name(name)}, {env_name(name)} or {name} in the config file)"
        for name in missing
    ]
    if problems:
        raise ConfigError(problems)
    try:
        return cls(**values)
    except ConfigError:
        raise
    except (ValueError, TypeError) as exc:
        raise ConfigError([str(exc)]) from exc


def _required(field: dataclasses.Field[Any]) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _parse_flags(cls: type, fields: Mapping[str, Any], argv: Sequence[str] | None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(cls.__doc__ or "").strip().split("\n")[0] or None)
    parser.add_argument("--config", metavar="FILE", help="YAML or JSON file of field: value")
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    for name, hint in fields.items():
        base, _ = _unwrap_optional(hint)
        shown = defaults[name]
        help_text = f"default: {shown!r}; env {env_name(name)}" if shown is not dataclasses.MISSING else None
        if base is bool:
            parser.add_argument(
                flag_name(name), dest=name, action=argparse.BooleanOptionalAction, help=help_text
            )
        else:
            # Values stay strings here; _convert checks them all so every bad one is reported together.
            parser.add_argument(flag_name(name), dest=name, metavar=_metavar(base), help=help_text)
    parsed, unknown = parser.parse_known_args(argv)
    if unknown:
        raise ConfigError([f"unknown argument(s): {' '.join(unknown)}"])
    return vars(parsed)


def _metavar(base: Any) -> str:
    if base is int:
        return "INT"
    if base is float:
        return "NUMBER"
    if typing.get_origin(base) is tuple:
        return "A,B,..."
    return "TEXT"


def _read_file(path: Path, fields: Mapping[str, Any], problems: list[str]) -> dict[str, tuple[object, str]]:
    try:
        data = yaml.safe_load(path.read_text())  # YAML is a superset of JSON
    except OSError as exc:
        problems.append(f"config file {path}: cannot read it ({exc.strerror})")
        return {}
    except yaml.YAMLError as exc:
        problems.append(f"config file {path}: not YAML or JSON ({exc})")
        return {}
    if data is None:
        return {}
    if not isinstance(data, dict):
        problems.append(f"config file {path}: expected a mapping of field: value, got {type(data).__name__}")
        return {}
    out: dict[str, tuple[object, str]] = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in fields:
            problems.append(f"{key}: unknown field (in config file {path}); known: {', '.join(fields)}")
        else:
            out[name] = (value, f"config file {path}")
    return out


def _unwrap_optional(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0], True
        raise TypeError(f"unsupported config field type {hint!r}")
    return hint, False


def _convert(value: object, hint: Any) -> Any:
    base, optional = _unwrap_optional(hint)
    if optional and (value is None or value == ""):
        return None
    if base is bool:
        return _to_bool(value)
    if base is int:
        return _to_int(value)
    if base is float:
        return _to_float(value)
    if base is str:
        if isinstance(value, str):
            return value
        raise ValueError(f"expected a string, got {value!r}")
    if typing.get_origin(base) is tuple and typing.get_args(base) == (str, ...):
        return _to_str_tuple(value)
    raise TypeError(f"unsupported config field type {hint!r}")


def _to_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"expected true or false, got {value!r}")


def _to_int(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ValueError(f"expected an integer, got {value!r}")


def _to_float(value: object) -> float:
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = float(value.strip())
    # inf and nan parse as floats but are never a meaningful period, timeout or ratio.
    if number is None or not math.isfinite(number):
        raise ValueError(f"expected a number, got {value!r}")
    return number


def _to_str_tuple(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise ValueError(f"expected a comma-separated list or a list of strings, got {value!r}")
