"""ops/ is checked against the code: the files parse, every metric an alert or a dashboard panel queries
is one the services register (with the labels it selects on), every alert links to its own runbook, and
Prometheus scrapes every lahar service of the compose topology.

The exported metrics are read from the sources (calls to a registry's counter/gauge/histogram with a
literal name, see shared/telemetry/metrics.py), so a renamed or removed metric fails here rather than
leaving a silent dashboard panel or an alert that can never fire."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import yaml
from support.ops_allowlist import NOT_YET_EXPORTED
from support.prometheus_server import configured_rule_files
from support.promql import parse_query

from services.admission.service import AdmissionMetrics
from services.binder.metrics import BinderMetrics
from services.scheduler.metrics import SchedulerMetrics
from shared.runner.metrics import RunnerMetrics
from shared.telemetry.metrics import Registry

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "ops"
PROMETHEUS = OPS / "prometheus" / "prometheus.yml"
ALERTS = OPS / "prometheus" / "alerts.yml"
RULES = OPS / "prometheus" / "rules-seed.yml"  # recording rules: seed 000's live figures
DASHBOARD = OPS / "grafana" / "lahar-overview.json"
RUNBOOKS = OPS / "runbooks"
COMPOSE = ROOT / "deploy" / "compose" / "docker-compose.yaml"
METRICS_PORT = 9100
LOCAL_PREFIX = "#| "  # the commented local variant inside prometheus.yml

# Labels Prometheus attaches to every scraped series (the target's), and the series it makes itself.
TARGET_LABELS = frozenset({"job", "instance"})
SYNTHETIC = {"up": TARGET_LABELS}


# --- what the code exports ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Family:
    """One registered metric family; an f-string name's placeholders match any lowercase word."""

    name: re.Pattern[str]
    kind: str
    labels: frozenset[str]
    source: str

    def exposed(self, series: str) -> frozenset[str] | None:
        """The labels of the exposed series `series` if it belongs to this family, else None."""
        if self.kind != "histogram":
            return self.labels if self.name.fullmatch(series) else None
        base, _, suffix = series.rpartition("_")
        if suffix not in ("bucket", "sum", "count") or not self.name.fullmatch(base):
            return None
        return self.labels | {"le"} if suffix == "bucket" else self.labels


def _name_pattern(node: ast.expr) -> re.Pattern[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.compile(re.escape(node.value))
    if isinstance(node, ast.JoinedStr):
        parts = [
            re.escape(v.value) if isinstance(v, ast.Constant) else "[a-z_]+"
            for v in node.values
            if isinstance(v, ast.Constant | ast.FormattedValue)
        ]
        return re.compile("".join(parts))
    return None


def _string_tuple(node: ast.expr) -> frozenset[str] | None:
    if isinstance(node, ast.Tuple | ast.List) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return frozenset(e.value for e in node.elts)  # type: ignore[attr-defined]
    return None


def _labels(call: ast.Call, tree: ast.Module, where: str) -> frozenset[str]:
    given = call.args[2] if len(call.args) > 2 else None
    given = next((k.value for k in call.keywords if k.arg == "labels"), given)
    if given is None:
        return frozenset()
    labels = _string_tuple(given)
    if labels is None and isinstance(given, ast.Name):  # e.g. `labels = ("job_name", "queue_name")`
        assigned = [
            _string_tuple(n.value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == given.id for t in n.targets)
        ]
        labels = assigned[0] if len(assigned) == 1 else None
    if labels is None:
        raise AssertionError(f"{where}: cannot read the metric's labels; give them as a literal tuple")
    return labels


def _scraped_kind(call: ast.Call) -> str:
    """A family read at scrape time (Registry.scraped) is a gauge unless its kind says counter."""
    given = call.args[3] if len(call.args) > 3 else None
    given = next((k.value for k in call.keywords if k.arg == "kind"), given)
    return given.value if isinstance(given, ast.Constant) else "gauge"


@cache
def registered() -> tuple[Family, ...]:
    families = []
    for path in sorted([*(ROOT / "services").rglob("*.py"), *(ROOT / "shared").rglob("*.py")]):
        tree = ast.parse(path.read_text(), filename=str(path))
        for call in ast.walk(tree):
            if not (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr in ("counter", "gauge", "histogram", "scraped")
                and call.args
            ):
                continue
            name = _name_pattern(call.args[0])
            if name is not None:
                where = f"{path.relative_to(ROOT)}:{call.lineno}"
                kind = call.func.attr if call.func.attr != "scraped" else _scraped_kind(call)
                families.append(Family(name, kind, _labels(call, tree, where), where))
    return tuple(families)


def exported_labels(series: str) -> frozenset[str] | None:
    """The labels a query may select on for the series name, or None when nothing exports it."""
    return recorded().get(series) or scraped_labels(series)


def scraped_labels(series: str) -> frozenset[str] | None:
    """The labels of a series a scrape brings (the services' own and the target's), None if none does."""
    if series in SYNTHETIC:
        return SYNTHETIC[series]
    return _code_labels(series)


def _code_labels(series: str) -> frozenset[str] | None:
    for family in registered():
        labels = family.exposed(series)
        if labels is not None:
            return labels | TARGET_LABELS
    return None


@cache
def recorded() -> dict[str, frozenset[str]]:
    return recorded_in(tuple(configured_rule_files()))


def recorded_in(paths: tuple[Path, ...]) -> dict[str, frozenset[str]]:
    """The series the recording rules in these files make, with the labels they keep: the grouping of an
    aggregating expression (by its own scan, so approximate for `without`), else its selectors' labels;
    plus the rule's own labels."""
    found: dict[str, frozenset[str]] = {}
    for path in paths:
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                if "record" not in rule:
                    continue
                query = parse_query(rule["expr"])
                kept = query.grouping or frozenset().union(
                    *(found.get(s.name) or scraped_labels(s.name) or frozenset() for s in query.selectors)
                )
                found[rule["record"]] = kept | frozenset(rule.get("labels", {}))
    return found


# --- what ops/ queries ---------------------------------------------------------------------------------
def alert_rules() -> list[dict]:
    return [rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]]


