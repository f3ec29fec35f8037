"""The Kubernetes core/v1 shapes from manifests: Node, Pod, PriorityClass and the pod spec pieces
Volcano's Job reuses."""

from __future__ import annotations

from collections.abc import Callable, Collection

from contracts.objects import (
    Container,
    EnvVar,
    LabelSelector,
    Node,
    NodeAffinity,
    NodeSelectorTerm,
    ObjectMeta,
    Pod,
    PodSpec,
    PodStatus,
    PodTemplate,
    PreferredSchedulingTerm,
    PriorityClass,
    SelectorRequirement,
    Taint,
    Toleration,
)
from contracts.parse_fields import (
    CONDITION_STATUSES,
    DNS_POLICIES,
    LABEL_SELECTOR_OPERATORS,
    NODE_SELECTOR_OPERATORS,
    POD_PHASES,
    POD_RESTART_POLICIES,
    PREEMPTION_POLICIES,
    TAINT_EFFECTS,
    TOLERATION_OPERATORS,
    Fields,
)
from contracts.resources import requests_defaulted_to_limits


def parse_meta(doc: Fields, *, cluster_scoped: bool) -> ObjectMeta:
    meta = doc.section("metadata")
    namespace = meta.string("namespace")
    return ObjectMeta(
        name=meta.string("name", required=True),
        # a cluster-scoped object has no namespace even if the manifest names one, as in the API server
        namespace="" if cluster_scoped else namespace or "default",
        uid=meta.string("uid"),
        labels=meta.string_map("labels"),
        annotations=meta.string_map("annotations"),
        creation_timestamp=meta.timestamp("creationTimestamp") or 0.0,
        deletion_timestamp=meta.timestamp("deletionTimestamp"),
        generation=meta.integer("generation", minimum=0, bits=64),
    )


def parse_taint(taint: Fields) -> Taint:
    return Taint(
        key=taint.string("key", required=True),
        value=taint.string("value"),
        effect=taint.string("effect", "NoSchedule", choices=TAINT_EFFECTS),
    )


def parse_toleration(toleration: Fields) -> Toleration:
    return Toleration(
        key=toleration.string("key"),
        operator=toleration.string("operator", "Equal", choices=TOLERATION_OPERATORS),
        value=toleration.string("value"),
        effect=toleration.string("effect", choices=TAINT_EFFECTS),
        toleration_seconds=toleration.optional_integer("tolerationSeconds", bits=64),
    )


def _requirement(operators: Collection[str]) -> Callable[[Fields], SelectorRequirement]:
    def parse(requirement: Fields) -> SelectorRequirement:
        return SelectorRequirement(
            key=requirement.string("key", required=True),
            operator=requirement.string("operator", required=True, choices=operators),
            values=requirement.strings("values"),
        )

    return parse


def parse_label_selector(selector: Fields) -> LabelSelector:
    return LabelSelector(
        match_labels=selector.string_map("matchLabels"),
        match_expressions=selector.each("matchExpressions", _requirement(LABEL_SELECTOR_OPERATORS)),
    )


def _node_selector_term(term: Fields) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        match_expressions=term.each("matchExpressions", _requirement(NODE_SELECTOR_OPERATORS)),
        match_fields=term.each("matchFields", _requirement(NODE_SELECTOR_OPERATORS)),
    )


def _preferred_term(term: Fields) -> PreferredSchedulingTerm:
    return PreferredSchedulingTerm(
        weight=term.integer("weight", required=True, minimum=1, maximum=100),
        preference=_node_selector_term(term.section("preference", required=True)),
    )


def parse_node_affinity(affinity: Fields) -> NodeAffinity:
    required = affinity.optional(
        "requiredDuringSchedulingIgnoredDuringExecution",
        lambda selector: selector.each("nodeSelectorTerms", _node_selector_term),
    )
    return NodeAffinity(
        required=required,
        preferred=affinity.each("preferredDuringSchedulingIgnoredDuringExecution", _preferred_term),
    )


def _env_var(env: Fields) -> EnvVar:
    return EnvVar(name=env.string("name", required=True), value=env.string("value"))


