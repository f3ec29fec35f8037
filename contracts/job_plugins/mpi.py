"""Volcano's `mpi` job plugin: the master task learns its workers (flags `--master` (default master),
`--worker` (worker), `--port` (22, the ssh port Volcano declares on the containers)).

Only the master's containers get MPI_HOST, the workers' `hostname.subdomain` comma-separated (for
`mpirun --host`). Admission adds the svc and ssh plugins mpi depends on; the ssh plugin supplies the
keys and config, but the process runtime starts no sshd, so mpirun's remote launch needs a launcher of
the user's own.
"""

from __future__ import annotations

from contracts.job_plugins.common import (
    Contribution,
    PluginInput,
    find_task,
    go_flags,
    task_hosts,
    task_of,
)

DEFAULTS = {"master": "master", "worker": "worker", "port": "22"}
MPI_HOST = "MPI_HOST"


def contribute(given: PluginInput) -> Contribution:
    flags = go_flags(given.arguments, DEFAULTS)
    if task_of(given.pod) != flags["master"]:
        return Contribution()
    worker = find_task(given.job, flags["worker"])
    if worker is None:
        return Contribution()  # Volcano indexes a missing task and panics; nothing to say here
    return Contribution(env={MPI_HOST: ",".join(task_hosts(given.job, worker))})
