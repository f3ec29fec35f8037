"""The crash-recovery invariants over hand-made logs: a clean history passes, and each kind of violation
(lost job, double bind, bind of a pod that is not pending, over-commit, duplicate fact) is caught."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest
from e2e.log_invariants import (
    Violation,
    binding_violations,
    check_log,
    duplicate_facts,
    lost_jobs,
    overcommit_violations,
    summary,
)
from support.events import job_status

from contracts.codec import encode_object
from contracts.objects import Container, Node, ObjectMeta, Pod, PodSpec
from contracts.resources import Resources
from shared.runner_types import Event


class Log:
    """Appends events with increasing seqs; kind and namespace follow the event's subject."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._seq = itertools.count(1)

    def add(
        self,
        type_: str,
        kind: str,
        name: str,
        payload: dict[str, Any] | None = None,
        *,
        namespace: str | None = "default",
        id_: str | None = None,
        cause: str | None = None,
    ) -> Event:
        event = Event(
            seq=next(self._seq),
            type=type_,
            kind=kind,
            namespace=namespace,
            name=name,
            payload=payload or {},
            id=id_ or str(uuid.uuid4()),
            time=0.0,
            correlation_id=name,
            causation_id=cause,
        )
        self.events.append(event)
        return event

    def node(self, name: str, cpu: str = "4", pods: int = 110) -> Event:
        allocatable = Resources.parse({"cpu": cpu, "memory": "8Gi", "pods": pods})
        obj = Node(meta=ObjectMeta(name=name, namespace=""), allocatable=allocatable, capacity=allocatable)
        return self.add("NodeRegistered", "node", name, {"object": encode_object(obj)}, namespace=None)

    def pod(self, name: str, uid: str | None = None, cpu: str = "1") -> Event:
        container = Container(name="main", requests=Resources.parse({"cpu": cpu, "memory": "1Gi"}))
        obj = Pod(meta=ObjectMeta(name=name, uid=uid or f"uid-{name}"), spec=PodSpec(containers=(container,)))
        return self.add("PodCreated", "pod", name, {"object": encode_object(obj)})

    def bind(self, pod: str, node: str) -> Event:
        return self.add("PodBound", "pod", pod, {"node": node, "plan": "p"})

    def pod_event(self, type_: str, pod: str, node: str, bind: Event | None = None) -> Event:
        payload = {"node": node, "reason": "x", "exit_code": 0}
        return self.add(type_, "pod", pod, payload, cause=bind.id if bind else None)

    def job(self, name: str, request: str = "r1") -> Event:
        return self.add("JobSubmitted", "job", name, {"object": {"kind": "Job", "object": {}}}, cause=request)

    def status(self, name: str, phase: str) -> Event:
        return self.add("JobStatusChanged", "job", name, job_status(phase))


def healthy() -> Log:
    """Two nodes, two jobs of two pods each, every pod run once, every job Completed."""
    log = Log()
    log.node("n1")
    log.node("n2")
    for job in ("a", "b"):
        log.job(job, request=f"req-{job}")
        log.status(job, "Pending")
        for i in range(2):
            pod = f"{job}-{i}"
            log.pod(pod, cpu="2")
            bind = log.bind(pod, f"n{i + 1}")
            log.pod_event("PodRunning", pod, f"n{i + 1}", bind)
            log.pod_event("PodSucceeded", pod, f"n{i + 1}", bind)
        log.status(job, "Running")
        log.status(job, "Completed")
    return log


def invariants(violations: list[Violation]) -> list[str]:
    return [v.invariant for v in violations]


def test_a_clean_history_holds_every_invariant() -> None:
    log = healthy()
    assert check_log(log.events, accepted=["default/a", "default/b"]) == []
    assert "2 jobs" in summary(log.events)


# --- 1. lost jobs ------------------------------------------------------------------------------------


def test_an_accepted_job_missing_from_the_log_is_lost() -> None:
    found = lost_jobs(healthy().events, accepted=["default/a", "default/b", "default/c"])
    assert [v.message for v in found] == ["job default/c was accepted but never submitted"]


@pytest.mark.parametrize(
    ("phases", "expected"),
    [
        ((), "no status at all"),
        (("Pending", "Running"), "last phase Running"),
        (("Pending", "Running", "Failed"), "last phase Failed"),
    ],
)
def test_a_submitted_job_that_does_not_complete_is_lost(phases: tuple[str, ...], expected: str) -> None:
    log = Log()
    submitted = log.job("c")
    for phase in phases:
        log.status("c", phase)
    found = lost_jobs(log.events)
    assert len(found) == 1
    assert found[0].seq == submitted.seq
    assert expected in found[0].message


def test_a_resubmitted_job_must_complete_again_and_a_deleted_one_need_not() -> None:
    log = healthy()
    log.add("JobDeleted", "job", "a")
    log.job("a", request="again")  # a new incarnation, not finished
    log.add("JobDeleted", "job", "b")  # deleted: not expected to complete
    assert [v.message for v in lost_jobs(log.events)] == [
        "job default/a did not complete: last phase no status at all"
    ]


# --- 2. binds ----------------------------------------------------------------------------------------


