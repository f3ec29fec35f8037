"""The queue-controller core: Volcano's queue state machine and the PodGroup counts of each queue."""

from __future__ import annotations

from collections.abc import Iterable

import msgpack
import pytest
from support.core_log import CoreLog
from support.events import job_status as job_status_payload

from contracts import codec
from contracts.objects import ObjectMeta, PodGroup, PodGroupStatus, Queue
from services.queue_controller.core.core import QueueControllerCore
from services.queue_controller.core.machine import after_action, after_sync
from shared.runner_types import Event, Output


class Log(CoreLog):
    """Events in log order, folded into the core's state as they land (the runner's part)."""

    add = CoreLog.append

    def __init__(self) -> None:
        super().__init__(QueueControllerCore())

    def settle(self) -> list[Output]:
        """One round of reconcile says everything."""
        outputs = self.core.reconcile(self.state, 0.0)
        self.publish(outputs)
        assert self.core.reconcile(self.state, 0.0) == []
        return outputs

    def queue(self, name: str) -> Event:
        q = Queue(ObjectMeta(name, ""), weight=2)
        return self.add("QueueApplied", "queue", None, name, {"object": codec.encode_object(q)})

    def command(self, action: str, queue: str) -> Event:
        payload = {"action": action, "target_kind": "Queue", "target": queue}
        return self.add("CommandIssued", "command", "default", f"cmd-{len(self.events)}", payload)

    def podgroup(self, name: str, queue: str, phase: str = "Pending") -> Event:
        pg = PodGroup(ObjectMeta(name, "team-a"), queue=queue, status=PodGroupStatus(phase=phase))
        return self.add("PodGroupCreated", "podgroup", "team-a", name, {"object": codec.encode_object(pg)})

    def phase(self, name: str, phase: str) -> Event:
        return self.add(
            "PodGroupStatusChanged", "podgroup", "team-a", name, {"phase": phase, "conditions": []}
        )

    def delete_podgroup(self, name: str) -> Event:
        return self.add("PodGroupDeleted", "podgroup", "team-a", name)


def states(outputs: Iterable[Output]) -> list[tuple[str, str]]:
    return [(o.name, o.payload.state) for o in outputs if o.type == "QueueStateChanged"]


def counts(pending=0, inqueue=0, running=0, unknown=0, completed=0) -> dict[str, int]:
    return {
        "pending": pending,
        "inqueue": inqueue,
        "running": running,
        "unknown": unknown,
        "completed": completed,
    }


# --- the state machine -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "action", "has_podgroups", "expected"),
    [
        ("Open", "CloseQueue", False, "Closed"),
        ("Open", "CloseQueue", True, "Closing"),
        ("Closing", "CloseQueue", False, "Closed"),
        ("Closing", "CloseQueue", True, "Closing"),
        ("Closed", "CloseQueue", True, "Closed"),
        ("Open", "OpenQueue", True, "Open"),
        ("Closing", "OpenQueue", True, "Open"),
        ("Closed", "OpenQueue", False, "Open"),
    ],
)
def test_actions(state: str, action: str, has_podgroups: bool, expected: str) -> None:
    assert after_action(state, action, has_podgroups) == expected


@pytest.mark.parametrize(
    ("state", "has_podgroups", "expected"),
    [
        ("Closing", False, "Closed"),
        ("Closing", True, "Closing"),
        ("Open", False, "Open"),
        ("Closed", True, "Closed"),
    ],
)
def test_sync(state: str, has_podgroups: bool, expected: str) -> None:
    assert after_sync(state, has_podgroups) == expected


# --- the core --------------------------------------------------------------------------------------


def test_default_queue_is_published_open_once() -> None:
    log = Log()
    outputs = log.settle()
    assert states(outputs) == [("default", "Open")]
    assert log.state.counts("default") == counts()
    assert {(o.kind, o.namespace, o.correlation_id, o.causation_id) for o in outputs} == {
        ("queue", None, "default", None)
    }
    assert log.settle() == []


