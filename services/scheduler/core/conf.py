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


def parse_conf(text: str, source: str = "scheduler conf") -> SchedulerConf:
    """Parse and validate a volcano-scheduler.conf; raises ConfError listing every problem."""
    from services.scheduler.core.registry import ACTIONS, PLUGINS

    errors: list[str] = []
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfError([f"{source}: not valid YAML: {exc}"]) from exc
    if not isinstance(raw, Mapping):
        raise ConfError([f"{source}: expected a mapping with 'actions' and 'tiers'"])
    for key in raw:
        if key not in ("actions", "tiers", "configurations", "metrics"):
            errors.append(f"{key}: unknown field (expected actions, tiers, configurations, metrics)")

    actions_raw = raw.get("actions", "")
    if not isinstance(actions_raw, str):
        errors.append('actions: expected a comma-separated string such as "enqueue, allocate, backfill"')
        actions_raw = ""
    actions = tuple(a.strip() for a in actions_raw.split(",") if a.strip())
    if not actions:
        errors.append("actions: at least one action is required")
    for action in actions:
        if action not in ACTIONS:
            errors.append(f"actions: unknown action {action!r} (known: {', '.join(sorted(ACTIONS))})")

    tiers: list[tuple[PluginOption, ...]] = []
    tiers_raw = raw.get("tiers") or []
    if not isinstance(tiers_raw, list):
        errors.append("tiers: expected a list of {plugins: [...]}")
        tiers_raw = []
    for t, tier in enumerate(tiers_raw):
        plugins_raw = tier.get("plugins") if isinstance(tier, Mapping) else None
        if not isinstance(plugins_raw, list):
            errors.append(f"tiers[{t}].plugins: expected a list of plugins")
            continue
        options = []
        for p, plugin_raw in enumerate(plugins_raw):
            option = _parse_plugin(plugin_raw, f"tiers[{t}].plugins[{p}]", PLUGINS, errors)
            if option is not None:
                options.append(option)
        names = {o.name for o in options}
        if "proportion" in names and any(o.name == "drf" and o.enable_hierarchy for o in options):
            errors.append(f"tiers[{t}]: drf with enableHierarchy cannot share a tier with proportion")
        tiers.append(tuple(options))

    configurations: dict[str, Mapping[str, Any]] = {}
    for c, conf in enumerate(raw.get("configurations") or []):
        name = conf.get("name") if isinstance(conf, Mapping) else None
        if name not in ACTIONS:
            errors.append(f"configurations[{c}].name: unknown action {name!r}")
            continue
        arguments = conf.get("arguments") or {}
        allowed = ACTIONS[name].arguments_spec
        for arg in arguments:
            if not _argument_known(arg, allowed):
                errors.append(f"configurations[{c}].arguments.{arg}: unknown argument for action {name}")
        configurations[name] = dict(arguments)

    if errors:
        raise ConfError(errors)
    return SchedulerConf(tuple(actions), tuple(tiers), configurations, dict(raw.get("metrics") or {}))


def _parse_plugin(raw: Any, path: str, known: Mapping[str, Any], errors: list[str]) -> PluginOption | None:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        errors.append(f"{path}.name: expected a plugin name")
        return None
    name = raw["name"]
    plugin_cls = known.get(name)
    if plugin_cls is None:
        errors.append(f"{path}.name: unknown plugin {name!r} (known: {', '.join(sorted(known))})")
        return None
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
    arguments = raw.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        errors.append(f"{path}.arguments: expected a mapping")
        arguments = {}
    for arg in arguments:
        if not _argument_known(arg, plugin_cls.arguments_spec):
            errors.append(f"{path}.arguments.{arg}: unknown argument for plugin {name}")
    return PluginOption(name, frozenset(disabled), raw.get("enableHierarchy") is True, dict(arguments))


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
