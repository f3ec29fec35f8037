"""The dashboards and alerts of ops/, run by a real Prometheus against a running stack with a workload.

A stack of three hollow nodes runs Volcano's tiers with the reclaim action (and the usage plugin), the
descheduler in dry-run, and a small workload: gang jobs of two tenants (namespaces) fill the cluster from
queue `batch`, then gang jobs arrive in queue `capped`, whose capability holds it to 6 cpu, and take back
from `batch`, which holds more than its share. Prometheus (Debian's package, which `scripts/dev setup`
installs) scrapes every service each second, with the rule files ops/prometheus/prometheus.yml loads and
alerts.yml.

Then every query of every dashboard in ops/grafana (panels and variables, Grafana's variables filled in as
Grafana would), of every alert and of every recording rule must be valid PromQL and return data, or be
empty for a reason: a series it reads is one the workload never makes (QUIET below, each with why), or is
not exported yet (tests/support/ops_allowlist.py). An alert or a recording rule whose series all have
data may be empty: its condition does not hold. The key panels are rendered to PNG by
ops/render_panels.py, as someone without Grafana would."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e.conftest import Stack, start_stack, stop_stack
from e2e.dashboards_workload import ARRIVE, DESCHEDULER_POLICY, FILL, JOBS, NODES, QUEUES, SCHEDULER_CONF
from matplotlib.image import imread
from support.ops_allowlist import NOT_YET_EXPORTED
from support.prometheus_server import (
    OPS_PROMETHEUS,
    PrometheusServer,
    configured_rule_files,
    scrape_config,
    write_config,
)
from support.promql import Selector, parse_query

from ops import panels as dash
from ops.prometheus_api import PrometheusError, Series, query, query_range, rule_groups
from ops.render_panels import KEY_PANELS
from shared.server_process import ServerError, find_binary

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]  # a stack, a Prometheus, a minute of workload

ROOT = Path(__file__).resolve().parents[2]
SCRAPE_INTERVAL_S = 1.0
WAIT_S = 120.0

# --- the allow-list ------------------------------------------------------------------------------------
# Series a dashboard or an alert reads that this workload never makes, with why. An expression without
# data passes when every series it reads that has no data is listed here or in NOT_YET_EXPORTED; a key is
# a metric name, or a selector as written when only some label values are quiet.
QUIET: dict[str, str] = {
    "lahar_plans_rejected_total": "the binder rejects a plan only when it conflicts with what is bound "
    "already (replicas racing, a queue over its capability at bind time); one replica here",
    "volcano_job_failed_phase_count": "every job of the workload completes",
    "lahar_admission_intake_messages_total": "counts manifests sent to the intake stream (bulk loads); "
    "`lahar apply` goes through admission's API",
    "lahar_read_model_write_failures_total": "only when etcd refuses or fails a write",
    'lahar_runner_checkpoints_total{result="error"}': "only when a checkpoint write fails",
    "lahar_runner_events_skipped_total": "only for an event a service cannot decode",
    "lahar_plans_dead_lettered_total": "only for a plan the binder cannot decode",
    'lahar_admission_requests_total{result=~"unavailable|error"}': "only when admission cannot answer",
    'lahar_runner_outputs_published_total{service="binder",type="NodeNotReady",result="stored"}': "only "
    "when a node agent stops sending heartbeats",
    "lahar_descheduler_evictions_total": "the descheduler runs in dry-run mode here, so it evicts nothing",
    "lahar_descheduler_dry_run_evictions_total": "LoadAware would evict only from a node above its target "
    "thresholds toward one below its low thresholds; here every node is full, then every node is empty",
}


# --- what ops/ queries -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Expression:
    where: str
    expr: str  # Grafana's variables still in
    kind: str  # panel, alert or record


def expressions() -> list[Expression]:
    found: list[Expression] = []
    for board in dash.dashboards():
        found += [Expression(t.where, t.expr, "panel") for t in dash.targets(board)]
        found += [
            Expression(f"{board['title']}: variable {name}", expr, "panel")
            for name, expr in dash.variable_queries(board)
        ]
    for path in loaded_rule_files():
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                kind, name = ("alert", rule["alert"]) if "alert" in rule else ("record", rule["record"])
                found.append(Expression(f"{path.name}: {kind} {name}", rule["expr"], kind))
    return found


def loaded_rule_files() -> list[Path]:
    configured = configured_rule_files()
    alerts = OPS_PROMETHEUS / "alerts.yml"
    return configured if alerts in configured else [*configured, alerts]


EXPRESSIONS = expressions()


# --- the stack, its workload and its Prometheus ----------------------------------------------------------
@dataclass
class Observed:
    stack: Stack
    prometheus: PrometheusServer
    start: float  # unix seconds: Prometheus's first scrape
    end: float  # after the scrape that saw every job completed and the rules evaluated on it

    @property
    def window(self) -> dash.Window:
        return dash.Window(
            range_s=self.end - self.start, step_s=SCRAPE_INTERVAL_S, scrape_interval_s=SCRAPE_INTERVAL_S
        )

    def series(self, expr: str) -> list[Series]:
        return query_range(self.prometheus.url, expr, self.start, self.end, SCRAPE_INTERVAL_S)


def until(check: Any, what: str, timeout_s: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out after {timeout_s:.0f}s waiting for {what}"
        time.sleep(0.5)
    return found


def apply(stack: Stack, path: Path, text: str) -> None:
    path.write_text(text)
    done = stack.lahar("apply", "-f", str(path), "-o", "json")
    assert done.returncode == 0 and json.loads(done.stdout)["accepted"], done.stdout + done.stderr


def phases(stack: Stack) -> dict[str, str]:
    done = stack.lahar("get", "vcjob", "-A", "-o", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    return {j["metadata"]["name"]: j["status"]["state"]["phase"] for j in json.loads(done.stdout)["items"]}


def scalar(prometheus: PrometheusServer, expr: str) -> float:
    found = query(prometheus.url, expr, time.time())
    return found[0].points[-1][1] if found else 0.0


def run_workload(stack: Stack, prometheus: PrometheusServer, here: Path) -> float:
    """Apply the workload, wait for every job to complete and for Prometheus to have seen it; the time
    of that scrape's rule evaluations."""
    apply(stack, here / "queues.yaml", QUEUES)
    apply(stack, here / "fill.yaml", "".join(FILL))
    until(
        lambda: all(phases(stack).get(f"fill-{i}") == "Running" for i in range(3)), "the batch jobs running"
    )
    apply(stack, here / "arrive.yaml", "".join(ARRIVE))
    until(
        lambda: (p := phases(stack)) and all(p.get(j) == "Completed" for j in JOBS),
        f"{sorted(JOBS)} completed",
    )
    done = len(JOBS)
    until(
        lambda: scalar(prometheus, "count(volcano_job_completed_phase_count)") >= done, "a scrape of the end"
    )
    seen = time.time()
    until(
        lambda: all(unix_seconds(g["lastEvaluation"]) > seen for g in rule_groups(prometheus.url)),
        "every rule group evaluated after that scrape",
    )
    return time.time()


