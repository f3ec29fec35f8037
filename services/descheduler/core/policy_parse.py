"""Reading a DeschedulerPolicy (`apiVersion: descheduler/v1alpha2`) as Volcano's descheduler reads it, and
refusing what lahar cannot honour, with every problem at once, each naming its field path
(`profiles[0].pluginConfig[1].args.targetThresholds.cpu`). Unknown fields are errors, with the nearest
known name when one is close: a misspelt threshold silently ignored would leave a policy that never
evicts.

The rules are the descheduler's (kubernetes-sigs v0.27 and Volcano's LoadAware): thresholds in [0, 100],
thresholds and targetThresholds naming the same resources, each threshold at most its target unless
useDeviationThresholds, priorityThreshold with a value or a name, not both. Where lahar reads more
(evictableNamespaces.include, LoadAware's `metrics.type: Lahar`), docs/descheduler.md says so.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from contracts.errors import FieldError, ManifestError
from contracts.objects import LabelSelector, SelectorRequirement, frozen_map
from contracts.parse_fields import LABEL_SELECTOR_OPERATORS, Fields, as_string, describe
from services.descheduler.core import policy as p
from services.descheduler.core.selector import SelectorError, parse_selector

API_VERSION = "descheduler/v1alpha2"
KIND = "DeschedulerPolicy"
EXTENSION_POINTS = ("presort", "sort", "deschedule", "balance", "filter", "preevictionfilter")
# the kubernetes-sigs descheduler's other plugins: named in the error that refuses them
UNSUPPORTED_PLUGINS = (
    "RemoveDuplicates",
    "RemovePodsViolatingInterPodAntiAffinity",
    "RemovePodsViolatingNodeAffinity",
    "RemovePodsViolatingNodeTaints",
    "RemovePodsViolatingTopologySpreadConstraint",
    "RemovePodsHavingTooManyRestarts",
    "PodLifeTime",
    "RemoveFailedPods",
)
_RESOURCE_NAME = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_TOP = (
    "apiVersion",
    "kind",
    "profiles",
    "nodeSelector",
    *(
        "maxNoOfPodsToEvictPerNode",
        "maxNoOfPodsToEvictPerNamespace",
        "maxNoOfPodsToEvictTotal",
    ),
)
_EVICTOR_FIELDS = (
    "nodeSelector",
    "evictLocalStoragePods",
    "evictSystemCriticalPods",
    "ignorePvcPods",
    "evictFailedBarePods",
    "labelSelector",
    "priorityThreshold",
    "nodeFit",
)
_LOW_FIELDS = (
    "useDeviationThresholds",
    "thresholds",
    "targetThresholds",
    "numberOfNodes",
    "evictableNamespaces",
)
_ARG_FIELDS: Mapping[str, tuple[str, ...]] = {
    p.DEFAULT_EVICTOR: _EVICTOR_FIELDS,
    p.LOW_NODE_UTILIZATION: _LOW_FIELDS,
    p.HIGH_NODE_UTILIZATION: ("thresholds", "numberOfNodes", "evictableNamespaces"),
    p.LOAD_AWARE: (*_LOW_FIELDS, *_EVICTOR_FIELDS, "metrics", "duration"),
}


def parse_policy(text: str, source: str = "policy") -> p.DeschedulerPolicy:
    """The policy in `text` (YAML or JSON); ManifestError listing every problem, each with its path."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ManifestError([FieldError(source, "", f"not valid YAML: {exc}")]) from None
    errors: list[FieldError] = []
    if not isinstance(raw, Mapping):
        raise ManifestError([FieldError(source, "", f"expected a mapping, got {describe(raw)}")])
    reader = _Reader(source, errors)
    policy = reader.policy(raw)
    if errors:
        raise ManifestError(errors)
    return policy


def suggestion(name: str, known: tuple[str, ...]) -> str:
    """`; did you mean "x"?` for the nearest known name (case aside), else ""."""
    lowered = {k.lower(): k for k in known}
    if name.lower() in lowered:
        return f'; did you mean "{lowered[name.lower()]}"?'
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return f'; did you mean "{lowered[close[0]]}"?' if close else ""


