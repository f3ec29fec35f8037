"""Volcano's `env` job plugin: every container learns the pod's index within its task."""

from __future__ import annotations

from contracts.job_plugins.common import Contribution, PluginInput, task_index

VC_TASK_INDEX = "VC_TASK_INDEX"
VK_TASK_INDEX = "VK_TASK_INDEX"  # the name from Volcano's days as "Volcano Kubernetes", still injected


def contribute(given: PluginInput) -> Contribution:
    index = task_index(given.pod)
    return Contribution(env={VK_TASK_INDEX: index, VC_TASK_INDEX: index})
