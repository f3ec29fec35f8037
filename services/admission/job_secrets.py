"""The secrets admission writes with a Job: the ssh plugin's key pair (Volcano's `<job>-ssh` Secret).

A Job whose ssh plugin needs a generated pair (it has the plugin and no `--ssh-private-key`) gets one
JobSecretCreated right after its JobSubmitted, in the same atomic batch, so no agent ever sees the job
without its pair and every agent sees the same one. The pair is made by the shell (keygen.py); this
module only says which jobs need one and adds the events. An update keeps the pair: it is written once
per job incarnation (the job's uid), and a job submitted again after its deletion gets a new one.

The private key is in the log as Volcano's is in its Secret: readable by whoever may read the log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from contracts import payloads
from contracts.objects import Job
from services.admission.context_core import Plan, Write
from services.admission.core.decide import Emit
from services.job_controller.core.plugins import ssh

SECRET_EVENT = "JobSecretCreated"

KeyPair = tuple[bytes, bytes]  # (private key PEM, public key line)


def jobs_needing_keys(plan: Plan) -> list[Job]:
    """The jobs the plan submits whose ssh plugin needs a generated key pair, in write order."""
    return [
        w.emit.object
        for w in plan.writes
        if w.emit.type == "JobSubmitted"
        and isinstance(w.emit.object, Job)
        and ssh.needs_key_pair(w.emit.object)
    ]


def with_key_pairs(plan: Plan, pairs: Mapping[str, KeyPair]) -> Plan:
    """The plan with a JobSecretCreated after the JobSubmitted of every job in `pairs` (by job key)."""
    writes: list[Write] = []
    for write in plan.writes:
        writes.append(write)
        job = write.emit.object
        if write.emit.type != "JobSubmitted" or not isinstance(job, Job) or job.meta.key not in pairs:
            continue
        private, public = pairs[job.meta.key]
        payload = payloads.JobSecretCreated(
            name=ssh.secret_name(job), uid=job.meta.uid, data=ssh.secret_data(ssh.KeyPair(private, public))
        )
        # the same subject as the JobSubmitted before it, which carries the subject's guard
        writes.append(replace(write, emit=Emit(SECRET_EVENT, job, payload), expected_last_subject_seq=None))
    return replace(plan, writes=tuple(writes))