def test_a_state_keeps_the_id_earlier_releases_gave_it() -> None:
    # ids are deduplication keys: the same state of the same queue incarnation must keep its id after an
    # upgrade. The expected ids are the ones derived when the payload was built as a dict.
    log = Log()
    assert [o.id for o in log.settle()] == ["11235301-7e95-595d-8a00-330bc2883a9a"]
    log.queue("research")
    assert [o.id for o in log.settle()] == ["fb2f5f24-c1c5-5df2-abce-39bf835e9cfe"]
    log.podgroup("g", "research")
    log.command("CloseQueue", "research")
    assert [(o.payload.state, o.id) for o in log.settle()] == [
        ("Closing", "97b35178-393e-5177-b40d-05ef5a11bc14")
    ]


def test_a_new_queue_is_published_open() -> None:
    log = Log()
    log.settle()
    applied = log.queue("research")
    outputs = log.settle()
    assert states(outputs) == [("research", "Open")]
    log.queue("research")  # a spec change publishes nothing
    assert log.core.reconcile(log.state, 0.0) == []
    assert log.state.queues["research"].queue is not None
    assert applied.seq == log.state.queues["research"].incarnation


def test_close_without_podgroups_closes() -> None:
    log = Log()
    log.settle()
    close = log.command("CloseQueue", "default")
    outputs = log.settle()
    assert states(outputs) == [("default", "Closed")]
    assert outputs[0].causation_id == close.id
    log.command("OpenQueue", "default")
    assert states(log.settle()) == [("default", "Open")]


def test_close_with_podgroups_waits_for_them() -> None:
    log = Log()
    log.queue("research")
    log.podgroup("a", "research")
    log.podgroup("b", "research", phase="Running")
    log.settle()
    log.command("CloseQueue", "research")
    assert states(log.settle()) == [("research", "Closing")]
    log.delete_podgroup("a")
    assert states(log.settle()) == []
    assert log.state.counts("research") == counts(running=1)
    last = log.delete_podgroup("b")
    outputs = log.settle()
    assert states(outputs) == [("research", "Closed")]
    assert {o.causation_id for o in outputs} == {last.id}
    # a closed queue stays closed, even when a PodGroup still arrives (it raced the close)
    log.podgroup("c", "research")
    assert states(log.settle()) == []


def test_reopen_while_closing() -> None:
    log = Log()
    log.podgroup("a", "default")
    log.settle()
    log.command("CloseQueue", "default")
    log.command("OpenQueue", "default")
    assert states(log.settle()) == []  # Open → Closing → Open before anything was published
    log.command("CloseQueue", "default")
    assert states(log.settle()) == [("default", "Closing")]
    log.command("OpenQueue", "default")
    assert states(log.settle()) == [("default", "Open")]


def test_commands_for_other_targets_are_ignored() -> None:
    log = Log()
    log.settle()
    before = log.core.dump(log.state)
    log.add(
        "CommandIssued", "command", "team-a", "c", {"action": "AbortJob", "target_kind": "Job", "target": "j"}
    )
    log.command("CloseQueue", "no-such-queue")
    log.command("SuspendQueue", "default")
    assert log.core.dump(log.state) == before


def touched(log: Log, event: Event) -> list[str]:
    return log.core.touched(log.state, event)


def test_counts_by_podgroup_phase_and_the_queue_each_change_touches() -> None:
    log = Log()
    log.queue("research")
    for name in ("a", "b", "c"):
        assert touched(log, log.podgroup(name, "research")) == ["research"]
    assert touched(log, log.podgroup("d", "default")) == ["default"]
    assert (log.state.counts("default"), log.state.counts("research")) == (
        counts(pending=1),
        counts(pending=3),
    )
    log.phase("a", "Inqueue")
    log.phase("b", "Running")
    log.phase("c", "Unknown")
    assert log.state.counts("research") == counts(inqueue=1, running=1, unknown=1)
    assert touched(log, log.phase("b", "Completed")) == ["research"]
    assert touched(log, log.phase("b", "Completed")) == []  # the same phase again changes nothing
    assert log.state.counts("research") == counts(inqueue=1, completed=1, unknown=1)
    assert touched(log, log.delete_podgroup("a")) == ["research"]
    assert touched(log, log.delete_podgroup("a")) == []
    assert touched(log, log.phase("zzz", "Running")) == []
    assert log.state.counts("research") == counts(completed=1, unknown=1)
    # counts are the read model's to show: no event repeats them, only each queue's opening is recorded
    assert [(o.type, o.name) for o in log.settle()] == [
        ("QueueStateChanged", "default"),
        ("QueueStateChanged", "research"),
    ]