class _Reader:
    def __init__(self, document: str, errors: list[FieldError]) -> None:
        self.document = document
        self.errors = errors

    def fields(self, raw: Mapping[Any, object], path: str, known: tuple[str, ...]) -> Fields:
        """A walker over `raw`, after reporting every key that is not among `known`."""
        for key in raw:
            if key not in known:
                name = str(key)
                where = f"{path}.{name}" if path else name
                message = f"unknown field{suggestion(name, known)} (known: {', '.join(known)})"
                self.errors.append(FieldError(self.document, where, message))
        return Fields(raw, path, self.document, self.errors)

    def error(self, path: str, message: str) -> None:
        self.errors.append(FieldError(self.document, path, message))

    # --- the document ------------------------------------------------------------------------------

    def policy(self, raw: Mapping[Any, object]) -> p.DeschedulerPolicy:
        doc = self.fields(raw, "", _TOP)
        version = doc.string("apiVersion", required=True)
        if version and version != API_VERSION:
            self.error("apiVersion", f"expected {API_VERSION!r}, got {describe(version)}")
        kind = doc.string("kind", required=True)
        if kind and kind != KIND:
            self.error("kind", f"expected {KIND!r}, got {describe(kind)}")
        profiles = self.each(raw, "profiles", self.profile)
        if not profiles and not any(e.path.startswith("profiles") for e in self.errors):
            self.error("profiles", "expected at least one profile")
        names = [pr.name for pr in profiles]
        for index, name in enumerate(names):
            if name and names.index(name) != index:
                self.error(f"profiles[{index}].name", f"duplicate profile name {name!r}")
        return p.DeschedulerPolicy(
            profiles=profiles,
            node_selector=self.selector(doc, "nodeSelector"),
            max_pods_per_node=doc.optional_integer("maxNoOfPodsToEvictPerNode", minimum=0),
            max_pods_per_namespace=doc.optional_integer("maxNoOfPodsToEvictPerNamespace", minimum=0),
            max_pods_total=doc.optional_integer("maxNoOfPodsToEvictTotal", minimum=0),
        )

    def each(
        self,
        raw: Mapping[Any, object],
        key: str,
        parse: Callable[[Mapping[Any, object], str], Any],
        at: str = "",
    ) -> tuple[Any, ...]:
        path = f"{at}.{key}" if at else key
        items = raw.get(key)
        if items is None:
            return ()
        if not isinstance(items, list):
            self.error(path, f"expected a list, got {describe(items)}")
            return ()
        out = []
        for index, item in enumerate(items):
            if isinstance(item, Mapping):
                out.append(parse(item, f"{path}[{index}]"))
            else:
                self.error(f"{path}[{index}]", f"expected a mapping, got {describe(item)}")
        return tuple(out)

    def profile(self, raw: Mapping[Any, object], path: str) -> p.Profile:
        doc = self.fields(raw, path, ("name", "pluginConfig", "plugins"))
        name = doc.string("name", required=True)
        configs: dict[str, tuple[str, Mapping[Any, object]]] = {}
        for config, at in self.each(raw, "pluginConfig", lambda r, at: (r, at), path):
            entry = self.fields(config, at, ("name", "args"))
            plugin = entry.string("name", required=True)
            args = config.get("args") or {}
            if not isinstance(args, Mapping):
                self.error(f"{at}.args", f"expected a mapping, got {describe(args)}")
                args = {}
            if plugin in configs:
                self.error(f"{at}.name", f"{plugin!r} is configured twice (first at {configs[plugin][0]})")
            elif plugin and plugin not in _ARG_FIELDS:
                self.error(f"{at}.name", _unsupported(plugin))
            elif plugin:
                configs[plugin] = (at, args)
        enabled = self.plugins(raw.get("plugins"), f"{path}.plugins")
        evictor = p.EvictorArgs()
        if p.DEFAULT_EVICTOR in configs:
            config_at, args = configs[p.DEFAULT_EVICTOR]
            evictor = self.evictor(args, f"{config_at}.args")
        balance = []
        for plugin, at in enabled:
            if plugin not in configs:
                self.error(at, f"{plugin} is enabled but has no pluginConfig entry with its args")
                continue
            config_at, args = configs[plugin]
            balance.append(self.balance(plugin, args, f"{config_at}.args"))
        return p.Profile(name=name, balance=tuple(balance), evictor=evictor)

    def plugins(self, raw: object, path: str) -> list[tuple[str, str]]:
        """The balance plugins the profile enables (and does not disable), with the path naming each."""
        if raw is None:
            return []  # a profile that enables nothing does nothing, as in the descheduler
        if not isinstance(raw, Mapping):
            self.error(path, f"expected a mapping, got {describe(raw)}")
            return []
        # Go's JSON decoding matched these keys case-insensitively: preEvictionFilter is preevictionfilter
        points: dict[str, tuple[str, Mapping[Any, object]]] = {}
        for key, value in raw.items():
            name = str(key)
            at = f"{path}.{name}"
            if name.lower() not in EXTENSION_POINTS:
                self.error(at, f"unknown extension point{suggestion(name, EXTENSION_POINTS)}")
            elif not isinstance(value, Mapping):
                self.error(at, f"expected a mapping with enabled and disabled, got {describe(value)}")
            else:
                points[name.lower()] = (at, value)
        balance: list[tuple[str, str]] = []
        for point, (at, value) in points.items():
            doc = self.fields(value, at, ("enabled", "disabled"))
            enabled = doc.strings("enabled")
            disabled = set(doc.strings("disabled"))
            allowed = {
                "balance": p.BALANCE_PLUGINS,
                "filter": (p.DEFAULT_EVICTOR,),
                "preevictionfilter": (p.DEFAULT_EVICTOR, p.LOAD_AWARE),
            }.get(point, ())
            for index, plugin in enumerate(enabled):
                if plugin not in allowed:
                    self.error(f"{at}.enabled[{index}]", _not_at(plugin, point, allowed))
                elif point == "balance" and plugin not in disabled:
                    balance.append((plugin, f"{at}.enabled[{index}]"))
        return balance

    # --- plugin args -------------------------------------------------------------------------------

    def evictor(self, raw: Mapping[Any, object], path: str) -> p.EvictorArgs:
        doc = self.fields(raw, path, _EVICTOR_FIELDS)
        return self.evictor_fields(raw, doc)

    def evictor_fields(self, raw: Mapping[Any, object], doc: Fields) -> p.EvictorArgs:
        return p.EvictorArgs(
            node_selector=self.selector(doc, "nodeSelector"),
            evict_local_storage_pods=doc.boolean("evictLocalStoragePods"),
            evict_system_critical_pods=doc.boolean("evictSystemCriticalPods"),
            ignore_pvc_pods=doc.boolean("ignorePvcPods"),
            evict_failed_bare_pods=doc.boolean("evictFailedBarePods"),
            label_selector=self.label_selector(raw.get("labelSelector"), doc.at("labelSelector")),
            priority_threshold=self.priority_threshold(
                raw.get("priorityThreshold"), doc.at("priorityThreshold")
            ),
            node_fit=doc.boolean("nodeFit"),
        )

    def balance(self, plugin: str, raw: Mapping[Any, object], path: str) -> p.BalanceArgs:
        doc = self.fields(raw, path, _ARG_FIELDS[plugin])
        high_given = plugin != p.HIGH_NODE_UTILIZATION
        deviation = doc.boolean("useDeviationThresholds") if high_given else False
        low = self.thresholds(raw, "thresholds", path)
        high = self.thresholds(raw, "targetThresholds", path) if high_given else {}
        if high_given and low and high:
            if set(low) != set(high):
                self.error(
                    f"{path}.targetThresholds",
                    f"expected the same resources as thresholds ({', '.join(sorted(low))}), got "
                    f"{', '.join(sorted(high))}",
                )
            elif not deviation:
                for name in sorted(low):
                    if low[name] > high[name]:
                        self.error(
                            f"{path}.thresholds.{name}",
                            f"{low[name]:g} is greater than targetThresholds.{name} ({high[name]:g})",
                        )
        args = p.BalanceArgs(
            plugin=plugin,
            thresholds=p.Thresholds(frozen_map(low), frozen_map(high), deviation),
            number_of_nodes=doc.integer("numberOfNodes", minimum=0),
            evictable_namespaces=self.namespaces(
                raw.get("evictableNamespaces"), f"{path}.evictableNamespaces"
            ),
        )
        if plugin != p.LOAD_AWARE:
            return args
        duration = doc.duration("duration")
        evictor_given = any(key in raw for key in _EVICTOR_FIELDS if key not in ("nodeFit", "nodeSelector"))
        return p.BalanceArgs(
            plugin=plugin,
            thresholds=args.thresholds,
            number_of_nodes=args.number_of_nodes,
            evictable_namespaces=args.evictable_namespaces,
            metrics=self.metrics(raw.get("metrics"), f"{path}.metrics"),
            duration_s=p.DEFAULT_DURATION_S if duration is None else duration,
            node_fit=doc.boolean("nodeFit"),
            node_selector=self.selector(doc, "nodeSelector"),
            evictor=self.evictor_fields(raw, doc) if evictor_given else None,
        )

    def thresholds(self, raw: Mapping[Any, object], key: str, at: str) -> dict[str, float]:
        path = f"{at}.{key}"
        value = raw.get(key)
        if value is None:
            self.error(path, "required field is missing: no resource threshold is configured")
            return {}
        if not isinstance(value, Mapping) or not value:
            self.error(path, f"expected a mapping of resource name to percent, got {describe(value)}")
            return {}
        out = {}
        for name, percent in value.items():
            where = f"{path}.{name}"
            if not isinstance(name, str) or not _RESOURCE_NAME.match(name):
                self.error(
                    where, f"expected a resource name such as cpu, memory or pods, got {describe(name)}"
                )
            elif isinstance(percent, bool) or not isinstance(percent, int | float):
                self.error(where, f"expected a percentage (a number), got {describe(percent)}")
            elif not 0 <= percent <= 100:
                self.error(where, f"expected a percentage in [0, 100], got {describe(percent)}")
            else:
                out[name] = float(percent)
        return out

    def namespaces(self, raw: object, path: str) -> p.Namespaces:
        if raw is None:
            return p.ALL_NAMESPACES
        if not isinstance(raw, Mapping):
            self.error(path, f"expected a mapping with include or exclude, got {describe(raw)}")
            return p.ALL_NAMESPACES
        doc = self.fields(raw, path, ("include", "exclude"))
        include, exclude = doc.strings("include"), doc.strings("exclude")
        if include and exclude:
            self.error(path, "expected include or exclude, not both")
        return p.Namespaces(include, exclude)

    def metrics(self, raw: object, path: str) -> p.MetricsSource:
        if raw is None:
            return p.MetricsSource()
        if not isinstance(raw, Mapping):
            self.error(path, f"expected a mapping with type and address, got {describe(raw)}")
            return p.MetricsSource()
        doc = self.fields(raw, path, ("type", "address"))
        kind = doc.string("type", required=True)
        address = doc.string("address")
        # Volcano compares the type case-sensitively with "prometheus"; its own docs write "Prometheus"
        types = {t.lower(): t for t in (p.PROMETHEUS, p.LAHAR_METRICS)}
        if kind.lower() == "prometheus_adaptor":
            self.error(
                f"{path}.type",
                "prometheus_adaptor reads Kubernetes' custom metrics API, which lahar does not have; use "
                f"{p.PROMETHEUS} (a Prometheus server's address) or {p.LAHAR_METRICS} (the node agents' "
                "samples)",
            )
        elif kind and kind.lower() not in types:
            self.error(f"{path}.type", f"expected {p.PROMETHEUS} or {p.LAHAR_METRICS}, got {describe(kind)}")
        kind = types.get(kind.lower(), kind)
        if kind == p.PROMETHEUS and not re.match(r"^https?://[^/\s]+", address):
            self.error(
                f"{path}.address",
                f"expected the Prometheus server's URL (http://host:port), got {describe(address)}",
            )
        return p.MetricsSource(kind, address)

    def selector(self, doc: Fields, key: str) -> p.NodeSelector:
        text = doc.string(key)
        try:
            return parse_selector(text)
        except SelectorError as exc:
            doc.error(str(exc), key)
            return p.EVERY_NODE

    def label_selector(self, raw: object, path: str) -> LabelSelector | None:
        if raw is None:
            return None
        if not isinstance(raw, Mapping):
            self.error(path, f"expected a mapping with matchLabels or matchExpressions, got {describe(raw)}")
            return None
        doc = self.fields(raw, path, ("matchLabels", "matchExpressions"))
        expressions = self.each(raw, "matchExpressions", self.requirement, path)
        return LabelSelector(match_labels=doc.map_of("matchLabels", as_string), match_expressions=expressions)

    def requirement(self, raw: Mapping[Any, object], path: str) -> SelectorRequirement:
        doc = self.fields(raw, path, ("key", "operator", "values"))
        operator = doc.string("operator", required=True, choices=LABEL_SELECTOR_OPERATORS)
        values = doc.strings("values")
        if operator in ("In", "NotIn") and not values:
            doc.error(f"expected at least one value with operator {operator}", "values")
        if operator in ("Exists", "DoesNotExist") and values:
            doc.error(f"expected no values with operator {operator}", "values")
        return SelectorRequirement(doc.string("key", required=True), operator, values)

    def priority_threshold(self, raw: object, path: str) -> p.PriorityThreshold | None:
        if raw is None:
            return None
        if not isinstance(raw, Mapping):
            self.error(path, f"expected a mapping with value or name, got {describe(raw)}")
            return None
        doc = self.fields(raw, path, ("value", "name"))
        value = doc.optional_integer("value")
        name = doc.string("name")
        if value is not None and name:
            self.error(path, "expected value or name, not both")
        return p.PriorityThreshold(value, name) if value is not None or name else None


def _unsupported(plugin: str) -> str:
    known = (*p.BALANCE_PLUGINS, p.DEFAULT_EVICTOR)
    if plugin in UNSUPPORTED_PLUGINS:
        return f"{plugin} is a descheduler plugin lahar does not run; it runs {', '.join(known)}"
    return f"unknown plugin {plugin!r}{suggestion(plugin, known)} (lahar runs {', '.join(known)})"


def _not_at(plugin: str, point: str, allowed: tuple[str, ...]) -> str:
    if not allowed:
        return f"lahar runs no {point} plugin; {plugin!r} cannot be enabled here"
    if plugin in (*p.BALANCE_PLUGINS, p.DEFAULT_EVICTOR, *UNSUPPORTED_PLUGINS):
        return f"{plugin} is not a {point} plugin lahar runs (expected one of {', '.join(allowed)})"
    return f"unknown plugin {plugin!r}{suggestion(plugin, allowed)} (expected one of {', '.join(allowed)})"
