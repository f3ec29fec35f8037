"""Which submitted jobs need an ssh key pair, and where their JobSecretCreated goes in the plan."""

from __future__ import annotations

from admission_manifests import job_doc, parse, queue_doc, task

from contracts import payloads
from services.admission.context_core import AdmissionViewCore, Plan, plan
from services.admission.core.decide import APPLY, Request
from services.admission.job_secrets import jobs_needing_keys, with_key_pairs

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


def test_each_secret_follows_its_jobs_submission_on_the_same_subject_under_its_guard() -> None:
    decided = planned(mpi_doc("b", **MPI), job_doc("plain"), mpi_doc("a", ssh=[]))
    sealed = with_key_pairs(decided, {"default/a": (b"PRIV-A", b"PUB-A"), "default/b": (b"PRIV-B", b"PUB-B")})
    assert [(w.emit.type, w.name) for w in sealed.writes] == [
        ("JobSubmitted", "b"),
        ("JobSecretCreated", "b"),
        ("JobSubmitted", "plain"),
        ("JobSubmitted", "a"),
        ("JobSecretCreated", "a"),
    ]
    submitted, secret = sealed.writes[0], sealed.writes[1]
    assert (secret.kind, secret.namespace, secret.correlation_id) == ("job", "default", "default/b")
    assert submitted.expected_last_subject_seq == 0 and secret.expected_last_subject_seq is None
    assert secret.emit.payload == payloads.JobSecretCreated(
        name="b-ssh", uid=submitted.emit.object.meta.uid, data={"id_rsa": "PRIV-B", "id_rsa.pub": "PUB-B"}
    )
    assert sealed.outcomes == decided.outcomes
    assert with_key_pairs(decided, {}) == decided
