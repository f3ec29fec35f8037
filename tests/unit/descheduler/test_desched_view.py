"""The descheduler's view folded from the log: pods on their nodes from PodBound until they stop, a new
generation unbound, the descheduler's own evictions remembered for the cool-down; and its checkpoint."""

from __future__ import annotations

from support.builders import node, pod, podgroup
from support.events import EventLog

from contracts import payloads
from services.descheduler.core.core import DeschedulerCore
from services.descheduler.core.view import ClusterView


def fold(core: DeschedulerCore, *events: object) -> ClusterView:
    view = core.initial()
    for event in events:
        view = core.apply(view, event)  # type: ignore[arg-type]
    return view


def test_a_pods_life_on_its_node_and_its_next_generation() -> None:
    log, core = EventLog(), DeschedulerCore(cooldown_s=60.0)
    job_pod = pod("j-t-0", "j", annotations={"volcano.sh/job-name": "j"})
    bound = log.event("PodBound", "default/j-t-0", payloads.PodBound(node="n1", plan="p1"))
    evicting = log.event(
        "PodEvicting",
        "default/j-t-0",
        payloads.PodEvicting(node="n1", reason="deschedule: LoadAware: hot", plan="p2"),
        at=100.0,
    )
    view = fold(core, log.created(node("n1")), log.created(podgroup("j")), log.created(job_pod), bound)
    record = view.pods["default/j-t-0"]
    assert record.on_node and record.node == "n1" and not record.stopping
    assert [r.pod.meta.name for r in view.pods_on()["n1"]] == ["j-t-0"]
    view = core.apply(view, evicting)
    assert view.pods["default/j-t-0"].stopping and view.descheduled_at == {"default/j-t-0": 100.0}
    view = core.apply(view, log.event("PodTerminated", "default/j-t-0", payloads.PodTerminated(node="n1")))
    assert "default/j-t-0" not in view.pods
    view = core.apply(view, log.created(job_pod))  # created again: unbound, remembered for the cool-down
    assert not view.pods["default/j-t-0"].on_node and view.descheduled_at["default/j-t-0"] == 100.0


def test_a_schedulers_eviction_starts_no_cool_down_and_old_ones_are_forgotten() -> None:
    log, core = EventLog(), DeschedulerCore(cooldown_s=60.0)
    view = fold(
        core,
        log.event(
            "PodEvicting",
            "default/a",
            payloads.PodEvicting(node="n1", reason="deschedule: x", plan="p"),
            at=0.0,
        ),
        log.event(
            "PodEvicting", "default/b", payloads.PodEvicting(node="n1", reason="preempt", plan="p"), at=10.0
        ),
        log.event(
            "PodEvicting",
            "default/c",
            payloads.PodEvicting(node="n1", reason="deschedule: y", plan="p"),
            at=100.0,
        ),
    )
    assert view.descheduled_at == {"default/c": 100.0}


def test_a_late_report_of_an_earlier_run_changes_nothing() -> None:
    log, core = EventLog(), DeschedulerCore(cooldown_s=60.0)
    view = fold(
        core,
        log.created(pod("p", "g")),
        log.event("PodBound", "default/p", payloads.PodBound(node="n2", plan="x")),
        log.event("PodFailed", "default/p", payloads.PodFailed(node="n1")),
        log.event("PodTerminated", "default/p", payloads.PodTerminated(node="n1")),
    )
    assert view.pods["default/p"].on_node and view.pods["default/p"].node == "n2"


def test_the_checkpoint_round_trips() -> None:
    log, core = EventLog(), DeschedulerCore(cooldown_s=60.0)
    view = fold(
        core,
        log.created(node("n1")),
        log.created(podgroup("j", min_member=2)),
        log.created(pod("j-0", "j")),
        log.event("PodBound", "default/j-0", payloads.PodBound(node="n1", plan="x")),
        log.event(
            "PodEvicting",
            "default/j-0",
            payloads.PodEvicting(node="n1", reason="deschedule: z", plan="y"),
            at=5.0,
        ),
    )
    view.claim_jobs.add("default/j")
    loaded = core.load(core.dump(view))
    assert loaded.nodes == view.nodes and loaded.podgroups == view.podgroups
    assert loaded.pods["default/j-0"].pod == view.pods["default/j-0"].pod
    assert loaded.pods["default/j-0"].stopping and loaded.seq == view.seq
    assert loaded.descheduled_at == view.descheduled_at and loaded.claim_jobs == view.claim_jobs
