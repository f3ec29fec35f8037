"""Which pods and PodGroups a session sees: the live ones, kept up to date one object at a time (pure).

Finished work stays in the scheduler's view (a read of a pod must still find it) but leaves the
snapshot, so that a session's cost does not grow with history:
- a PodGroup is finished once none of its pods is still to run or running (all Succeeded or Failed, or
  none left) and it is Completed, or its Job is final (Completed, Failed, Terminated) and it has fewer
  pods than minMember (at least one). A session marks a gang whose pods all ended Completed once at
  least minMember of them did, so such a gang stays until it is marked; one that is short never would
  be. Volcano's scheduler never sees either: its job-controller deletes the PodGroup of a finished job;
- a Succeeded or Failed pod is seen only with a live PodGroup: the gang plugin counts Succeeded pods
  towards minAvailable, and the phase and counts a session writes for the group include them. Without a
  live PodGroup nothing reads it (finished pods use no node).
A pod that is pending, bound, running or terminating is always seen, whatever its group: it holds node
resources or waits for them. A finished group comes back if one of its pods comes back to life (a new
pod is created for it) or its job leaves a final phase.

Every change costs O(1), except that a group turning finished or live again re-sorts its own pods. A live
pod's task facts (`model/facts.py`) are kept here too: computed once per version of the pod, when a
snapshot first asks for them, and handed to every session with the snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from contracts.objects import Pod, PodGroup
from services.scheduler.core.model.facts import TaskFacts, task_facts
from services.scheduler.core.snapshot import podgroup_key

FINISHED_POD_PHASES = frozenset({"Succeeded", "Failed"})
# Volcano's finished job states (a job never leaves them)
FINAL_JOB_PHASES = frozenset({"Completed", "Failed", "Terminated"})
COMPLETED = "Completed"


PENDING = "Pending"


def _finished(pod: Pod) -> bool:
    return pod.status.phase in FINISHED_POD_PHASES


def _waits(pod: Pod) -> bool:
    """Volcano's Pending task: a pending pod with no node that is not being deleted."""
    return pod.status.phase == PENDING and not pod.spec.node_name and pod.meta.deletion_timestamp is None


