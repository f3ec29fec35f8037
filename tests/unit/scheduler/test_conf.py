from __future__ import annotations

import pytest

from services.scheduler.core.conf import ConfError, default_conf, parse_conf

HELM_DEFAULT = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


def test_default_conf_is_volcanos_builtin_with_the_starvation_bound() -> None:
    conf = default_conf()
    assert conf.actions == ("enqueue", "allocate", "backfill")
    assert [[p.name for p in tier] for tier in conf.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder", "starvation"],
    ]


def test_enable_flags_switch_extension_points_off() -> None:
    conf = parse_conf(HELM_DEFAULT)
    gang = conf.tiers[0][1]
    assert gang.name == "gang"
    assert not gang.enabled("preemptable")
    assert gang.enabled("job_ready")


def test_action_configurations_are_kept() -> None:
    conf = parse_conf(
        'actions: "allocate"\ntiers: []\nconfigurations:\n- name: allocate\n'
        "  arguments: {predicateErrorCacheEnable: false}\n"
    )
    assert conf.action_arguments("allocate") == {"predicateErrorCacheEnable": False}


def test_every_problem_is_reported_by_name() -> None:
    bad = """
actions: "enqueue, allocat, backfill"
tiers:
- plugins:
  - name: gang
    enableJobRedy: false
  - name: magic
- plugins:
  - name: binpack
    arguments: {binpack.weigth: 2}
configurations:
- name: allocate
  arguments: {unknownArg: 1}
"""
    with pytest.raises(ConfError) as caught:
        parse_conf(bad)
    text = str(caught.value)
    assert "unknown action 'allocat'" in text
    assert "tiers[0].plugins[0].enableJobRedy: unknown plugin option" in text
    assert "tiers[0].plugins[1].name: unknown plugin 'magic'" in text
    assert "tiers[1].plugins[0].arguments.binpack.weigth: unknown argument for plugin binpack" in text
    assert "configurations[0].arguments.unknownArg: unknown argument for action allocate" in text
    assert len(caught.value.errors) == 5


def test_hierarchical_drf_cannot_share_a_tier_with_proportion() -> None:
    with pytest.raises(ConfError, match="drf with enableHierarchy cannot share a tier with proportion"):
        parse_conf(
            'actions: "allocate"\ntiers:\n- plugins:\n'
            "  - {name: drf, enableHierarchy: true}\n  - name: proportion\n"
        )


@pytest.mark.parametrize(
    "text, message",
    [
        ("[1, 2]", "expected a mapping"),
        ("actions: 3\ntiers: []", "comma-separated string"),
        (
            'actions: "allocate"\ntiers: [{plugins: [{name: gang, enableJobReady: "no"}]}]',
            "expected true or false",
        ),
        ('actions: "allocate"\ntiers: []\nbogus: 1', "bogus: unknown field"),
        ("actions: [", "not valid YAML"),
    ],
)
def test_malformed_confs(text: str, message: str) -> None:
    with pytest.raises(ConfError, match=message):
        parse_conf(text)