def unix_seconds(rfc3339: str) -> float:
    """Prometheus's timestamps (Go's RFC 3339 with up to nine fractional digits, in UTC)."""
    whole, _, fraction = rfc3339.rstrip("Z").partition(".")
    assert rfc3339.endswith("Z"), f"expected a UTC time, got {rfc3339!r}"
    second = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    return second + float(f"0.{fraction or 0}")


def installed(binary: str) -> bool:
    try:
        find_binary(binary)
    except ServerError:
        return False
    return True


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    if not installed("prometheus"):
        pytest.fail(
            "prometheus is not installed (neither beside the interpreter nor on PATH), and this test needs a "
            "real one: `scripts/dev setup` installs Debian's prometheus package as root "
            "(or: apt-get install prometheus)"
        )
    here = tmp_path_factory.mktemp("dashboards")
    files = {"nodes.yaml": NODES, "scheduler.conf": SCHEDULER_CONF, "policy.yaml": DESCHEDULER_POLICY}
    for name, text in files.items():
        (here / name).write_text(text)
    (here / "home").mkdir()
    stack = start_stack(
        here / "home",
        *("--sim-nodes-file", str(here / "nodes.yaml"), "--scheduler-conf", str(here / "scheduler.conf")),
        *("--descheduler-policy", str(here / "policy.yaml"), "--descheduling-interval", "2s"),
        "--descheduler-dry-run",
    )
    prometheus: PrometheusServer | None = None
    try:
        write_config(here / "prometheus", scrape_config(stack.state, loaded_rule_files(), SCRAPE_INTERVAL_S))
        prometheus = PrometheusServer.start_in(here / "prometheus")
        jobs = scrape_config(stack.state, [], SCRAPE_INTERVAL_S)["scrape_configs"]
        targets = sum(len(static["targets"]) for job in jobs for static in job["static_configs"])
        until(lambda: scalar(prometheus, "count(up == 1)") >= targets, "every target scraped")
        start = time.time()
        end = run_workload(stack, prometheus, here)
        yield Observed(stack, prometheus, start, end)
    finally:
        if prometheus is not None:
            prometheus.stop()
        stop_stack(stack.supervisor)


