"""What the cluster's pods cost admission's view: it counts the pods each queue has allocated (queue
deletion and re-parenting check them) from their bindings to their end, the queue being the one of the
PodGroup a binding names. A pod's creation and its start are not read (the runner skips those messages
before decoding them: a PodCreated carries a whole Pod), and folding a binding decodes nothing."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from admission_manifests import job_doc, parse, podgroup_doc, queue_doc
from support.events import EventLog

from contracts.codec import encode_object
from services.admission.context_core import AdmissionViewCore, View, plan
from services.admission.core.decide import APPLY, Request
from services.job_controller.core.expand import podgroup_for
from shared.runner_types import Event

CORE = AdmissionViewCore()


def admitted(*docs: dict[str, Any]) -> View:
    """The view once admission's own events for these manifests are folded back."""
    view = CORE.initial()
    decided = plan([Request(APPLY, parse(doc)) for doc in docs], view, "r", 1.0)
    assert decided.accepted, decided.errors
    for seq, write in enumerate(decided.writes, start=1):
        payload = {"object": encode_object(write.emit.object)}
        view = CORE.apply(
            view,
            Event(
                seq,
                write.emit.type,
                write.kind,
                write.namespace,
                write.name,
                payload,
                f"e{seq}",
                1.0,
                "",
                producer="admission",
            ),
        )
    return view


def log_after(view: View) -> EventLog:
    log = EventLog()
    log.seq = view.seq
    return log


def pod_event(log: EventLog, type: str, pod: str, group: str, **payload: Any) -> Event:
    """A pod event as the binder and the node agents write it: correlated with the pod's PodGroup."""
    event = log.event(type, f"default/{pod}", {"node": "n1", **payload})
    return Event(
        event.seq, event.type, event.kind, event.namespace, event.name, event.payload, event.id, 1.0, group
    )


def functions_called(work: Any) -> list[str]:
    called: list[str] = []

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call":
            called.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return called


def test_neither_a_pods_creation_nor_its_start_is_read() -> None:
    assert not {"PodCreated", "PodRunning", "PodDeletionRequested"} & CORE.reads
    assert {"PodBound", "PodEvicting", "PodSucceeded", "PodFailed", "PodTerminated", "PodLost"} <= CORE.reads


def test_a_jobs_bound_pods_count_against_its_queue_until_they_stop() -> None:
    view = admitted(queue_doc("research"), job_doc(queue="research"))
    job = view.jobs["default/train"]
    group = podgroup_for(job).meta.key
    assert group == job.meta.key  # the job-controller names a Job's PodGroup after the Job
    log = log_after(view)
    for pod in ("train-worker-0", "train-worker-1"):
        view = CORE.apply(view, pod_event(log, "PodBound", pod, group, plan="p"))
    assert view.context().allocated_pods("research") == 2
    view = CORE.apply(
        view, pod_event(log, "PodEvicting", "train-worker-0", group, reason="preempt", plan="q")
    )
    view = CORE.apply(view, pod_event(log, "PodSucceeded", "train-worker-1", group))
    assert view.context().allocated_pods("research") == 1
    view = CORE.apply(view, pod_event(log, "PodTerminated", "train-worker-0", group))
    assert view.context().allocated_pods("research") == 0 and not view.pods


def test_a_plain_pods_binding_counts_against_its_podgroups_queue() -> None:
    view = admitted(queue_doc("batch"), podgroup_doc("gang", queue="batch"))
    log = log_after(view)
    view = CORE.apply(view, pod_event(log, "PodBound", "gang-0", "default/gang", plan="p"))
    assert view.context().allocated_pods("batch") == 1


def test_a_binding_whose_podgroup_is_unknown_counts_nowhere_and_the_view_goes_on() -> None:
    view = admitted(job_doc())
    log = log_after(view)
    view = CORE.apply(view, pod_event(log, "PodBound", "gone-0", "default/gone", plan="p"))
    assert view.pods == {} and view.seq == log.seq
    view = CORE.apply(view, pod_event(log, "PodBound", "train-worker-0", "default/train", plan="p"))
    assert view.context().allocated_pods("default") == 1


def test_a_checkpoint_keeps_only_bound_pods() -> None:
    """Checkpoints written while the view read PodCreated hold created pods not yet bound: loaded, those
    are dropped (their binding counts them, as any other pod's)."""
    view = admitted(job_doc())
    view.pods.update({"default/train-0": ["default", True], "default/train-1": ["default", False]})
    loaded = CORE.load(CORE.dump(view))
    assert loaded.pods == {"default/train-0": ["default", True]}
    assert loaded.context().allocated_pods("default") == 1
    loaded = CORE.apply(
        loaded, pod_event(log_after(loaded), "PodBound", "train-1", "default/train", plan="p")
    )
    assert loaded.context().allocated_pods("default") == 2


@pytest.mark.parametrize("type", ["PodBound", "PodSucceeded"])
def test_folding_a_pod_event_costs_a_handful_of_calls_and_decodes_nothing(type: str) -> None:
    view = admitted(job_doc(queue="default"))
    log = log_after(view)
    view = CORE.apply(view, pod_event(log, "PodBound", "train-worker-0", "default/train", plan="p"))
    extra = {"plan": "p"} if type == "PodBound" else {}
    event = pod_event(
        log, type, "train-worker-1" if type == "PodBound" else "train-worker-0", "default/train", **extra
    )
    called = functions_called(lambda: CORE.apply(view, event))
    assert not [f for f in called if "/contracts/" in f], called
    assert len(called) <= 8, called
