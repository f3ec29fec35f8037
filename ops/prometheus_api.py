"""A small client of Prometheus's HTTP query API (/api/v1/query, /api/v1/query_range), standard library only.

A query Prometheus refuses (bad PromQL, an unknown function) raises PrometheusError with Prometheus's
own message and the query; an unreachable server raises it too, naming the URL."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

TIMEOUT_S = 30.0


class PrometheusError(RuntimeError):
    """Prometheus refused a query, or could not be reached."""


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    points: tuple[
        tuple[float, float], ...
    ]  # (unix seconds, value), oldest first; NaN where Prometheus says so

    @property
    def finite(self) -> bool:
        """Whether any point is a number (a quantile of no observations is NaN, a ratio of zeros too)."""
        return any(math.isfinite(v) for _, v in self.points)


def _get(base_url: str, path: str, params: dict[str, str]) -> Any:
    url = f"{base_url.rstrip('/')}{path}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            body = json.load(response)
    except urllib.error.HTTPError as exc:  # 400/422: Prometheus explains in the body
        try:
            body = json.load(exc)
        except ValueError:
            raise PrometheusError(f"{url}: HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise PrometheusError(f"cannot reach Prometheus at {base_url}: {exc}") from exc
    if body.get("status") != "success":
        raise PrometheusError(f"{body.get('errorType', 'error')}: {body.get('error', body)}")
    return body["data"]


def _series(data: dict[str, Any]) -> list[Series]:
    kind = data["resultType"]
    if kind == "matrix":
        return [
            Series(item["metric"], tuple((float(t), float(v)) for t, v in item["values"]))
            for item in data["result"]
        ]
    if kind == "vector":
        return [
            Series(item["metric"], ((float(item["value"][0]), float(item["value"][1])),))
            for item in data["result"]
        ]
    if kind == "scalar":
        t, v = data["result"]
        return [Series({}, ((float(t), float(v)),))]
    raise PrometheusError(f"unexpected result type {kind!r}")


def query(base_url: str, expr: str, at: float) -> list[Series]:
    """The expression's value at one instant (unix seconds)."""
    try:
        return _series(_get(base_url, "/api/v1/query", {"query": expr, "time": f"{at:.3f}"}))
    except PrometheusError as exc:
        raise PrometheusError(f"{exc} (query {expr!r})") from exc


def query_range(base_url: str, expr: str, start: float, end: float, step_s: float) -> list[Series]:
    """The expression evaluated every step_s seconds from start to end (unix seconds)."""
    params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step_s:g}"}
    try:
        return _series(_get(base_url, "/api/v1/query_range", params))
    except PrometheusError as exc:
        raise PrometheusError(f"{exc} (query {expr!r})") from exc


def rule_groups(base_url: str) -> list[dict[str, Any]]:
    """The loaded rule groups, with the time of their last evaluation (`lastEvaluation`)."""
    groups: list[dict[str, Any]] = _get(base_url, "/api/v1/rules", {})["groups"]
    return groups