# --- the checks ----------------------------------------------------------------------------------------
def quiet_reason(selector: Selector) -> str | None:
    if selector.name in NOT_YET_EXPORTED:
        return "not exported yet (tests/support/ops_allowlist.py)"
    return QUIET.get(selector.text) or QUIET.get(selector.name)


@pytest.mark.parametrize("expression", EXPRESSIONS, ids=[e.where for e in EXPRESSIONS])
def test_every_query_is_valid_and_returns_data_or_has_a_reason(
    observed: Observed, expression: Expression
) -> None:
    expr = dash.expand(expression.expr, observed.window, _variables())
    try:
        found = observed.series(expr)
    except PrometheusError as exc:
        pytest.fail(f"{expression.where}: Prometheus refuses the query: {exc}")
    if any(s.finite for s in found):
        return
    selectors = parse_query(expr).selectors
    empty = [s for s in selectors if not any(x.finite for x in observed.series(f"count({s.text})"))]
    unexplained = sorted({s.text for s in empty if quiet_reason(s) is None})
    assert not unexplained, (
        f"{expression.where}: no data, and these series it reads have none either (add each to QUIET with "
        f"why, if the workload cannot make it): {unexplained}\n{expr}"
    )
    if not empty:
        # every series it reads has data: an alert or a rule whose condition does not hold is empty; a
        # panel must show something
        assert expression.kind != "panel", (
            f"{expression.where}: its series have data but it shows none:\n{expr}"
        )


def _variables() -> dict[str, str]:
    merged: dict[str, str] = {}
    for board in dash.dashboards():
        merged |= dash.all_values(board)
    return merged


def test_the_workload_moves_reclaim(observed: Observed) -> None:
    # the capped queue's job took back cpu from batch, which held more than its share
    evicting = 'lahar_runner_outputs_published_total{service="binder",type="PodEvicting",result="stored"}'
    assert any(s.finite for s in observed.series(evicting)), "no pod was evicted: reclaim did not happen"


def test_the_allow_list_names_only_what_ops_queries() -> None:
    read = {key for e in EXPRESSIONS for s in parse_query(e.expr).selectors for key in (s.name, s.text)}
    assert not set(QUIET) - read, f"QUIET entries nothing queries: {sorted(set(QUIET) - read)}"
    assert not NOT_YET_EXPORTED - read, (
        f"NOT_YET_EXPORTED entries nothing queries: {sorted(NOT_YET_EXPORTED - read)}"
    )


def test_the_awaited_series_have_no_data_yet(observed: Observed) -> None:
    arrived = sorted(
        name for name in NOT_YET_EXPORTED if any(s.finite for s in observed.series(f"count({name})"))
    )
    assert not arrived, (
        f"these have data now: remove them from NOT_YET_EXPORTED (tests/support/ops_allowlist.py): {arrived}"
    )


# --- the PNGs ------------------------------------------------------------------------------------------
MIN_PNG_BYTES = 8_000
MIN_INK = 0.01  # the share of pixels that are not background: axes, labels and data


def render(observed: Observed, out: Path, *panels: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [
            sys.executable, "-m", "ops.render_panels", "--prometheus", observed.prometheus.url,
            "--out", str(out),
            "--since", f"{observed.end - observed.start + 5:.0f}s", "--step", "1s", "--scrape-interval", "1s",
            "-o", "json", *(a for p in panels for a in ("--panel", p)),
        ],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rendered: list[dict[str, Any]] = json.loads(done.stdout)
    for panel in rendered:
        png = Path(panel["file"])
        assert png.is_file() and png.stat().st_size >= MIN_PNG_BYTES, f"{png}: missing or too small"
        pixels = imread(png)[:, :, :3]
        ink = float((pixels.min(axis=2) < 0.9).mean())
        assert ink >= MIN_INK, f"{png}: nearly blank ({ink:.1%} drawn)"
    return rendered


def test_the_key_panels_render_to_png(observed: Observed, tmp_path: Path) -> None:
    rendered = render(observed, tmp_path)
    assert [r["panel"] for r in rendered] == list(KEY_PANELS)
    board = {p["title"]: p for p in dash.panels(dash.dashboards()[0])}
    for r in rendered:
        awaited = [
            s.name for t in board[r["panel"]]["targets"] for s in parse_query(t["expr"]).selectors
            if s.name in NOT_YET_EXPORTED
        ]  # fmt: skip
        assert r["series"] > 0 or awaited, f"{r['panel']}: drawn without data"


def test_a_line_panel_and_a_bar_panel_render_their_data(observed: Observed, tmp_path: Path) -> None:
    # panels on series every stack exports today: the drawing of lines and bars with data
    rendered = render(observed, tmp_path, "Session latency", "Last replay duration")
    assert all(r["series"] > 0 for r in rendered), rendered
