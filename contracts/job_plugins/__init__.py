"""Volcano's job plugins (pkg/controllers/job/plugins) as pure functions of a job and one of its pods.

Volcano's job controller runs them when it creates a pod, mutating the pod spec (environment variables,
volumes, hostname) and creating side objects (ConfigMaps, Services, Secrets). lahar has no API server to
hold those side objects, so the node agent asks `pod_environment` what a pod gets just before it starts
it: extra environment variables for every container and files written into the pod's directory.

Differences from Volcano:
- The values come from the job as the agent last saw it when the pod starts, not when it was created.
- A container's own variable of the same name wins over a plugin's (in Kubernetes the plugin's variable,
  appended after the container's, wins).
- Implemented: `svc` (see svc.py for how hosts are materialised), `env`, `pytorch`, `mpi`, `ssh` (its
  generated key pair comes in as data, see ssh.py). The others that admission accepts (`tensorflow`,
  `ray`, `hcclrank`) contribute nothing yet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

from contracts.job_plugins import env, mpi, pytorch, ssh, svc
from contracts.job_plugins.common import HOSTS_DIR, Contribution, PluginInput
from contracts.objects import Job, Pod

Plugin = Callable[[PluginInput], Contribution]

PLUGINS: Mapping[str, Plugin] = {
    "env": env.contribute,
    "mpi": mpi.contribute,
    "pytorch": pytorch.contribute,
    "ssh": ssh.contribute,  # without a key pair: only the keys its flags give
    "svc": svc.contribute,
}

__all__ = ["HOSTS_DIR", "PLUGINS", "Contribution", "PluginInput", "pod_environment"]


def pod_environment(
    job: Job, pod: Pod, pod_dir: str, *, ssh_keys: ssh.KeyPair | None = None
) -> tuple[dict[str, str], dict[str, bytes]]:
    """(env, files) the job's plugins give `pod` when it starts in the absolute directory `pod_dir`:
    env for every container, files as {path relative to pod_dir: content}. Plugins apply in name order
    (Volcano's order is a map's, i.e. none), so the outcome is the same on every agent. `ssh_keys`: the
    job's generated key pair, for the ssh plugin."""
    plugins: dict[str, Plugin] = {**PLUGINS, ssh.NAME: partial(ssh.contribute, keys=ssh_keys)}
    environment: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for name in sorted(job.plugins):
        plugin = plugins.get(name)
        if plugin is None:
            continue
        contribution = plugin(PluginInput(job, pod, tuple(job.plugins[name]), pod_dir))
        environment.update(contribution.env)
        files.update(contribution.files)
    return environment, files
