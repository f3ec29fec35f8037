"""Volcano's `svc` job plugin: every pod learns the host names of all the job's pods.

Volcano writes a ConfigMap `<job>-svc` mounted at /etc/volcano in every container, with per task
`<task>.host` (its replicas' `hostname.subdomain`, one per line), `VC_<TASK>_HOSTS` (the same,
comma-separated) and `VC_<TASK>_NUM` (how many); the two VC_ keys are also injected as environment
variables (TASK is the task name upper-cased; '-' becomes '_' in every key, never in the host names).
A headless Service `<job>` makes the names resolve to the pods' IPs, and a NetworkPolicy admits traffic
only from the job's own pods.

lahar has no ConfigMaps and cannot write /etc: the same keys are files under `etc/volcano/` in the pod's
directory, and `VC_HOSTS_DIR` (lahar's own variable) holds that directory's absolute path. The process
runtime runs every pod on this machine (127.0.0.1) with no DNS of its own, so the names do not resolve by
themselves: `etc/volcano/hosts` maps each `hostname.subdomain` and bare `hostname` to 127.0.0.1 in
/etc/hosts format, for programs that can be pointed at a hosts file. Real resolution needs a container
runtime (a network namespace and a per-pod /etc/hosts). No Service and no NetworkPolicy exist, so the
plugin's flags (`--publish-not-ready-addresses`, `--disable-network-policy`) change nothing.
"""

from __future__ import annotations

from contracts.job_plugins.common import HOSTS_DIR, Contribution, PluginInput, task_hosts
from contracts.objects import Job

VC_HOSTS_DIR = "VC_HOSTS_DIR"
HOSTS_FILE = "hosts"
LOOPBACK = "127.0.0.1"


def config_entries(job: Job) -> dict[str, str]:
    """The keys and values of Volcano's `<job>-svc` ConfigMap (GenerateHosts)."""
    entries = {}
    for task in job.tasks:
        hosts = task_hosts(job, task)
        key = task.name.replace("-", "_")
        entries[f"{key}.host"] = "\n".join(hosts)
        entries[f"VC_{key.upper()}_HOSTS"] = ",".join(hosts)
        entries[f"VC_{key.upper()}_NUM"] = str(len(hosts))
    return entries


def hosts_file(job: Job) -> bytes:
    """/etc/hosts lines giving every host of the job the loopback address (the process runtime's)."""
    lines = [f"# the hosts of job {job.meta.namespace}/{job.meta.name}: every pod runs on this machine"]
    for task in job.tasks:
        for host in task_hosts(job, task):
            lines.append(f"{LOOPBACK}\t{host} {host.partition('.')[0]}")
    return ("\n".join(lines) + "\n").encode()


def contribute(given: PluginInput) -> Contribution:
    entries = config_entries(given.job)
    files = {f"{HOSTS_DIR}/{key}": value.encode() for key, value in entries.items()}
    files[f"{HOSTS_DIR}/{HOSTS_FILE}"] = hosts_file(given.job)
    env = {key: value for key, value in entries.items() if key.startswith("VC_")}
    env[VC_HOSTS_DIR] = f"{given.pod_dir.rstrip('/')}/{HOSTS_DIR}"
    return Contribution(env=env, files=files)
