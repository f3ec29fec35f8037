"""Kubernetes name formats (apimachinery's validation.IsDNS1123Label, IsDNS1123Subdomain, IsQualifiedName).

Each check returns None for a valid name, else what is wrong with it, phrased to follow "expected ...".
"""

from __future__ import annotations

import re

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL = re.compile(f"^{_LABEL}$")
_DNS_SUBDOMAIN = re.compile(f"^{_LABEL}(\\.{_LABEL})*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")

LABEL_MAX = 63
SUBDOMAIN_MAX = 253


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
            return f"{value!r} has an empty prefix before '/'"
        problem = dns_subdomain_problem(prefix)
        if problem:
            return f"prefix part {problem}"
    if not name:
        return f"{value!r} has an empty name part"
    if len(name) > LABEL_MAX:
        return f"name part must be no more than {LABEL_MAX} characters, got {len(name)}"
    if not _QUALIFIED_NAME.match(name):
        return (
            f"{value!r} is not a qualified name: alphanumeric characters, '-', '_' or '.', starting and "
            "ending with an alphanumeric character (e.g. 'MyName' or 'my.name')"
        )
    return None
