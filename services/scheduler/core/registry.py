"""The explicit registry of actions and plugins: configuration name -> implementing class.

Entries are import paths resolved on first use, so that loading a configuration imports only the
plugins it names.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

from services.scheduler.core.framework.action import Action
from services.scheduler.core.framework.plugin import Plugin

T = TypeVar("T")

_PLUGIN_PATHS = {
    "priority": "services.scheduler.core.plugins.priority:PriorityPlugin",
    "gang": "services.scheduler.core.plugins.gang:GangPlugin",
    "conformance": "services.scheduler.core.plugins.conformance:ConformancePlugin",
    "cdp": "services.scheduler.core.plugins.cdp:CooldownProtectionPlugin",
    "drf": "services.scheduler.core.plugins.drf:DrfPlugin",
    "proportion": "services.scheduler.core.plugins.proportion:ProportionPlugin",
    "capacity": "services.scheduler.core.plugins.capacity:CapacityPlugin",
    "overcommit": "services.scheduler.core.plugins.overcommit:OvercommitPlugin",
    "predicates": "services.scheduler.core.plugins.predicates:PredicatesPlugin",
    "nodeorder": "services.scheduler.core.plugins.nodeorder:NodeOrderPlugin",
    "binpack": "services.scheduler.core.plugins.binpack:BinpackPlugin",
    "usage": "services.scheduler.core.plugins.usage:UsagePlugin",
    "starvation": "services.scheduler.core.plugins.starvation:StarvationPlugin",
    "network-topology-aware": (
        "services.scheduler.core.plugins.network_topology_aware:NetworkTopologyAwarePlugin"
    ),
}

_ACTION_PATHS = {
    "enqueue": "services.scheduler.core.actions.enqueue:EnqueueAction",
    "allocate": "services.scheduler.core.actions.allocate:AllocateAction",
    "backfill": "services.scheduler.core.actions.backfill:BackfillAction",
    "preempt": "services.scheduler.core.actions.preempt:PreemptAction",
    "reclaim": "services.scheduler.core.actions.reclaim:ReclaimAction",
}


class _Registry(Mapping[str, type[T]], Generic[T]):
    def __init__(self, paths: Mapping[str, str]) -> None:
        self._paths = dict(paths)
        self._loaded: dict[str, type[T]] = {}

    def __getitem__(self, name: str) -> type[T]:
        if name not in self._loaded:
            module_name, _, attr = self._paths[name].partition(":")
            self._loaded[name] = getattr(importlib.import_module(module_name), attr)
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, name: object) -> bool:
        return name in self._paths


PLUGINS: Mapping[str, type[Plugin]] = _Registry(_PLUGIN_PATHS)
ACTIONS: Mapping[str, type[Action]] = _Registry(_ACTION_PATHS)
