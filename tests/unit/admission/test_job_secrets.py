"""Which submitted jobs need an ssh key pair, and where their JobSecretCreated goes in the plan."""

from __future__ import annotations

import msgspec
import pytest
from admission_manifests import job_doc, parse, queue_doc, task
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from contracts import payloads
from services.admission.context_core import AdmissionViewCore, Plan, plan
from services.admission.core.decide import APPLY, Request
from services.admission.job_secrets import job_secret, jobs_needing_keys, with_secrets
from shared.security.sealing import SealError, open_job_secret

MPI = {"mpi": ["--master=master", "--worker=worker"]}


def planned(*docs: dict) -> Plan:
    requests = [Request(APPLY, parse(doc)) for doc in docs]
    decided = plan(requests, AdmissionViewCore().initial(), "req-1", 10.0)
    assert decided.accepted, decided.errors
    return decided


def mpi_doc(name: str, **plugins: list[str]) -> dict:
    return job_doc(name, tasks=[task("master"), task("worker", 2)], plugins=plugins)


def test_jobs_whose_ssh_plugin_needs_a_generated_pair_are_named_in_write_order() -> None:
    decided = planned(
        queue_doc("research"),
        mpi_doc("b", **MPI),  # mpi brings ssh
        job_doc("plain"),
        mpi_doc("a", ssh=[]),
        mpi_doc("own", ssh=["--ssh-private-key=KEY"]),  # the user's own key: nothing to generate
    )
    assert [job.meta.name for job in jobs_needing_keys(decided)] == ["b", "a"]


def plain_secrets(
    decided: Plan, pairs: dict[str, tuple[bytes, bytes]]
) -> dict[str, payloads.JobSecretCreated]:
    jobs = {job.meta.key: job for job in jobs_needing_keys(decided)}
    return {key: job_secret(jobs[key], pair, None) for key, pair in pairs.items()}


def test_each_secret_follows_its_jobs_submission_on_the_same_subject_under_its_guard() -> None:
    decided = planned(mpi_doc("b", **MPI), job_doc("plain"), mpi_doc("a", ssh=[]))
    secrets = plain_secrets(decided, {"default/a": (b"PRIV-A", b"PUB-A"), "default/b": (b"PRIV-B", b"PUB-B")})
    written = with_secrets(decided, secrets)
    assert [(w.emit.type, w.name) for w in written.writes] == [
        ("JobSubmitted", "b"),
        ("JobSecretCreated", "b"),
        ("JobSubmitted", "plain"),
        ("JobSubmitted", "a"),
        ("JobSecretCreated", "a"),
    ]
    submitted, secret = written.writes[0], written.writes[1]
    assert (secret.kind, secret.namespace, secret.correlation_id) == ("job", "default", "default/b")
    assert submitted.expected_last_subject_seq == 0 and secret.expected_last_subject_seq is None
    assert secret.emit.payload == payloads.JobSecretCreated(
        name="b-ssh", uid=submitted.emit.object.meta.uid, data={"id_rsa": "PRIV-B", "id_rsa.pub": "PUB-B"}
    )
    assert written.outcomes == decided.outcomes
    assert with_secrets(decided, {}) == decided


def test_with_the_node_agents_key_the_pair_is_sealed_to_it_for_this_job_only() -> None:
    a, b = jobs_needing_keys(planned(mpi_doc("a", ssh=[]), mpi_doc("b", ssh=[])))
    agents = X25519PrivateKey.generate()
    secret = job_secret(a, (b"-----BEGIN RSA PRIVATE KEY-----\nPRIV", b"ssh-rsa PUB"), agents.public_key())
    assert secret.data == {} and secret.sealed is not None
    assert (secret.name, secret.uid) == ("a-ssh", a.meta.uid)
    assert b"PRIV" not in msgspec.json.encode(secret)
    opened = open_job_secret(agents, "default", "a", secret)
    assert opened == {"id_rsa": "-----BEGIN RSA PRIVATE KEY-----\nPRIV", "id_rsa.pub": "ssh-rsa PUB"}
    with pytest.raises(SealError, match="authentication failed"):  # copied onto job b's subject
        open_job_secret(agents, "default", b.meta.name, secret)
