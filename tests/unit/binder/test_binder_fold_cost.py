"""What the binder's fold pays per event (docs/scaling.md, "Binder"): it reads of a PodCreated's pod and a
PodGroupCreated's PodGroup only the fields the ledger keeps, so a pod's containers, env, labels and
constraints cost it nothing; and it does not read PodRunning, which changes nothing it decides."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from support.builders import node, pod, podgroup
from support.events import EventLog
from support.work import calls

from contracts.codec import encode_object
from contracts.objects import Container, EnvVar, Pod, PodSpec, Toleration
from contracts.payloads import decode_as
from contracts.resources import Resources
from services.binder.core.core import BinderCore
from services.binder.core.ledger import Ledger, apply_event
from services.binder.core.object_facts import PodFacts, facts
from services.binder.state import BinderShellCore
from shared.runner.events import read_filters

CPU = Resources.parse({"cpu": "1", "memory": "1Gi"})


def calls_into(module_suffix: str, work: Callable[[], object]) -> int:
    """How many Python functions of the module whose file ends with module_suffix work() calls."""
    count = 0

    def profile(frame: Any, event: str, _arg: Any) -> None:
        nonlocal count
        if event == "call" and frame.f_code.co_filename.endswith(module_suffix):
            count += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(previous)
    return count


def heavy(bare: Pod) -> Pod:
    """The same pod with what the ledger does not read in abundance: env, commands, labels, tolerations."""
    container = Container(
        "main",
        image="trainer:1",
        command=("python", "-m", "train"),
        env=tuple(EnvVar(f"VAR_{i}", str(i)) for i in range(40)),
        requests=CPU,
        limits=CPU,
    )
    labels = {f"label-{i}": str(i) for i in range(30)}
    return dataclasses.replace(
        bare,
        meta=dataclasses.replace(bare.meta, labels=labels),
        spec=dataclasses.replace(
            bare.spec,
            containers=(container,),
            tolerations=tuple(Toleration(f"key-{i}", operator="Exists") for i in range(10)),
        ),
    )


def test_folding_a_pod_created_does_not_decode_the_pod_nor_grow_with_what_the_ledger_does_not_read() -> None:
    counts = []
    for made in (pod("p", "g", cpu=1, memory="1Gi"), heavy(pod("p", "g", cpu=1, memory="1Gi"))):
        ledger, log = Ledger(), EventLog()
        for obj in (node("n1"), podgroup("g")):
            apply_event(ledger, log.created(obj))
        created = log.created(made)
        fold = partial(apply_event, ledger, created)
        assert calls_into("codec_decode.py", fold) == 0
        ledger.pods.clear()
        counts.append(calls(fold)[1])
        assert ledger.pods["default/p"].requests == {"cpu": 1000, "memory": 1024**3 * 1000}
    assert counts[0] == counts[1], (
        f"{counts} calls for a bare pod and the same pod with env, labels, tolerations"
    )


def test_folding_a_podgroup_created_does_not_decode_the_podgroup() -> None:
    ledger, log = Ledger(), EventLog()
    created = log.created(podgroup("g", queue="q1"))
    assert calls_into("codec_decode.py", lambda: apply_event(ledger, created)) == 0
    assert ledger.podgroups == {"default/g": "q1"}


def sidecar_pod() -> Pod:
    """Init containers, a sidecar and overhead: the effective request is not the containers' sum."""
    bare = pod("s", "g", node_name="n1", phase="Running", deleting=True)
    spec = PodSpec(
        containers=(Container("a", requests=Resources.parse({"cpu": "1"})), Container("b", requests=CPU)),
        init_containers=(
            Container("init", requests=Resources.parse({"cpu": "4", "memory": "1Gi"})),
            Container("proxy", requests=Resources.parse({"cpu": "500m"}), restart_policy="Always"),
        ),
        node_name="n1",
        overhead=Resources.parse({"cpu": "100m"}),
    )
    return dataclasses.replace(bare, spec=spec)


@pytest.mark.parametrize(
    "made",
    [pod("p", "g"), pod("q", namespace="team", annotations={"volcano.sh/queue-name": "q2"}), sidecar_pod()],
    ids=["plain", "annotated", "sidecar"],
)
def test_the_facts_are_what_decoding_the_whole_pod_says(made: Pod) -> None:
    encoded = encode_object(made)
    read, whole = facts(encoded, PodFacts), decode_as(encoded, Pod)
    assert read.requests == dict(whole.spec.effective_requests())
    assert (read.meta.namespace, read.meta.annotations, read.meta.deletion_timestamp) == (
        whole.meta.namespace,
        dict(whole.meta.annotations),
        whole.meta.deletion_timestamp,
    )
    assert (read.spec.node_name, read.status.phase) == (whole.spec.node_name, whole.status.phase)


def test_a_pod_whose_read_fields_are_wrong_is_refused_naming_the_field() -> None:
    encoded = encode_object(pod("p", "g"))
    encoded["object"]["spec"]["containers"][0]["requests"]["cpu"] = "lots"
    with pytest.raises(
        ValueError, match=r"PodFacts: Expected `int`, got `str` - at `\$\.spec\.containers\[0\]\.requests"
    ):
        facts(encoded, PodFacts)


def test_the_binder_does_not_read_pod_running() -> None:
    reads = BinderShellCore(BinderCore()).reads
    assert "PodRunning" not in reads and {"PodBound", "PodSucceeded", "PodCreated"} <= reads
    filters = read_filters(reads) or []
    assert not [f for f in filters if "PodRunning" in f or "PodsRunning" in f]