def _container(container: Fields) -> Container:
    resources = container.section("resources")
    limits = resources.resources("limits")
    return Container(
        name=container.string("name", required=True),
        image=container.string("image"),
        command=container.strings("command"),
        args=container.strings("args"),
        env=container.each("env", _env_var),
        working_dir=container.string("workingDir"),
        # defaulted as the Kubernetes API server does before anything reads the pod
        requests=requests_defaulted_to_limits(resources.resources("requests"), limits),
        limits=limits,
        restart_policy=container.string("restartPolicy", choices=POD_RESTART_POLICIES),
    )


def parse_pod_spec(spec: Fields) -> PodSpec:
    return PodSpec(
        containers=spec.each("containers", _container),
        init_containers=spec.each("initContainers", _container),
        scheduler_name=spec.string("schedulerName", "default-scheduler"),
        node_name=spec.string("nodeName"),
        node_selector=spec.string_map("nodeSelector"),
        node_affinity=spec.section("affinity").optional("nodeAffinity", parse_node_affinity),
        tolerations=spec.each("tolerations", parse_toleration),
        priority=spec.optional_integer("priority"),
        priority_class_name=spec.string("priorityClassName"),
        preemption_policy=spec.string("preemptionPolicy", choices=PREEMPTION_POLICIES),
        restart_policy=spec.string("restartPolicy", "Always", choices=POD_RESTART_POLICIES),
        hostname=spec.string("hostname"),
        subdomain=spec.string("subdomain"),
        host_network=spec.boolean("hostNetwork"),
        dns_policy=spec.string("dnsPolicy", choices=DNS_POLICIES),
        overhead=spec.resources("overhead"),
        active_deadline_seconds=spec.optional_integer("activeDeadlineSeconds", minimum=1, bits=64),
        termination_grace_period_seconds=spec.optional_integer(
            "terminationGracePeriodSeconds", minimum=0, bits=64
        ),
    )


def parse_pod_template(template: Fields) -> PodTemplate:
    meta = template.section("metadata")
    return PodTemplate(
        labels=meta.string_map("labels"),
        annotations=meta.string_map("annotations"),
        spec=parse_pod_spec(template.section("spec")),
    )


def _terminated_exit_code(container_status: Fields) -> int | None:
    return container_status.section("state").section("terminated").optional_integer("exitCode")


def _pod_status(status: Fields) -> PodStatus:
    exit_codes = [
        code for code in status.each("containerStatuses", _terminated_exit_code) if code is not None
    ]
    return PodStatus(
        phase=status.string("phase", "Pending", choices=POD_PHASES),
        reason=status.string("reason"),
        message=status.string("message"),
        # Volcano's exitCode policies match the first container that failed, else any that exited
        exit_code=next((code for code in exit_codes if code != 0), exit_codes[0] if exit_codes else None),
        nominated_node_name=status.string("nominatedNodeName"),
        start_time=status.timestamp("startTime"),
    )


def parse_pod(doc: Fields, meta: ObjectMeta) -> Pod:
    return Pod(meta=meta, spec=parse_pod_spec(doc.section("spec")), status=_pod_status(doc.section("status")))


def _condition(condition: Fields) -> tuple[str, str]:
    return (
        condition.string("type", required=True),
        condition.string("status", required=True, choices=CONDITION_STATUSES),
    )


def parse_node(doc: Fields, meta: ObjectMeta) -> Node:
    spec, status = doc.section("spec"), doc.section("status")
    conditions = status.each("conditions", _condition)
    return Node(
        meta=meta,
        allocatable=status.resources("allocatable"),
        capacity=status.resources("capacity"),
        taints=spec.each("taints", parse_taint),
        unschedulable=spec.boolean("unschedulable"),
        # a node that reports no Ready condition is taken as ready (hand-written manifests rarely give one)
        ready=all(state == "True" for kind, state in conditions if kind == "Ready"),
    )


def parse_priority_class(doc: Fields, meta: ObjectMeta) -> PriorityClass:
    return PriorityClass(
        meta=meta,
        value=doc.integer("value", required=True),
        global_default=doc.boolean("globalDefault"),
        preemption_policy=doc.string("preemptionPolicy", "PreemptLowerPriority", choices=PREEMPTION_POLICIES),
        description=doc.string("description"),
    )
