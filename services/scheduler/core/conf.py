"""The scheduler configuration in Volcano's volcano-scheduler.conf format.

```yaml
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: gang
    enablePreemptable: false
configurations:
- name: allocate
  arguments: {predicateErrorCacheEnable: true}
```
Every unknown action, plugin, flag or argument is an error naming it and where it stands.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from services.scheduler.core.registry import ACTIONS, PLUGINS

# Volcano's PluginOption flags -> the extension points each one switches (all default true). Flags for
# extension points lahar has no plugin for are accepted, so a Volcano conf loads unchanged.
ENABLE_FLAGS: Mapping[str, tuple[str, ...]] = {
    "enableJobOrder": ("job_order",),
    "enableNamespaceOrder": (),
    "enableHierarchy": (),
    "enableJobReady": ("job_ready",),
    "enableJobPipelined": ("job_pipelined",),
    "enableTaskOrder": ("task_order",),
    "enablePreemptable": ("preemptable",),
    "enableReclaimable": ("reclaimable",),
    "enablePreemptive": ("preemptive",),
    "enableQueueOrder": ("queue_order", "victim_queue_order"),
    "enabledClusterOrder": (),
    "EnabledClusterOrder": (),
    "enablePredicate": ("predicate", "pre_predicate"),
    "enableBestNode": (),
    "enableNodeOrder": ("node_order",),
    "enableTargetJob": (),
    "enableReservedNodes": (),
    "enableJobEnqueued": ("job_enqueueable", "job_enqueued"),
    "enabledVictim": (),
    "enableJobStarving": ("job_starving",),
    "enabledOverused": ("overused",),
    "enabledAllocatable": ("allocatable",),
    "enabledHyperNodeOrder": ("hypernode_order",),
    "enabledSubJobReady": (),
    "enabledSubJobPipelined": (),
    "enabledSubJobOrder": (),
    "enabledHyperNodeGradient": ("hypernode_gradients",),
}

DEFAULT_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: starvation
"""


class ConfError(ValueError):
    def __init__(self, errors: list[str]) -> None:
        self.errors = tuple(errors)
        super().__init__("invalid scheduler configuration:\n" + "\n".join(f"  {e}" for e in errors))


@dataclass(frozen=True, slots=True)
class PluginOption:
    name: str
    disabled_points: frozenset[str] = frozenset()
    enable_hierarchy: bool = False
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def enabled(self, point: str) -> bool:
        return point not in self.disabled_points


@dataclass(frozen=True, slots=True)
class SchedulerConf:
    actions: tuple[str, ...]
    tiers: tuple[tuple[PluginOption, ...], ...]
    configurations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    metrics: Mapping[str, Any] = field(default_factory=dict)

    def action_arguments(self, action: str) -> Mapping[str, Any]:
        return self.configurations.get(action, {})

    def uses(self, plugin: str) -> bool:
        """Whether a tier names the plugin (the usage plugin's inputs are gathered only then)."""
        return any(option.name == plugin for tier in self.tiers for option in tier)


def parse_conf(text: str, source: str = "scheduler conf") -> SchedulerConf:
    """Parse and validate a volcano-scheduler.conf; raises ConfError listing every problem."""
    raw = _load(text, source)
    errors: list[str] = []
    for key in raw:
        if key not in _FIELDS:
            errors.append(f"{key}: unknown field (expected {', '.join(_FIELDS)})")
    actions = _parse_actions(raw.get("actions", ""), errors)
    tiers = _parse_tiers(raw.get("tiers") or [], errors)
    configurations = _parse_configurations(raw.get("configurations") or [], errors)
    if errors:
        raise ConfError(errors)
    return SchedulerConf(actions, tiers, configurations, dict(raw.get("metrics") or {}))


_FIELDS = ("actions", "tiers", "configurations", "metrics")


