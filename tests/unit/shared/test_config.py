"""load_config: defaults < file < environment < flags, typed conversion, every error named."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from shared.config import ConfigError, ServiceConfig, load_config


@dataclasses.dataclass(frozen=True, kw_only=True)
class SchedulerConfig(ServiceConfig):
    """Scheduler replica settings."""

    schedule_period_s: float = 1.0
    replicas: int = 3
    dry_run: bool = False
    actions: tuple[str, ...] = ("enqueue", "allocate")
    conf_file: str | None = None

    def problems(self) -> list[str]:
        problems = super().problems()
        if self.schedule_period_s <= 0:
            problems.append(f"schedule_period_s: expected a positive number, got {self.schedule_period_s}")
        return problems


@dataclasses.dataclass(frozen=True)
class NeedsUrl:
    nats_url: str
    period_s: float = 1.0


def load(argv: list[str] | None = None, env: dict[str, str] | None = None, file: Path | None = None) -> Any:
    return load_config(SchedulerConfig, argv or [], env or {}, file)


def test_defaults() -> None:
    assert load() == SchedulerConfig()


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        ([], {"LAHAR_SCHEDULE_PERIOD_S": "0.5"}, {"schedule_period_s": 0.5}),
        (["--schedule-period-s", "2"], {"LAHAR_SCHEDULE_PERIOD_S": "0.5"}, {"schedule_period_s": 2.0}),
        (["--replicas", "7"], {}, {"replicas": 7}),
        (["--dry-run"], {}, {"dry_run": True}),
        (["--no-dry-run"], {"LAHAR_DRY_RUN": "true"}, {"dry_run": False}),
        ([], {"LAHAR_DRY_RUN": "yes"}, {"dry_run": True}),
        ([], {"LAHAR_DRY_RUN": "0"}, {"dry_run": False}),
        (["--actions", "enqueue, allocate,backfill"], {}, {"actions": ("enqueue", "allocate", "backfill")}),
        ([], {"LAHAR_ACTIONS": ""}, {"actions": ()}),
        (["--conf-file", "/etc/v.conf"], {}, {"conf_file": "/etc/v.conf"}),
        ([], {"LAHAR_CONF_FILE": ""}, {"conf_file": None}),
        (["--etcd-endpoint", "http://10.0.0.1:2379"], {}, {"etcd_endpoint": "http://10.0.0.1:2379"}),
        ([], {"LAHAR_UNRELATED": "x", "SCHEDULE_PERIOD_S": "9"}, {}),  # only LAHAR_<FIELD> counts
    ],
)
def test_environment_and_flags(argv: list[str], env: dict[str, str], expected: dict[str, Any]) -> None:
    assert load(argv, env) == dataclasses.replace(SchedulerConfig(), **expected)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_file_is_the_lowest_explicit_layer(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"scheduler{suffix}"
    if suffix == ".yaml":
        path.write_text("schedule_period_s: 3\nreplicas: 5\nactions: [allocate]\ndry-run: true\n")
    else:
        path.write_text('{"schedule_period_s": 3, "replicas": 5, "actions": ["allocate"], "dry_run": true}')
    config = load(["--config", str(path), "--replicas", "9"], {"LAHAR_SCHEDULE_PERIOD_S": "4"})
    assert (config.schedule_period_s, config.replicas, config.actions, config.dry_run) == (
        4.0,
        9,
        ("allocate",),
        True,
    )
    assert load_config(SchedulerConfig, [], {}, file=path).replicas == 5  # the file argument, no flag


def test_etcd_host_port() -> None:
    assert load(["--etcd-endpoint", "http://10.0.0.1:2379"]).etcd_host_port == ("10.0.0.1", 2379)
    assert SchedulerConfig().etcd_host_port == ("127.0.0.1", 2379)


def test_every_bad_value_is_reported_with_its_field_and_source(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("replicas: many\ncolour: blue\n")
    with pytest.raises(ConfigError) as caught:
        load(
            ["--config", str(path), "--schedule-period-s", "fast"],
            {"LAHAR_DRY_RUN": "maybe", "LAHAR_ACTIONS": "a", "LAHAR_METRICS_PORT": "1.5"},
        )
    assert caught.value.problems == [
        f"colour: unknown field (in config file {path}); known: "
        + ", ".join(f.name for f in dataclasses.fields(SchedulerConfig)),
        f"replicas: expected an integer, got 'many' (from config file {path})",
        "metrics_port: expected an integer, got '1.5' (from environment LAHAR_METRICS_PORT)",
        "schedule_period_s: expected a number, got 'fast' (from flag --schedule-period-s)",
        "dry_run: expected true or false, got 'maybe' (from environment LAHAR_DRY_RUN)",
    ]
    assert str(caught.value).startswith("colour: unknown field")


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (
            ["--schedule-period-s", "nan"],
            "schedule_period_s: expected a number, got 'nan' (from flag --schedule-period-s)",
        ),
        (["--schedule-period-s", "-1"], "schedule_period_s: expected a positive number, got -1.0"),
        (["--metrics-port", "70000"], "metrics_port: expected 0..65535, got 70000"),
        (["--etcd-endpoint", "localhost"], "etcd_endpoint: expected host:port, got 'localhost'"),
        (["--log-level", "loud"], "log_level: expected debug, info, warning or error, got 'loud'"),
        (["--replicas", "2", "--frobnicate"], "unknown argument(s): --frobnicate"),
    ],
)
def test_invalid_values(argv: list[str], problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(argv)
    assert caught.value.problems == [problem]


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read it"):
        load(["--config", str(tmp_path / "missing.yaml")])
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="expected a mapping of field: value, got list"):
        load(["--config", str(tmp_path / "list.yaml")])
    (tmp_path / "bad.yaml").write_text("a: [\n")
    with pytest.raises(ConfigError, match="not YAML or JSON"):
        load(["--config", str(tmp_path / "bad.yaml")])


def test_required_fields_must_be_given() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(NeedsUrl, [], {})
    assert caught.value.problems == [
        "nats_url: required (set --nats-url, LAHAR_NATS_URL or nats_url in the config file)"
    ]
    assert load_config(NeedsUrl, [], {"LAHAR_NATS_URL": "nats://h:4222"}) == NeedsUrl("nats://h:4222")


def test_help_lists_the_generated_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        load(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    for flag in (
        "--config FILE",
        "--schedule-period-s NUMBER",
        "--dry-run, --no-dry-run",
        "--actions A,B,...",
    ):
        assert flag in out
    assert "LAHAR_SCHEDULE_PERIOD_S" in out


def test_the_config_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        load().replicas = 2  # type: ignore[misc]


def test_etcd_endpoints_list_the_members_of_a_cluster_in_order() -> None:
    config = load(["--etcd-endpoint", "etcd-1:2379, http://etcd-2:2379,etcd-3:2379"])
    assert config.etcd_endpoints == [("etcd-1", 2379), ("etcd-2", 2379), ("etcd-3", 2379)]
    assert config.etcd_host_port == ("etcd-1", 2379)
    with pytest.raises(ValueError, match="expected host:port, got 'etcd-2'"):
        _ = load(["--etcd-endpoint", "etcd-1:2379,etcd-2"]).etcd_endpoints


def test_etcd_credentials_come_together_from_flags_or_environment(tmp_path: Path) -> None:
    password = tmp_path / "binder.etcd"
    password.write_text("secret\n")
    env = {"LAHAR_ETCD_USER": "binder", "LAHAR_ETCD_PASSWORD_FILE": str(password)}
    config = load_config(ServiceConfig, [], env=env)
    assert (config.etcd_user, config.etcd_password_file) == ("binder", str(password))
    with pytest.raises(ConfigError) as only_user:
        load_config(ServiceConfig, ["--etcd-user", "binder"], env={})
    assert "etcd_password_file: required with etcd_user" in str(only_user.value)
    with pytest.raises(ConfigError) as missing:
        load_config(ServiceConfig, ["--etcd-password-file", str(tmp_path / "none")], env={})
    assert "etcd_user: required" in str(missing.value) and "no such file" in str(missing.value)
