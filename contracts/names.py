"""Kubernetes name formats (apimachinery's validation.IsDNS1123Label, IsDNS1123Subdomain, IsQualifiedName).

Each check returns None for a valid name, else what is wrong with it, phrased to follow "expected ...".
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from contracts.limits import ANNOTATIONS_MAX_BYTES, DNS_LABEL_MAX, DNS_SUBDOMAIN_MAX, quote
from contracts.parse_fields import join_path

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL = re.compile(f"^{_LABEL}$")
_DNS_SUBDOMAIN = re.compile(f"^{_LABEL}(\\.{_LABEL})*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")

LABEL_MAX = DNS_LABEL_MAX
SUBDOMAIN_MAX = DNS_SUBDOMAIN_MAX


def dns_label_problem(value: str) -> str | None:
    """A DNS-1123 label: task names, container names, hostnames, namespaces."""
    if len(value) > LABEL_MAX:
        return f"must be no more than {LABEL_MAX} characters, got {len(value)}"
    if not _DNS_LABEL.match(value):
        return (
            f"{value!r} is not a lowercase RFC 1123 label: lower case alphanumeric characters or '-', "
            "starting and ending with an alphanumeric character (e.g. 'my-name' or '123-abc')"
        )
    return None


def dns_subdomain_problem(value: str) -> str | None:
    """A DNS-1123 subdomain: the names of most Kubernetes objects."""
    if len(value) > SUBDOMAIN_MAX:
        return f"must be no more than {SUBDOMAIN_MAX} characters, got {len(value)}"
    if not _DNS_SUBDOMAIN.match(value):
        return (
            f"{value!r} is not a lowercase RFC 1123 subdomain: lower case alphanumeric characters, '-' or "
            "'.', starting and ending with an alphanumeric character (e.g. 'example.com')"
        )
    return None


def qualified_name_problem(value: str) -> str | None:
    """An optionally prefixed name ("prefix/name"), the name part at most 63 characters."""
    prefix, slash, name = value.rpartition("/")
    if slash:
        if not prefix:
            return f"{quote(value)} has an empty prefix before '/'"
        problem = dns_subdomain_problem(prefix)
        if problem:
            return f"prefix part {problem}"
    if not name:
        return f"{quote(value)} has an empty name part"
    if len(name) > LABEL_MAX:
        return f"name part must be no more than {LABEL_MAX} characters, got {len(name)}"
    if not _QUALIFIED_NAME.match(name):
        return (
            f"{value!r} is not a qualified name: alphanumeric characters, '-', '_' or '.', starting and "
            "ending with an alphanumeric character (e.g. 'MyName' or 'my.name')"
        )
    return None


_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def label_value_problem(value: str) -> str | None:
    """A label value: empty, or at most 63 characters of a qualified name's alphabet (IsValidLabelValue)."""
    if len(value) > LABEL_MAX:
        return f"must be no more than {LABEL_MAX} characters, got {len(value)}"
    if not _LABEL_VALUE.match(value):
        return (
            f"{quote(value)} is not a label value: empty, or alphanumeric characters, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None


def metadata_problems(labels: Mapping[str, str], annotations: Mapping[str, str]) -> list[tuple[str, str]]:
    """(path, problem) for every label and annotation Kubernetes would refuse: keys are qualified names,
    label values short names, and all annotations together at most 256 KiB."""
    problems = []
    for key, value in labels.items():
        path = join_path("metadata.labels", key)
        key_problem = qualified_name_problem(key)
        if key_problem:
            problems.append((path, f"invalid label key: {key_problem}"))
        value_problem = label_value_problem(value)
        if value_problem:
            problems.append((path, f"invalid label value: {value_problem}"))
    for key in annotations:
        key_problem = qualified_name_problem(key)
        if key_problem:
            problems.append(
                (join_path("metadata.annotations", key), f"invalid annotation key: {key_problem}")
            )
    size = sum(len(key.encode()) + len(value.encode()) for key, value in annotations.items())
    if size > ANNOTATIONS_MAX_BYTES:
        problems.append(
            (
                "metadata.annotations",
                f"the annotations are {size} bytes together, at most {ANNOTATIONS_MAX_BYTES}",
            )
        )
    return problems


def parse_label_flag(text: str) -> tuple[dict[str, str], list[str]]:
    """`key=value,key2=value2` as a command line gives node labels (kubelet's --node-labels form): the
    labels, and a problem for every pair that is not one or whose key or value Kubernetes would refuse."""
    labels: dict[str, str] = {}
    problems = []
    for pair in (part.strip() for part in text.split(",")):
        if not pair:
            continue
        key, equals, value = pair.partition("=")
        if not equals:
            problems.append(f"{quote(pair)}: expected key=value")
            continue
        key_problem = qualified_name_problem(key)
        if key_problem:
            problems.append(f"{quote(pair)}: invalid label key: {key_problem}")
        value_problem = label_value_problem(value)
        if value_problem:
            problems.append(f"{quote(pair)}: invalid label value: {value_problem}")
        if key in labels and labels[key] != value:
            problems.append(f"{quote(pair)}: label {quote(key)} given twice")
        labels[key] = value
    return labels, problems
