"""The secrets admission writes with a Job: the ssh plugin's key pair (Volcano's `<job>-ssh` Secret).

A Job whose ssh plugin needs a generated pair (it has the plugin and no `--ssh-private-key`) gets one
JobSecretCreated right after its JobSubmitted, in the same atomic batch, so no agent ever sees the job
without its pair and every agent sees the same one. The pair is made by the shell (keygen.py); this
module only says which jobs need one and adds the events. An update keeps the pair: it is written once
per job incarnation (the job's uid), and a job submitted again after its deletion gets a new one.

The secret is sealed to the node agents' public key (`--secrets-public-key`, made by `lahar up`;
shared/security/sealing.py), bound to the job's namespace, name and uid: only a node agent opens it, and
only for this job. Without a key (an open stack: `lahar up --no-auth`, the integration fixtures) the data
is written in plain text, as Volcano keeps it in its Secret, with a warning from the shell
(docs/security.md, "Secrets").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

from contracts import payloads
from contracts.job_plugins import ssh
from contracts.objects import Job
from services.admission.context_core import Plan, Write
from services.admission.core.decide import Emit
from shared.security.sealing import seal_job_secret

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


def job_secret(job: Job, pair: KeyPair, recipient: X25519PublicKey | None) -> payloads.JobSecretCreated:
    """The job's JobSecretCreated: its pair sealed to `recipient`, in plain text without one."""
    data = ssh.secret_data(ssh.KeyPair(*pair))
    name = ssh.secret_name(job)
    if recipient is None:
        return payloads.JobSecretCreated(name=name, uid=job.meta.uid, data=data)
    return seal_job_secret(recipient, job.meta.namespace, job.meta.name, job.meta.uid, name, data)


def with_secrets(plan: Plan, secrets: Mapping[str, payloads.JobSecretCreated]) -> Plan:
    """The plan with a JobSecretCreated after the JobSubmitted of every job in `secrets` (by job key)."""
    writes: list[Write] = []
    for write in plan.writes:
        writes.append(write)
        job = write.emit.object
        if write.emit.type != "JobSubmitted" or not isinstance(job, Job) or job.meta.key not in secrets:
            continue
        # the same subject as the JobSubmitted before it, which carries the subject's guard
        emit = Emit(SECRET_EVENT, job, secrets[job.meta.key])
        writes.append(replace(write, emit=emit, expected_last_subject_seq=None))
    return replace(plan, writes=tuple(writes))