def test_a_pod_bound_twice_is_caught_with_both_nodes() -> None:
    log = Log()
    log.node("n1")
    log.node("n2")
    log.pod("p")
    log.bind("p", "n1")
    second = log.bind("p", "n2")
    found = binding_violations(log.events)
    assert invariants(found) == ["double-bind"]
    assert found[0].seq == second.seq
    assert "n2" in found[0].message and "n1" in found[0].message


def test_a_recreated_pod_has_a_new_uid_and_may_be_bound_again() -> None:
    log = Log()
    log.node("n1")
    log.node("n2")
    log.pod("p", uid="u1")
    log.bind("p", "n1")
    log.pod_event("PodLost", "p", "n1")
    log.pod("p", uid="u2")
    log.bind("p", "n2")
    assert check_log(log.events) == []


@pytest.mark.parametrize(
    ("created", "before_bind", "expected"),
    [
        (False, None, ["bind-not-pending"]),
        (True, ("PodDeletionRequested", {"reason": "JobFinished"}), ["bind-not-pending"]),
        (True, ("PodEvicting", {"node": "n1", "reason": "preempt", "plan": "p0"}), ["bind-not-pending"]),
        (True, None, []),
    ],
    ids=["never-created", "deletion-requested", "evicting", "pending"],
)
def test_only_a_pending_pod_may_be_bound(
    created: bool, before_bind: tuple[str, dict[str, Any]] | None, expected: list[str]
) -> None:
    log = Log()
    log.node("n1")
    if created:
        log.pod("p")
    if before_bind is not None:
        log.add(before_bind[0], "pod", "p", before_bind[1])
    log.bind("p", "n1")
    assert invariants(binding_violations(log.events)) == expected


# --- 3. over-commit ----------------------------------------------------------------------------------


def test_binds_beyond_a_nodes_cpu_are_an_over_commit() -> None:
    log = Log()
    log.node("n1", cpu="4")
    for name in ("p1", "p2", "p3"):
        log.pod(name, cpu="2")
    log.bind("p1", "n1")
    log.bind("p2", "n1")
    third = log.bind("p3", "n1")
    found = overcommit_violations(log.events)
    assert [(v.invariant, v.seq) for v in found] == [("over-commit", third.seq)]
    assert "cpu 6000 > 4000" in found[0].message


def test_a_finished_run_frees_its_node() -> None:
    log = Log()
    log.node("n1", cpu="4")
    for name in ("p1", "p2", "p3"):
        log.pod(name, cpu="2")
    first = log.bind("p1", "n1")
    log.bind("p2", "n1")
    log.pod_event("PodSucceeded", "p1", "n1", first)
    log.bind("p3", "n1")
    assert overcommit_violations(log.events) == []


def test_a_late_report_of_an_old_run_does_not_free_the_new_run_of_the_same_pod() -> None:
    log = Log()
    log.node("n1", cpu="4")
    log.pod("p", uid="u1", cpu="2")
    old = log.bind("p", "n1")
    log.pod_event("PodLost", "p", "n1")  # the binder gives the run up: freed
    log.pod("p", uid="u2", cpu="2")
    log.bind("p", "n1")
    log.pod_event("PodFailed", "p", "n1", old)  # the agent's late report of the old run frees nothing more
    log.pod("q", cpu="2")
    log.bind("q", "n1")
    log.pod("r", cpu="2")
    third = log.bind("r", "n1")
    assert [v.seq for v in overcommit_violations(log.events)] == [third.seq]


def test_more_pods_than_the_node_takes_are_an_over_commit() -> None:
    log = Log()
    log.node("n1", cpu="100", pods=2)
    for name in ("p1", "p2", "p3"):
        log.pod(name)
        log.bind(name, "n1")
    found = overcommit_violations(log.events)
    assert len(found) == 1
    assert "3 pods there (max 2)" in found[0].message


def test_a_bind_to_an_unregistered_node_is_an_over_commit() -> None:
    log = Log()
    log.pod("p")
    log.bind("p", "ghost")
    assert "unknown node ghost" in overcommit_violations(log.events)[0].message


# --- 4. duplicates -----------------------------------------------------------------------------------


def test_an_event_id_stored_twice_is_a_duplicate() -> None:
    log = healthy()
    log.add("PodRunning", "pod", "a-0", {"node": "n1"}, id_=log.events[5].id)
    found = duplicate_facts(log.events)
    assert invariants(found) == ["duplicate"]
    assert "stored twice" in found[0].message


def test_a_second_pod_created_for_one_uid_is_a_duplicate() -> None:
    log = Log()
    log.pod("p", uid="u1")
    log.pod("p", uid="u1")
    assert "PodCreated default/p for uid u1 again" in duplicate_facts(log.events)[0].message


def test_a_job_submitted_twice_is_a_duplicate_unless_deleted_in_between() -> None:
    log = Log()
    log.job("j", request="r1")
    log.job("j", request="r1")
    log.add("JobDeleted", "job", "j")
    log.job("j", request="r2")
    found = duplicate_facts(log.events)
    assert [v.seq for v in found] == [2]
    assert "JobSubmitted of the same request for live job default/j" in found[0].message


def test_a_job_completed_twice_in_one_incarnation_is_a_duplicate() -> None:
    log = healthy()
    log.status("a", "Completed")
    assert invariants(duplicate_facts(log.events)) == ["duplicate"]
    again = healthy()
    again.add("JobDeleted", "job", "a")
    again.job("a", request="again")
    again.status("a", "Completed")
    assert duplicate_facts(again.events) == []
