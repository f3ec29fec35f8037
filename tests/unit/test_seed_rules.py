"""Seed 000's recording rules (ops/prometheus/rules-seed.yml) compute what the simulator computes: the
coefficient of variation of job scheduling time between jobs (overall and per queue) and of allocation
between nodes (per resource and overall), and each tenant's share of the cluster. `promtool test rules`
evaluates them on series shaped like the services' (docs/metrics.md); skipped without promtool."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.simulator.metrics import coefficient_of_variation

RULES = Path(__file__).resolve().parents[2] / "ops" / "prometheus" / "rules-seed.yml"
GI = 2**30
TOP10 = "lahar:job_scheduling_duration_ms:top10"


def series(name: str, value: float, **labels: str) -> dict[str, str]:
    text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return {"series": f"{name}{{{text}}}", "values": f"{value}x10"}


def job(name: str, queue: str, ms: float, replica: str) -> dict[str, str]:
    return series(
        "volcano_e2e_job_scheduling_duration",
        ms,
        job_name=name,
        queue=queue,
        job_namespace="ns",
        job="scheduler",
        instance=replica,
    )


def node(name: str, resource: str, allocated: float, allocatable: float) -> list[dict[str, str]]:
    labels = {"node": name, "resource": resource, "job": "binder", "instance": "binder-a"}
    return [
        series("lahar_node_allocated", allocated, **labels),
        series("lahar_node_allocatable", allocatable, **labels),
    ]


def sample(expr: str, value: float, labels: str = "{}") -> dict[str, Any]:
    """`expr`'s value to 1/1024 (PromQL's round, to a power of two so that both sides round alike), whose
    labels are `labels` (round drops the name)."""
    rounded = math.floor(value * 1024 + 0.5) / 1024
    return {
        "expr": f"round({expr}, 1 / 1024)",
        "eval_time": "5m",
        "exp_samples": [{"labels": labels, "value": rounded}],
    }


def test_the_seed_figures_match_the_simulators(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Prometheus) is not installed")
    inputs = [
        # jobs of two replicas; b is reported by both for a scrape (its owner changed): counted once
        job("a", "q1", 1000, "s1"),
        job("b", "q1", 3000, "s1"),
        job("b", "q1", 3000, "s2"),
        job("c", "q2", 2000, "s2"),
        *node("n1", "cpu", 2, 4),
        *node("n1", "memory", 4 * GI, 8 * GI),
        *node("n1", "pods", 3, 110),
        *node("n2", "cpu", 0, 4),
        *node("n2", "memory", 2 * GI, 8 * GI),
        *node("n2", "pods", 1, 110),
        series("lahar_tenant_allocated", 2, namespace="ns", queue="q1", resource="cpu", job="binder"),
    ]
    share = [(0.5 + 0.5) / 2, (0.0 + 0.25) / 2]  # per node: mean of its cpu and memory fractions
    tests = [
        sample("lahar:job_scheduling_latency_cv", coefficient_of_variation([1000, 3000, 2000])),
        sample('lahar:queue_job_scheduling_latency_cv{queue="q1"}', 0.5, '{queue="q1"}'),
        sample('lahar:queue_job_scheduling_latency_cv{queue="q2"}', 0.0, '{queue="q2"}'),
        sample('lahar:node_allocation_cv{resource="cpu"}', 1.0, '{resource="cpu"}'),
        sample(
            'lahar:node_allocation_cv{resource="memory"}',
            coefficient_of_variation([0.5, 0.25]),
            '{resource="memory"}',
        ),
        sample("lahar:node_allocation_cv_overall", coefficient_of_variation(share)),
        sample("lahar:tenant_allocated_share", 0.25, '{namespace="ns",queue="q1",resource="cpu"}'),
        {
            "expr": TOP10,
            "eval_time": "5m",
            "exp_samples": [
                {
                    "labels": f'{TOP10}{{job_name="{n}",job_namespace="ns",queue="{q}"}}',
                    "value": v,
                }
                for n, q, v in (("a", "q1", 1000), ("b", "q1", 3000), ("c", "q2", 2000))
            ],
        },
    ]
    shutil.copy(RULES, tmp_path / "rules-seed.yml")
    spec = {
        "rule_files": ["rules-seed.yml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": inputs, "promql_expr_test": tests}],
    }
    (tmp_path / "test.yml").write_text(yaml.safe_dump(spec))
    result = subprocess.run(
        [promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
