"""The labels every Kubernetes node carries (its well-known labels), which manifests select on:
`kubernetes.io/hostname`, `kubernetes.io/os` and `kubernetes.io/arch` (Go's architecture names, as the
kubelet sets them). Volcano's examples select on them; a node without them leaves such pods Pending."""

from __future__ import annotations

import platform
from collections.abc import Mapping

HOSTNAME_LABEL = "kubernetes.io/hostname"
OS_LABEL = "kubernetes.io/os"
ARCH_LABEL = "kubernetes.io/arch"

# platform.machine() -> GOARCH, for the architectures lahar's nodes run on
_GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "armv7l": "arm"}


def go_arch(machine: str) -> str:
    lowered = machine.lower()
    return _GO_ARCH.get(lowered, lowered)


def well_known_labels(node_name: str, machine: str | None = None) -> dict[str, str]:
    """The node's well-known labels; machine: platform.machine() of the host (its own by default)."""
    arch = go_arch(platform.machine() if machine is None else machine)
    return {HOSTNAME_LABEL: node_name, OS_LABEL: "linux", ARCH_LABEL: arch}


def node_labels(node_name: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The well-known labels, under any the caller gives (which may not override the hostname)."""
    return {**(extra or {}), **well_known_labels(node_name)}
