"""`lahar events`' history of one job: which events belong to it, their causes, and secrets kept out."""

from __future__ import annotations

from typing import Any

from shared.client_reads import RawEvent, job_history


def raw(
    seq: int, type: str, kind: str, about: str, producer: str, cause: str | None, **payload: Any
) -> RawEvent:
    correlation = "default/train" if about.startswith("train") else f"default/{about}"
    return RawEvent(
        seq, float(seq), type, kind, "default", about, producer, f"e{seq}", correlation, cause, payload
    )


LOG = [
    raw(1, "JobSubmitted", "job", "train", "admission", "req-1", object={}),
    raw(
        2,
        "JobSecretCreated",
        "job",
        "train",
        "admission",
        "req-1",
        name="train-ssh",
        uid="u",
        data={"id_rsa": "PRIVATE", "id_rsa.pub": "PUBLIC"},
    ),
    raw(3, "JobSubmitted", "job", "other", "admission", "req-2", object={}),
    raw(4, "PodGroupCreated", "podgroup", "train", "job-controller", "e1", object={}),
    raw(5, "PodCreated", "pod", "train-worker-0", "job-controller", "e4", object={}),
    raw(6, "PodBound", "pod", "train-worker-0", "binder", "plan-7", node="n1"),
]


def test_the_history_holds_the_jobs_events_with_their_causes() -> None:
    history = job_history(LOG, "default", "train")
    assert [(e.seq, e.cause) for e in history] == [
        (1, "request req-1"),
        (2, "request req-1"),
        (4, "JobSubmitted job/train"),
        (5, "PodGroupCreated podgroup/train"),
        (6, "plan-7"),
    ]


def test_a_secrets_content_never_shows() -> None:
    secret = job_history(LOG, "default", "train")[1]
    assert secret.payload == {
        "name": "train-ssh",
        "uid": "u",
        "data": {"id_rsa": "<redacted>", "id_rsa.pub": "<redacted>"},
    }
    assert "PRIVATE" not in str(secret.to_dict())