def test_podgroups_of_an_unknown_queue_count_once_it_exists() -> None:
    log = Log()
    log.settle()
    log.podgroup("a", "later")
    assert log.settle() == []
    log.queue("later")
    assert states(log.settle()) == [("later", "Open")]
    assert log.state.counts("later") == counts(pending=1)


def test_deleted_and_recreated_queue_publishes_afresh() -> None:
    log = Log()
    log.queue("research")
    first = {o.id for o in log.settle()}
    log.add("QueueDeleted", "queue", None, "research")
    assert "research" not in log.state.queues
    log.add("QueueDeleted", "queue", None, "default")  # the default queue cannot be deleted
    assert "default" in log.state.queues
    log.queue("research")
    again = log.settle()
    assert states(again) == [("research", "Open")]
    assert not first & {o.id for o in again}


def scenario() -> Log:
    log = Log()
    log.settle()
    log.queue("research")
    log.podgroup("a", "research")
    log.podgroup("b", "default")
    log.settle()
    log.command("CloseQueue", "research")
    log.phase("a", "Running")
    log.settle()
    log.delete_podgroup("a")
    log.settle()
    return log


@pytest.mark.parametrize("checkpoint_at", [0, 3, 8, 14])
def test_replay_from_a_checkpoint_writes_nothing_new(checkpoint_at: int) -> None:
    log = scenario()
    core = log.core
    state = core.initial()
    for event in log.events[:checkpoint_at]:
        state = core.apply(state, event)
    checkpoint = core.dump(state)
    for _ in range(2):
        replayed = core.load(checkpoint)
        for event in log.events[checkpoint_at:]:
            replayed = core.apply(replayed, event)
        assert core.reconcile(replayed, 0.0) == []
        assert replayed == log.state


def test_reconcile_repeats_the_same_ids_until_folded() -> None:
    log = Log()
    log.queue("research")
    assert log.core.reconcile(log.state, 0.0) == log.core.reconcile(log.state, 5.0)


def test_dump_load_round_trip() -> None:
    log = scenario()
    loaded = log.core.load(log.core.dump(log.state))
    assert loaded == log.state
    assert loaded.phases == {"default": {"Pending": 1}}
    with pytest.raises(ValueError, match="version"):
        log.core.load(msgpack.packb({"version": 0}))


def job_status(log: Log, name: str, phase: str) -> Event:
    return log.add("JobStatusChanged", "job", "team-a", name, job_status_payload(phase))


@pytest.mark.parametrize("final", ["Completed", "Failed", "Terminated"])
def test_a_closing_queue_closes_once_its_jobs_end(final: str) -> None:
    # Volcano's KillJob deletes a finished job's PodGroup; lahar keeps it readable until the job is
    # deleted, so the queue must stop waiting for it as soon as the job is final
    log = Log()
    log.queue("research")
    log.podgroup("a", "research", phase="Running")
    log.podgroup("b", "research", phase="Running")
    log.settle()
    log.command("CloseQueue", "research")
    assert states(log.settle()) == [("research", "Closing")]
    job_status(log, "a", "Running")
    job_status(log, "a", final)
    assert states(log.settle()) == []  # b still runs
    job_status(log, "b", final)
    assert states(log.settle()) == [("research", "Closed")]
    # the finished PodGroups are still counted by phase until they are deleted; deleting them is no change
    log.delete_podgroup("a")
    log.delete_podgroup("b")
    assert states(log.settle()) == []


def test_a_finished_job_survives_a_checkpoint() -> None:
    log = Log()
    log.queue("research")
    log.podgroup("a", "research", phase="Running")
    job_status(log, "a", "Completed")
    log.settle()
    restored = log.core.load(log.core.dump(log.state))
    assert restored.finished == {"team-a/a"}
    assert not restored.has_podgroups("research")