def recording_rules() -> list[dict]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def dashboard_queries() -> list[tuple[str, str]]:
    board = dashboard()
    queries = [
        (f"panel {p['title']!r} {t['refId']}", t["expr"])
        for p in board["panels"]
        for t in p.get("targets", [])
    ]
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            found = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", variable["query"]["query"])
            assert found, f"variable {variable['name']}: expected label_values(metric, label)"
            metric, label = found.groups()
            queries.append((f"variable {variable['name']}", f"sum by ({label}) ({metric})"))
    return queries


ALL_QUERIES = (
    [(f"alert {r['alert']}", r["expr"]) for r in alert_rules()]
    + [(f"recording rule {r['record']}", r["expr"]) for r in recording_rules()]
    + dashboard_queries()
)


def query_problems(expr: str) -> list[str]:
    query = parse_query(expr)
    assert query.selectors, f"no metric in {expr!r}"
    problems, available = [], set(TARGET_LABELS)
    awaited = [s.name for s in query.selectors if s.name in NOT_YET_EXPORTED]
    for selector in query.selectors:
        name, matched = selector.name, selector.labels
        if name in awaited:
            continue
        labels = exported_labels(name)
        if labels is None:
            problems.append(f"{name} is not exported by any service")
            continue
        available |= labels
        if matched - labels:
            problems.append(f"{name} has no label(s) {sorted(matched - labels)}")
    # an awaited series' labels are not known yet: the grouping is checked once it is exported
    if not problems and not awaited and query.grouping - available:
        problems.append(f"grouping by label(s) no selected metric has: {sorted(query.grouping - available)}")
    return problems


# --- tests ---------------------------------------------------------------------------------------------
def local_variant() -> str:
    lines = PROMETHEUS.read_text().splitlines()
    return "\n".join(line[len(LOCAL_PREFIX) :] for line in lines if line.startswith(LOCAL_PREFIX)) + "\n"


def test_the_files_parse() -> None:
    for path in (PROMETHEUS, ALERTS, RULES):
        assert isinstance(yaml.safe_load(path.read_text()), dict), path
    local = yaml.safe_load(local_variant())
    assert local["scrape_configs"] and local["rule_files"] == ["alerts.yml", "rules-seed.yml"]
    assert dashboard()["panels"]
    assert alert_rules()


def test_the_scan_finds_what_the_metric_classes_register() -> None:
    registry = Registry()
    SchedulerMetrics(registry).export(dict)
    BinderMetrics(registry)
    AdmissionMetrics(registry)
    RunnerMetrics(registry, "svc")
    live = re.findall(r"^# TYPE (\S+) (\S+)$", registry.render(), re.MULTILINE)
    assert len(live) > 40
    for name, kind in live:
        kind = "counter" if kind == "untyped" else kind  # a counter not named *_total is exposed untyped
        assert any(f.name.fullmatch(name) and f.kind == kind for f in registered()), (name, kind)
    # f-string names and labels given by a variable are read too
    assert exported_labels("volcano_queue_pod_group_pending_count") == {"queue_name"} | TARGET_LABELS
    assert exported_labels("volcano_job_failed_phase_count") == {"job_name", "queue_name"} | TARGET_LABELS
    assert (
        exported_labels("lahar_runner_reconcile_duration_seconds_bucket") == {"service", "le"} | TARGET_LABELS
    )
    assert exported_labels("lahar_runner_reconcile_duration_seconds") is None
    assert exported_labels("volcano_queue_allocated_milli_cpu") == {"queue_name"} | TARGET_LABELS
    assert (
        exported_labels("volcano_queue_real_capacity_scalar_resources")
        == {
            "queue_name",
            "resource",
        }
        | TARGET_LABELS
    )
    assert exported_labels("lahar_no_such_series") is None