class LiveObjects:
    """All pods and PodGroups as sessions should see them (`pods`, `podgroups`), and the live subset that
    goes into a snapshot (`live_pods()`, `live_podgroups()`, tuples cached until they change)."""

    __slots__ = (
        "_facts",
        "_final_jobs",
        "_finished_groups",
        "_group_of",
        "_live",
        "_members",
        "_pending_phase",
        "_stale",
        "_tuples",
        "_unfinished",
        "_waiting",
        "podgroups",
        "pods",
        "touched",
    )

    def __init__(self) -> None:
        self.pods: dict[str, Pod] = {}
        self.podgroups: dict[str, PodGroup] = {}
        self._live: dict[str, dict[str, Any]] = {"pods": {}, "podgroups": {}}
        # live pod key -> its facts, in the order of the live pods (None until first asked for)
        self._facts: dict[str, TaskFacts | None] = {}
        self._stale: set[str] = set()  # live pods whose facts are to be computed again
        self._tuples: dict[str, tuple[Any, ...]] = {}
        self._members: dict[str, set[str]] = {}  # group key -> keys of its pods
        self._group_of: dict[str, str] = {}  # pod key -> its group's (podgroup_key, read once per pod)
        self._unfinished: dict[str, int] = {}  # group key -> how many of its pods have not finished
        self._final_jobs: set[str] = set()  # keys of Jobs in a final phase (a Job's group has its key)
        self._finished_groups: set[str] = set()
        # what a session may still do something for: groups with pods waiting for a node (how many),
        # and PodGroups in the Pending phase (waiting to be enqueued)
        self._waiting: dict[str, int] = {}
        self._pending_phase: set[str] = set()
        # groups whose pods changed since the reader last cleared this (the status a session writes for
        # them may have changed)
        self.touched: set[str] = set()

    # --- reading -------------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """How many pods and PodGroups the view holds, and how many of them sessions see."""
        return {
            "pods": len(self.pods),
            "live_pods": len(self._live["pods"]),
            "podgroups": len(self.podgroups),
            "live_podgroups": len(self._live["podgroups"]),
        }

    def final_jobs(self) -> frozenset[str]:
        """Keys of the Jobs in a final phase (their finished PodGroups stay out of snapshots)."""
        return frozenset(self._final_jobs)

    def group_of(self, key: str) -> str | None:
        """The PodGroup key of the pod `key` (its `podgroup_key`), None if no such pod is seen."""
        return self._group_of.get(key)

    def live_pods(self) -> tuple[Pod, ...]:
        return self._tuple("pods")

    def finished(self, key: str) -> bool:
        """Has the PodGroup `key` finished (left the snapshot while still readable here)?"""
        return key in self._finished_groups

    def live_podgroups(self) -> tuple[PodGroup, ...]:
        return self._tuple("podgroups")

    def live_facts(self) -> tuple[TaskFacts, ...]:
        """The live pods' task facts, in the order of `live_pods()`. A pod's facts are computed once per
        version of the pod, the first time a snapshot asks after it changed; the rest are kept."""
        cached = self._tuples.get("facts")
        if cached is None:
            live, facts = self._live["pods"], self._facts
            for key in self._stale:
                facts[key] = task_facts(live[key], facts[key])
            self._stale.clear()
            cached = self._tuples["facts"] = tuple(facts.values())
        return cached

    def waiting_groups(self) -> set[str]:
        """Keys of the live PodGroups a session may act for without any pod of theirs changing: those
        with a pod waiting for a node (pending, unbound, not being deleted; a session may place it, or
        preempt and reclaim for it) and those in the Pending phase (a session may enqueue them)."""
        live = self._live["podgroups"]
        return {*self._waiting, *(key for key in self._pending_phase if key in live)}

    def _tuple(self, kind: str) -> tuple[Any, ...]:
        cached = self._tuples.get(kind)
        if cached is None:
            cached = self._tuples[kind] = tuple(self._live[kind].values())
        return cached

    # --- changes -------------------------------------------------------------------------------------
    def put_pod(self, key: str, pod: Pod | None) -> None:
        """The pod as sessions should see it now (None: gone)."""
        old = self.pods.get(key)
        if old is not None and pod is not None and old.meta is pod.meta:
            # Most pod events change its status or spec and keep its meta, so its group: the group's
            # counts change by what the pod's own change does, and only a pod finishing (or coming
            # back) can change whether the group is finished.
            group = self._group_of[key]
            self.pods[key] = pod
            finished = _finished(pod)
            if finished != _finished(old):
                _add(self._unfinished, group, -1 if finished else 1)
            waits = _waits(pod)
            if waits != _waits(old):
                _add(self._waiting, group, 1 if waits else -1)
            if finished != _finished(old):
                self._sort_group(group)
            self._sort_pod(key)
            self.touched.add(group)
            return
        groups = set()
        old = self.pods.pop(key, None)
        if old is not None:
            groups.add(self._leave(key, old))
        if pod is not None:
            self.pods[key] = pod
            groups.add(self._join(key, pod))
        for group in groups:
            self._sort_group(group)
        self._sort_pod(key)
        self.touched |= groups

    def put_podgroup(self, key: str, pg: PodGroup | None) -> None:
        existed = key in self.podgroups
        if pg is None:
            self.podgroups.pop(key, None)
            self._final_jobs.discard(key)
        else:
            self.podgroups[key] = pg
        if pg is not None and pg.status.phase == PENDING:
            self._pending_phase.add(key)
        else:
            self._pending_phase.discard(key)
        # whether the group exists decides whether its finished pods are seen
        self._sort_group(key, resort=existed != (pg is not None))

    def restore_final_jobs(self, keys: Iterable[str]) -> None:
        """Jobs known final from a checkpoint (no event will say so again)."""
        for key in keys:
            self._final_jobs.add(key)
            self._sort_group(key)

    def job_phase(self, key: str, phase: str | None) -> None:
        """The Job `key` is in `phase` (None: it is gone or submitted anew)."""
        if phase in FINAL_JOB_PHASES:
            self._final_jobs.add(key)
        else:
            self._final_jobs.discard(key)
        self._sort_group(key)

    # --- bookkeeping ---------------------------------------------------------------------------------
    def _join(self, key: str, pod: Pod) -> str:
        group = self._group_of[key] = podgroup_key(pod)
        self._members.setdefault(group, set()).add(key)
        if not _finished(pod):
            self._unfinished[group] = self._unfinished.get(group, 0) + 1
        if _waits(pod):
            self._waiting[group] = self._waiting.get(group, 0) + 1
        return group

    def _leave(self, key: str, pod: Pod) -> str:
        group = self._group_of.pop(key)
        members = self._members[group]
        members.discard(key)
        if not members:
            del self._members[group]
        if not _finished(pod):
            left = self._unfinished[group] - 1
            if left:
                self._unfinished[group] = left
            else:
                del self._unfinished[group]
        if _waits(pod):
            waiting = self._waiting[group] - 1
            if waiting:
                self._waiting[group] = waiting
            else:
                del self._waiting[group]
        return group

    def _sort_group(self, key: str, *, resort: bool = False) -> None:
        pg = self.podgroups.get(key)
        finished = (
            pg is not None
            and key not in self._unfinished
            and (
                pg.status.phase == COMPLETED
                or (key in self._final_jobs and len(self._members.get(key, ())) < max(pg.min_member, 1))
            )
        )
        if finished != (key in self._finished_groups):
            resort = True
            if finished:
                self._finished_groups.add(key)
            else:
                self._finished_groups.discard(key)
        self._set_live("podgroups", key, None if finished else pg)
        if resort:
            for pod_key in self._members.get(key, ()):
                self._sort_pod(pod_key)

    def _sort_pod(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is not None and _finished(pod):
            group = self._group_of[key]
            if group not in self.podgroups or group in self._finished_groups:
                pod = None
        self._set_live("pods", key, pod)

    def _set_live(self, kind: str, key: str, obj: Any | None) -> None:
        live: dict[str, Any] = self._live[kind]
        if obj is None:
            if live.pop(key, None) is None:
                return
        elif live.get(key) is obj:
            return
        else:
            live[key] = obj
        self._tuples.pop(kind, None)
        if kind == "pods":
            # `_facts` mirrors the live pods' order: a changed pod keeps its place, its facts go stale
            if obj is None:
                del self._facts[key]
                self._stale.discard(key)
            else:
                self._facts.setdefault(key, None)
                self._stale.add(key)
            self._tuples.pop("facts", None)


def _add(counts: dict[str, int], key: str, delta: int) -> None:
    """Change a count kept only while it is positive."""
    count = counts.get(key, 0) + delta
    if count:
        counts[key] = count
    else:
        del counts[key]
