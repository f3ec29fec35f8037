"""ops/panels.py, ops/panel_data.py and the drawing of ops/render_panels.py, without a Prometheus: Grafana's
variables filled in as Grafana would, cumulative histogram buckets turned into a heatmap's counts, bars
ranked, and each kind of panel drawn to a PNG that is not blank. (tests/e2e/test_dashboards_stack.py
runs the script against a real Prometheus.)"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.image import imread

from ops import panels as dash
from ops.panel_data import bar_label, bars, heatmap_grid
from ops.prometheus_api import Series
from ops.render_panels import (
    KEY_PANELS,
    _seconds,
    bucket_labels,
    draw_bars,
    draw_heatmap,
    draw_lines,
    slug,
)

NAN = float("nan")


def test_grafana_variables_are_filled_in_as_grafana_would() -> None:
    window = dash.Window(range_s=3600, step_s=15, scrape_interval_s=15)
    expr = 'rate(x{q=~"$queue", s=~"${service}"}[$__rate_interval]) offset $__range / $__range_s'
    assert dash.expand(expr, window, {"queue": ".*", "service": "a|b"}) == (
        'rate(x{q=~".*", s=~"a|b"}[60000ms]) offset 3600000ms / 3600'
    )
    # Grafana's $__rate_interval: four scrapes at least, else one step and one scrape
    assert dash.Window(range_s=60, step_s=1, scrape_interval_s=1).rate_interval_s == 4
    assert dash.Window(range_s=3600, step_s=60, scrape_interval_s=15).rate_interval_s == 75
    with pytest.raises(ValueError, match=r"\$nope"):
        dash.expand("x{a=~'$nope'}", window, {})


def test_the_overview_has_the_key_panels_and_every_variable_an_all_value() -> None:
    (board,) = [b for b in dash.dashboards() if b["title"] == "lahar overview"]
    titles = [p["title"] for p in dash.panels(board)]
    assert set(KEY_PANELS) <= set(titles), set(KEY_PANELS) - set(titles)
    assert len(titles) == len(set(titles)), "panel titles name the PNGs: they must be unique"
    assert dash.all_values(board) == {"queue": ".*", "service": ".*"}
    assert dict(dash.variable_queries(board)) == {
        "queue": "group by (queue_name) (volcano_queue_pod_group_pending_count)",
        "service": "group by (service) (lahar_runner_last_applied_seq)",
    }
    heatmap = next(t for t in dash.targets(board) if t.panel == "Job scheduling latency heatmap")
    slowest = next(t for t in dash.targets(board) if t.panel == "Slowest jobs")
    assert (heatmap.panel_type, heatmap.instant, slowest.instant) == ("heatmap", False, True)


def test_targets_come_from_collapsed_rows_too_and_hidden_ones_are_left_out() -> None:
    in_row = {
        "type": "timeseries",
        "id": 2,
        "title": "in row",
        "targets": [{"refId": "A", "expr": "a"}, {"refId": "B", "expr": "b", "hide": True}],
    }
    top = {"type": "stat", "id": 3, "title": "top", "targets": [{"refId": "A", "expr": "c", "instant": True}]}
    board = {"title": "b", "panels": [{"type": "row", "id": 1, "title": "r", "panels": [in_row]}, top]}
    assert [(t.panel, t.expr, t.instant) for t in dash.targets(board)] == [
        ("in row", "a", False),
        ("top", "c", True),
    ]


def test_legends_fill_in_labels() -> None:
    assert dash.legend("{{queue_name}} allocated", {"queue_name": "q1"}) == "q1 allocated"
    assert dash.legend("", {"__name__": "up", "job": "binder"}) == 'up{job="binder"}'


def bucket(le: str, *values: float) -> Series:
    return Series({"le": le}, tuple((1000.0 + i, v) for i, v in enumerate(values)))


def test_a_heatmap_shows_each_buckets_own_count_and_only_the_rows_that_say_something() -> None:
    cumulative = [
        bucket("100", 0, 0, 0),
        bucket("200", 1, 0, 2),
        bucket("400", 3, 0, 2),
        bucket("800", 3, 0, 2),
        bucket("+Inf", 4, 0, 2),
    ]
    grid = heatmap_grid(list(reversed(cumulative)))  # in any order: sorted by le
    assert grid.times == (1000.0, 1001.0, 1002.0)
    assert grid.bounds == ("200", "400", "800", "+Inf")  # nothing at or below 100 ms: left out
    assert grid.counts == ((1, 0, 2), (2, 0, 0), (0, 0, 0), (1, 0, 0))
    assert grid.total == 6
    # a NaN (no observation yet) counts nothing; no bucket with an observation: no rows
    assert heatmap_grid([bucket("1", NAN, 0), bucket("+Inf", NAN, 0)]).bounds == ()
    assert heatmap_grid([]).bounds == ()


def test_bars_rank_the_latest_value_of_each_series() -> None:
    series = [
        Series({"job_name": "a", "job_namespace": "ns", "queue": "q", "job": "scheduler"}, ((1, 5.0),)),
        Series({"job_name": "b", "job_namespace": "ns", "queue": "q"}, ((1, 1.0), (2, 9.0))),
        Series({"job_name": "c", "job_namespace": "ns", "queue": "q"}, ((1, NAN),)),
    ]
    order = ("job_namespace", "job_name", "queue")
    assert bars(series, "", order) == [("ns / b / q", 9.0), ("ns / a / q", 5.0)]
    assert bar_label({"queue": "q"}, "{{queue}} mean", ()) == "q mean"


def ink(path: Path) -> float:
    pixels = imread(path)[:, :, :3]
    return float((pixels.min(axis=2) < 0.9).mean())


def draw(path: Path, paint: object) -> Path:
    fig = Figure(figsize=(8, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    paint(ax)  # type: ignore[operator]
    fig.savefig(path)
    return path


def test_each_kind_of_panel_draws_a_picture(tmp_path: Path) -> None:
    heat = [bucket("100", 0, 1, 1, 3), bucket("1000", 2, 3, 1, 5), bucket("+Inf", 2, 4, 1, 5)]
    lines = [
        ("p50", Series({}, ((1000, 1.0), (1001, NAN), (1002, 3.0)))),
        ("p99", Series({}, ((1000, 2.0),))),
    ]
    drawn = {
        "heatmap": draw(tmp_path / "h.png", lambda ax: draw_heatmap(ax, heat, "ms")),
        "lines": draw(tmp_path / "l.png", lambda ax: draw_lines(ax, lines, "percentunit", False)),
        "stacked": draw(tmp_path / "s.png", lambda ax: draw_lines(ax, lines, "bytes", True)),
        "bars": draw(tmp_path / "b.png", lambda ax: draw_bars(ax, [("a", 3.0), ("b", 1.0)], "ms")),
    }
    blank = draw(tmp_path / "blank.png", lambda ax: ax.set_axis_off())
    assert ink(blank) < 0.001
    for kind, path in drawn.items():
        assert ink(path) > 0.01, kind


def test_bucket_labels_read_as_durations() -> None:
    assert bucket_labels(("163.064", "6383.18", "+Inf"), "ms") == ["≤ 163 ms", "≤ 6.38 s", "> 6.38 s"]
    assert bucket_labels(("+Inf",), "") == ["+Inf"]
    assert bucket_labels(("0.5",), "s") == ["≤ 0.5 s"]


def test_names_and_durations() -> None:
    assert slug("Queue CPU: allocated, deserved, capability") == "queue-cpu-allocated-deserved-capability"
    assert [_seconds(t) for t in ("90", "90s", "15m", "1h", "500ms")] == [90, 90, 900, 3600, 0.5]
    assert math.isclose(_seconds("1.5h"), 5400)
