"""The queries of the Grafana dashboards in ops/grafana, as Prometheus runs them.

A panel's target is PromQL with Grafana's variables in it: the built-in ones ($__rate_interval, $__range,
$__interval) and the dashboard's own ($queue, $service). `expand` puts in what Grafana would for a time
range and a resolution, with every dashboard variable at its "All" value, so the query can go to
Prometheus's HTTP API directly (ops/render_panels.py, and the test that runs every panel's query against a
real Prometheus)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GRAFANA_DIR = Path(__file__).resolve().parent / "grafana"
ALL_VALUE = ".*"  # a variable's "All" when the dashboard gives none (Grafana's regex for "any value")

_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")
_LABEL_VALUES = re.compile(r"label_values\(\s*([a-zA-Z_:][\w:]*)\s*,\s*(\w+)\s*\)")


@dataclass(frozen=True)
class Target:
    """One query of one panel."""

    dashboard: str  # the dashboard's title
    panel_id: int
    panel: str  # the panel's title
    panel_type: str  # timeseries, heatmap, table, bargauge, stat, ...
    ref_id: str
    expr: str  # as written, with Grafana's variables
    legend: str  # legendFormat: {{label}} placeholders
    instant: bool  # an instant query (tables, bar gauges) rather than a range

    @property
    def where(self) -> str:
        return f"{self.dashboard}: panel {self.panel!r} ({self.panel_id}) {self.ref_id}"


@dataclass(frozen=True)
class Window:
    """What Grafana fills its built-in variables from: the time range shown and the step of the query."""

    range_s: float
    step_s: float
    scrape_interval_s: float

    @property
    def rate_interval_s(self) -> float:
        # Grafana's definition: four scrape intervals at least, and one step plus a scrape beyond that
        return max(4 * self.scrape_interval_s, self.step_s + self.scrape_interval_s)


def dashboards(directory: Path = GRAFANA_DIR) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))]


def panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel with queries, including those of collapsed rows (which hold theirs inside)."""
    found: list[dict[str, Any]] = []
    for panel in board["panels"]:
        found += panel.get("panels", []) if panel["type"] == "row" else [panel]
    return [p for p in found if p.get("targets")]


def targets(board: dict[str, Any]) -> list[Target]:
    return [
        Target(
            dashboard=board["title"],
            panel_id=panel["id"],
            panel=panel["title"],
            panel_type=panel["type"],
            ref_id=target["refId"],
            expr=target["expr"],
            legend=target.get("legendFormat", ""),
            instant=bool(target.get("instant")) and not target.get("range", False),
        )
        for panel in panels(board)
        for target in panel["targets"]
        if not target.get("hide")
    ]


def variable_queries(board: dict[str, Any]) -> list[tuple[str, str]]:
    """(variable name, PromQL) for each query variable: `label_values(metric, label)` lists the label's
    values among the metric's series, which `group by (label) (metric)` returns."""
    found = []
    for variable in board.get("templating", {}).get("list", []):
        if variable["type"] != "query":
            continue
        query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
        match = _LABEL_VALUES.fullmatch(query.strip())
        if match is None:
            raise ValueError(
                f"{board['title']}: variable {variable['name']}: expected label_values(metric, label)"
            )
        metric, label = match.groups()
        found.append((variable["name"], f"group by ({label}) ({metric})"))
    return found


def all_values(board: dict[str, Any]) -> dict[str, str]:
    """Each dashboard variable at "All": its allValue, else a regex matching anything."""
    return {
        v["name"]: v.get("allValue") or ALL_VALUE
        for v in board.get("templating", {}).get("list", [])
        if v["type"] != "datasource"
    }


def duration(seconds: float) -> str:
    """A PromQL duration, in whole milliseconds (the finest PromQL takes)."""
    return f"{max(1, round(seconds * 1000))}ms"


def expand(expr: str, window: Window, variables: dict[str, str]) -> str:
    """The query Grafana sends for this window, each dashboard variable replaced by variables[name]."""
    builtin = {
        "__rate_interval": duration(window.rate_interval_s),
        "__interval": duration(window.step_s),
        "__range": duration(window.range_s),
        "__range_s": str(round(window.range_s)),
        "__range_ms": str(round(window.range_s * 1000)),
    }

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name in builtin:
            return builtin[name]
        if name in variables:
            return variables[name]
        raise ValueError(f"unknown Grafana variable ${name} in {expr!r}")

    return _VARIABLE.sub(value, expr)


def legend(template: str, labels: dict[str, str]) -> str:
    """A series' name by the target's legendFormat ("{{queue_name}} allocated"); without one, Prometheus's
    way of writing the labels."""
    if template:
        return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template).strip()
    shown = {k: v for k, v in labels.items() if k != "__name__"}
    return labels.get("__name__", "") + "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(shown.items())) + "}"
