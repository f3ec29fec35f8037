"""Volcano's `pytorch` job plugin: torch.distributed's rendezvous variables for the master and worker
tasks (flags `--master` (default master), `--worker` (worker), `--port` (23456)).

Every container gets MASTER_ADDR (the first master replica's `hostname.subdomain`), MASTER_PORT and
WORLD_SIZE (master plus worker replicas); RANK is 0 in the master and index + 1 in the workers, and absent
in other tasks. A job without the master task gets nothing, as in Volcano. Volcano also declares the port
on each container; processes here share the machine's ports, so there is nothing to declare.
"""

from __future__ import annotations

from contracts.job_plugins.common import (
    Contribution,
    PluginInput,
    find_task,
    go_flags,
    task_hosts,
    task_index,
    task_of,
)

DEFAULTS = {"master": "master", "worker": "worker", "port": "23456"}


def contribute(given: PluginInput) -> Contribution:
    flags = go_flags(given.arguments, DEFAULTS)
    master = find_task(given.job, flags["master"])
    if master is None:
        return Contribution()
    roles = (flags["master"], flags["worker"])
    world_size = sum(task.replicas for task in given.job.tasks if task.name in roles)
    env = {
        "MASTER_ADDR": task_hosts(given.job, master)[0],
        "MASTER_PORT": flags["port"],
        "WORLD_SIZE": str(world_size),
    }
    task = task_of(given.pod)
    if task == flags["worker"]:
        index = task_index(given.pod)
        if not index.isdigit():
            return Contribution()  # Volcano fails the pod's creation; here the pod starts without it
        env["RANK"] = str(int(index) + 1)
    elif task == flags["master"]:
        env["RANK"] = "0"
    return Contribution(env=env)
