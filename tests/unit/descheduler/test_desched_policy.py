"""The policy parser: Volcano's own policy (the seed's) reads unchanged, and every bad field is named by
its path, all of them at once, with the nearest known name for a misspelt one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from contracts.errors import ManifestError
from services.descheduler.core.policy import LAHAR_METRICS, LOAD_AWARE, PROMETHEUS
from services.descheduler.core.policy_parse import parse_policy

ROOT = Path(__file__).resolve().parents[3]
SEED = ROOT / "examples" / "descheduler" / "policy.yaml"


def doc(
    plugin_args: dict,
    plugin: str = LOAD_AWARE,
    evictor: dict | None = None,
    plugins: dict | None = None,
    **top: object,
) -> str:
    configs = [{"name": plugin, "args": plugin_args}]
    if evictor is not None:
        configs.append({"name": "DefaultEvictor", "args": evictor})
    return yaml.safe_dump(
        {
            "apiVersion": "descheduler/v1alpha2",
            "kind": "DeschedulerPolicy",
            **top,
            "profiles": [
                {
                    "name": "p",
                    "pluginConfig": configs,
                    "plugins": plugins or {"balance": {"enabled": [plugin]}},
                }
            ],
        }
    )


GOOD = {"thresholds": {"cpu": 30, "memory": 30}, "targetThresholds": {"cpu": 80, "memory": 85}}


def errors(text: str) -> list[tuple[str, str]]:
    with pytest.raises(ManifestError) as caught:
        parse_policy(text, "policy.yaml")
    return [(e.path, e.message) for e in caught.value.errors]


def test_the_seeds_policy_reads_unchanged() -> None:
    policy = parse_policy(SEED.read_text(), str(SEED))
    (profile,) = policy.profiles
    (args,) = profile.balance
    assert args.plugin == LOAD_AWARE
    assert dict(args.thresholds.low) == {"cpu": 30, "memory": 30}
    assert dict(args.thresholds.high) == {"cpu": 80, "memory": 85}
    assert args.evictable_namespaces.exclude == ("kube-system",)
    assert args.metrics is not None and args.metrics.type == PROMETHEUS
    assert args.duration_s == 120.0  # Volcano's default 2m
    assert profile.evictor.node_fit and profile.evictor.ignore_pvc_pods
    assert (
        profile.evictor.priority_threshold is not None and profile.evictor.priority_threshold.value == 10000
    )


def test_go_style_keys_and_lahars_metrics_type() -> None:
    plugins = {"preEvictionFilter": {"enabled": [LOAD_AWARE]}, "balance": {"enabled": [LOAD_AWARE]}}
    text = doc({**GOOD, "metrics": {"type": "lahar"}, "duration": "5m"}, plugins=plugins)
    policy = parse_policy(text)
    args = policy.profiles[0].balance[0]
    assert args.metrics is not None and args.metrics.type == LAHAR_METRICS and args.duration_s == 300.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (doc(GOOD, nodeSelectr="a=b"), [("nodeSelectr", 'did you mean "nodeSelector"')]),
        (
            doc({**GOOD, "targetThreshold": {}}),
            [("profiles[0].pluginConfig[0].args.targetThreshold", "targetThresholds")],
        ),
        (
            doc({"thresholds": {"cpu": 130}, "targetThresholds": {"cpu": 80}}),
            [("profiles[0].pluginConfig[0].args.thresholds.cpu", "[0, 100]")],
        ),
        (
            doc({"thresholds": {"cpu": 90}, "targetThresholds": {"cpu": 80}}),
            [("profiles[0].pluginConfig[0].args.thresholds.cpu", "greater than targetThresholds.cpu")],
        ),
        (
            doc({"thresholds": {"cpu": 30}, "targetThresholds": {"cpu": 80, "memory": 80}}),
            [("profiles[0].pluginConfig[0].args.targetThresholds", "same resources")],
        ),
        (
            doc({"targetThresholds": {"cpu": 80}}),
            [("profiles[0].pluginConfig[0].args.thresholds", "missing")],
        ),
        (
            doc({**GOOD, "metrics": {"type": "Graphite"}}),
            [("profiles[0].pluginConfig[0].args.metrics.type", "Graphite")],
        ),
        (
            doc({**GOOD, "metrics": {"type": "Prometheus"}}),
            [("profiles[0].pluginConfig[0].args.metrics.address", "URL")],
        ),
        (
            doc({**GOOD, "metrics": {"type": "prometheus_adaptor"}}),
            [("profiles[0].pluginConfig[0].args.metrics.type", "custom metrics API")],
        ),
        (doc({**GOOD, "duration": "2 minutes"}), [("profiles[0].pluginConfig[0].args.duration", "duration")]),
        (doc({**GOOD, "numberOfNodes": -1}), [("profiles[0].pluginConfig[0].args.numberOfNodes", "")]),
        (
            doc({**GOOD, "evictableNamespaces": {"include": ["a"], "exclude": ["b"]}}),
            [("profiles[0].pluginConfig[0].args.evictableNamespaces", "not both")],
        ),
        (
            doc(GOOD, evictor={"priorityThreshold": {"value": 1, "name": "x"}}),
            [("profiles[0].pluginConfig[1].args.priorityThreshold", "not both")],
        ),
        (
            doc(GOOD, evictor={"nodeFit": "yes"}),
            [("profiles[0].pluginConfig[1].args.nodeFit", "true or false")],
        ),
        (
            doc(GOOD, evictor={"nodeSelector": "zone in (a"}),
            [("profiles[0].pluginConfig[1].args.nodeSelector", "label selector")],
        ),
        (
            doc(GOOD, evictor={"labelSelector": {"matchExpressions": [{"key": "k", "operator": "Near"}]}}),
            [("profiles[0].pluginConfig[1].args.labelSelector.matchExpressions[0].operator", "Near")],
        ),
        (
            doc({"thresholds": {"cpu": 20}}, plugin="RemoveDuplicates"),
            [
                ("profiles[0].pluginConfig[0].name", "does not run"),
                ("profiles[0].plugins.balance.enabled[0]", "RemoveDuplicates"),
            ],
        ),
        (
            doc(GOOD, plugin="LowNodeUtilizaton"),
            [("profiles[0].pluginConfig[0].name", 'did you mean "LowNodeUtilization"')],
        ),
        (doc(GOOD).replace("kind: DeschedulerPolicy", "kind: Policy"), [("kind", "DeschedulerPolicy")]),
        (doc(GOOD).replace("descheduler/v1alpha2", "descheduler/v1alpha1"), [("apiVersion", "v1alpha2")]),
        (
            doc(GOOD).replace("balance:", "balanc:"),
            [("profiles[0].plugins.balanc", 'did you mean "balance"')],
        ),
        (doc(GOOD).replace("pluginConfig:", "pluginConfig: []\n  x:"), [("profiles[0].x", "unknown field")]),
        ("- just a list", [("", "expected a mapping")]),
        ("a: [", [("", "not valid YAML")]),
    ],
)
def test_every_error_names_its_field(text: str, expected: list[tuple[str, str]]) -> None:
    found = errors(text)
    for path, words in expected:
        assert any(p == path and words in m for p, m in found), (path, words, found)


def test_all_problems_are_reported_at_once() -> None:
    text = doc(
        {"thresholds": {"cpu": 130, "memry": 10}, "targetThresholds": {"cpu": 80}}, evictor={"nodeFit": 3}
    )
    paths = {path for path, _ in errors(text)}
    assert {
        "profiles[0].pluginConfig[0].args.thresholds.cpu",
        "profiles[0].pluginConfig[1].args.nodeFit",
    } <= paths


def test_an_enabled_plugin_needs_its_args() -> None:
    text = doc(GOOD, plugins={"balance": {"enabled": [LOAD_AWARE, "HighNodeUtilization"]}})
    assert (
        "profiles[0].plugins.balance.enabled[1]",
        "HighNodeUtilization is enabled but has no pluginConfig entry with its args",
    ) in errors(text)


def test_a_disabled_plugin_does_not_run() -> None:
    text = doc(GOOD, plugins={"balance": {"enabled": [LOAD_AWARE], "disabled": [LOAD_AWARE]}})
    assert parse_policy(text).profiles[0].balance == ()