def test_recorded_series_are_read_from_the_rule_files(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text(
        yaml.safe_dump(
            {
                "groups": [
                    {
                        "name": "g",
                        "rules": [
                            {
                                "record": "a:by_queue",
                                "expr": "sum by (queue_name) (volcano_queue_pod_group_pending_count)",
                            },
                            {
                                "record": "a:rate",
                                "expr": "rate(volcano_schedule_attempts_total[1m])",
                                "labels": {"k": "v"},
                            },
                            {"alert": "NotARecord", "expr": "up == 0"},
                        ],
                    }
                ]
            }
        )
    )
    assert recorded_in((rules,)) == {
        "a:by_queue": {"queue_name"},
        "a:rate": {"result", "k"} | TARGET_LABELS,
    }


def test_the_query_scanner() -> None:
    query = parse_query(
        'histogram_quantile(0.99, sum by (instance, le) (rate(a_bucket{x="y}", z=~"$q"}[$__rate_interval])))'
        ' / on (job) group_left b offset 5m > 1e3 and c unless d{e!="f"} offset $__range'
    )
    assert [(s.name, s.labels) for s in query.selectors] == [
        ("a_bucket", {"x", "z"}),
        ("b", set()),
        ("c", set()),
        ("d", {"e"}),
    ]
    assert [s.text for s in query.selectors] == ['a_bucket{x="y}", z=~"$q"}', "b", "c", 'd{e!="f"}']
    ranged = parse_query("sum(rate(x_total[5m])) / y {a='b'}")
    assert [s.text for s in ranged.selectors] == ["x_total", "y {a='b'}"]
    assert query.grouping == {"instance", "le", "job"}


@pytest.mark.parametrize(("where", "expr"), ALL_QUERIES, ids=[w for w, _ in ALL_QUERIES])
def test_every_queried_metric_is_exported(where: str, expr: str) -> None:
    assert query_problems(expr) == [], f"{where}: {expr}"


def test_the_awaited_series_are_not_exported_yet() -> None:
    exported = sorted(name for name in NOT_YET_EXPORTED if exported_labels(name) is not None)
    assert not exported, (
        f"exported now: remove them from NOT_YET_EXPORTED (tests/support/ops_allowlist.py): {exported}"
    )


def test_every_alert_has_its_own_runbook() -> None:
    used: dict[str, str] = {}
    for rule in alert_rules():
        name, link = rule["alert"], rule.get("annotations", {}).get("runbook_url")
        assert link, f"{name} has no runbook_url annotation"
        path = ROOT / link
        assert path.parent == RUNBOOKS and path.suffix == ".md" and path.is_file(), f"{name}: {link}"
        assert path.read_text().startswith(f"# {name}\n"), f"{link} should be titled with the alert's name"
        assert used.get(link, name) == name, f"{name} and {used[link]} share {link}"
        used[link] = name
    orphans = {str(p.relative_to(ROOT)) for p in RUNBOOKS.glob("*.md")} - set(used)
    assert not orphans, f"runbooks no alert links to: {sorted(orphans)}"


def test_every_alert_has_a_severity_and_a_summary() -> None:
    for rule in alert_rules():
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]


def test_prometheus_scrapes_every_lahar_service_of_the_compose_topology() -> None:
    config = yaml.safe_load(PROMETHEUS.read_text())
    assert [ALERTS.parent / f for f in config["rule_files"]] == [ALERTS, RULES]
    targets = set()
    for job in config["scrape_configs"]:
        for static in job.get("static_configs", []):
            targets.update(static["targets"])
        for dns in job.get("dns_sd_configs", []):
            targets.update(f"{name}:{dns['port']}" for name in dns["names"])
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    # every long-running lahar service (the one-shot provisioner serves no metrics: its health check is off)
    lahar = {
        name
        for name, s in services.items()
        if str(s.get("command", [""])[0]).startswith("services.")
        and not s.get("healthcheck", {}).get("disable", False)
    }
    assert "admission" in lahar and "provisioner" not in lahar
    assert lahar, "no lahar service found in the compose file"
    missing = {f"{name}:{METRICS_PORT}" for name in lahar} - targets
    assert not missing, f"not scraped: {sorted(missing)}"


def test_dashboard_panels_are_well_formed() -> None:
    board = dashboard()
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    assert {v["name"] for v in board["templating"]["list"]} >= {"datasource"}
    for panel in board["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"] and all(t["expr"].strip() for t in panel["targets"]), panel["title"]


def test_promtool_accepts_the_config_and_the_rules(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Prometheus) is not installed")
    (tmp_path / "prometheus.yml").write_text(local_variant())
    shutil.copy(ALERTS, tmp_path / "alerts.yml")
    shutil.copy(RULES, tmp_path / "rules-seed.yml")
    (tmp_path / "lahar-targets.json").write_text("[]")
    for args in (
        ["check", "config", str(PROMETHEUS)],
        ["check", "config", str(tmp_path / "prometheus.yml")],
        ["check", "rules", str(ALERTS)],
        ["check", "rules", str(RULES)],
    ):
        result = subprocess.run([promtool, *args], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