def _load(text: str, source: str) -> Mapping[str, Any]:
    """The conf as a mapping, or a ConfError: nothing else can be checked without one."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfError([f"{source}: not valid YAML: {exc}"]) from exc
    if not isinstance(raw, Mapping):
        raise ConfError([f"{source}: expected a mapping with 'actions' and 'tiers'"])
    return raw


def _parse_actions(raw: Any, errors: list[str]) -> tuple[str, ...]:
    if not isinstance(raw, str):
        errors.append('actions: expected a comma-separated string such as "enqueue, allocate, backfill"')
        raw = ""
    actions = tuple(a.strip() for a in raw.split(",") if a.strip())
    if not actions:
        errors.append("actions: at least one action is required")
    for action in actions:
        if action not in ACTIONS:
            errors.append(f"actions: unknown action {action!r} (known: {', '.join(sorted(ACTIONS))})")
    return actions


def _parse_tiers(raw: Any, errors: list[str]) -> tuple[tuple[PluginOption, ...], ...]:
    if not isinstance(raw, list):
        errors.append("tiers: expected a list of {plugins: [...]}")
        return ()
    tiers = (_parse_tier(tier, f"tiers[{t}]", errors) for t, tier in enumerate(raw))
    return tuple(tier for tier in tiers if tier is not None)


def _parse_tier(raw: Any, path: str, errors: list[str]) -> tuple[PluginOption, ...] | None:
    plugins = raw.get("plugins") if isinstance(raw, Mapping) else None
    if not isinstance(plugins, list):
        errors.append(f"{path}.plugins: expected a list of plugins")
        return None
    parsed = (_parse_plugin(plugin, f"{path}.plugins[{p}]", errors) for p, plugin in enumerate(plugins))
    options = tuple(option for option in parsed if option is not None)
    names = {o.name for o in options}
    if "proportion" in names and any(o.name == "drf" and o.enable_hierarchy for o in options):
        errors.append(f"{path}: drf with enableHierarchy cannot share a tier with proportion")
    return options


def _parse_configurations(raw: Any, errors: list[str]) -> dict[str, Mapping[str, Any]]:
    configurations: dict[str, Mapping[str, Any]] = {}
    for c, conf in enumerate(raw):
        name = conf.get("name") if isinstance(conf, Mapping) else None
        if not isinstance(name, str) or name not in ACTIONS:
            errors.append(f"configurations[{c}].name: unknown action {name!r}")
            continue
        arguments = conf.get("arguments") or {}
        for arg in _unknown_arguments(arguments, ACTIONS[name].arguments_spec):
            errors.append(f"configurations[{c}].arguments.{arg}: unknown argument for action {name}")
        configurations[name] = dict(arguments)
    return configurations


def _parse_plugin(raw: Any, path: str, errors: list[str]) -> PluginOption | None:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        errors.append(f"{path}.name: expected a plugin name")
        return None
    name = raw["name"]
    if name not in PLUGINS:
        errors.append(f"{path}.name: unknown plugin {name!r} (known: {', '.join(sorted(PLUGINS))})")
        return None
    disabled = _disabled_points(raw, path, errors)
    arguments = raw.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        errors.append(f"{path}.arguments: expected a mapping")
        arguments = {}
    for arg in _unknown_arguments(arguments, PLUGINS[name].arguments_spec):
        errors.append(f"{path}.arguments.{arg}: unknown argument for plugin {name}")
    errors.extend(f"{path}.arguments.{problem}" for problem in PLUGINS[name].argument_problems(arguments))
    return PluginOption(name, disabled, raw.get("enableHierarchy") is True, dict(arguments))


def _disabled_points(raw: Mapping[str, Any], path: str, errors: list[str]) -> frozenset[str]:
    """The extension points a plugin's enable flags switch off."""
    disabled: set[str] = set()
    for key, value in raw.items():
        if key in ("name", "arguments"):
            continue
        if key not in ENABLE_FLAGS:
            errors.append(f"{path}.{key}: unknown plugin option")
        elif not isinstance(value, bool):
            errors.append(f"{path}.{key}: expected true or false, got {value!r}")
        elif not value:
            disabled.update(ENABLE_FLAGS[key])
    return frozenset(disabled)


def _unknown_arguments(arguments: Mapping[str, Any], spec: Mapping[str, type]) -> list[str]:
    return [arg for arg in arguments if not _argument_known(arg, spec)]


def _argument_known(arg: str, spec: Mapping[str, type]) -> bool:
    return any(arg == pattern or ("*" in pattern and fnmatch.fnmatchcase(arg, pattern)) for pattern in spec)


def default_conf() -> SchedulerConf:
    return parse_conf(DEFAULT_CONF, "default conf")


def argument(arguments: Mapping[str, Any], key: str, default: Any) -> Any:
    """Read a plugin/action argument, coercing strings the way Volcano's Arguments.Get* do."""
    value = arguments.get(key, default)
    if isinstance(default, bool):
        return value if isinstance(value, bool) else str(value).lower() == "true"
    if isinstance(default, int):
        return int(value)
    if isinstance(default, float):
        return float(value)
    return value
