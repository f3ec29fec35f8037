"""Partitions and queue overcommit on a running stack (issue 15, items 4 and 5), with
examples/partition/preempt.conf: six hollow 4-core nodes labelled by rack (examples/partition/
preempt.yaml's Node manifests, `lahar up --sim-nodes-file`), HyperNodes selecting them by label applied
with `lahar apply`.

- A queue with `volcano.sh/overcommit-factor: "1.5"` admits a 3-core job that a queue deserving as much
  with factor 1 cannot; the latter's PodGroup waits with InsufficientQueueQuota naming the queue and
  its factor.
- Every node full of lower-priority one-pod jobs; a partitioned job (two partitions of two 4-core
  workers, each hard within one rack) preempts: the victims are two whole racks, in one plan with the
  room reserved for all four workers, and every partition's pods are bound inside one rack.

Everything goes through the CLI and the log, as a user would see it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.test_preemption_stack import apply, condition, get, log, until

from tests.e2e.conftest import Stack, start_stack, stop_stack

pytestmark = pytest.mark.slow  # a stack of its own

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "partition"
CONF = EXAMPLES / "preempt.conf"
DOCS = (EXAMPLES / "preempt.yaml").read_text().split("\n---\n")
RACK = {
    "r1-a": "rack-1",
    "r1-b": "rack-1",
    "r2-a": "rack-2",
    "r2-b": "rack-2",
    "r3-a": "rack-3",
    "r3-b": "rack-3",
}


def docs(kind: str) -> str:
    return "\n---\n".join(d for d in DOCS if f"\nkind: {kind}\n" in f"\n{d}\n")


QUEUES = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: strict
  annotations: {volcano.sh/overcommit-factor: "1"}
spec:
  deserved: {cpu: "2", memory: 8Gi}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: burst
  annotations: {volcano.sh/overcommit-factor: "1.5"}
spec:
  deserved: {cpu: "2", memory: 8Gi}
"""


def three_cores(name: str, queue: str) -> str:
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
  annotations: {{lahar.dev/sim-duration: 1s}}
spec:
  queue: {queue}
  minAvailable: 1
  tasks:
  - name: main
    replicas: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{{name: main, image: busybox, resources: {{requests: {{cpu: "3", memory: 1Gi}}}}}}]
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    home = tmp_path_factory.mktemp("lahar-home")
    nodes = home / "nodes.yaml"
    nodes.write_text(docs("Node"))
    running = start_stack(home, "--sim-nodes-file", str(nodes), "--scheduler-conf", str(CONF))
    try:
        yield running
    finally:
        stop_stack(running.supervisor)


def test_a_queue_overcommit_factor_admits_what_another_queue_cannot(stack: Stack) -> None:
    apply(stack, QUEUES)
    apply(stack, three_cores("bursting", "burst"))
    apply(stack, three_cores("held", "strict"))
    # burst: budget 2 x 1.5 = 3 cores, the job fits; strict: 2 x 1 = 2 cores, it does not
    done = stack.lahar("wait", "job", "bursting", "--for", "Completed", "--timeout", "60s", timeout_s=90)
    assert done.returncode == 0, done.stdout + done.stderr
    why = until(
        lambda: (
            (c := condition(stack, "held", "Unschedulable"))
            and c.get("reason") == "InsufficientQueueQuota"
            and c
        ),
        "held's InsufficientQueueQuota condition",
        timeout_s=60,
    )
    assert "queue strict is over its overcommit budget on cpu" in why["message"], why
    assert "volcano.sh/overcommit-factor 1" in why["message"], why
    assert get(stack, "podgroup", "held")["status"]["phase"] == "Pending"


def test_partitions_preempt_whole_racks_and_are_bound_inside_one_rack(stack: Stack) -> None:
    apply(stack, docs("PriorityClass"))
    apply(stack, docs("HyperNode"))
    fillers = [d for d in DOCS if "\nkind: Job\n" in d and "name: train" not in d]
    apply(stack, "\n---\n".join(d.replace("600s", "3600s") for d in fillers))
    until(lambda: len(_bound(stack, "low-", "mid-")) == 6, "the six filler pods bound", timeout_s=60)

    (train,) = [d for d in DOCS if "name: train" in d]
    apply(stack, train.replace("{lahar.dev/sim-arrival: 10s}", "{}"))
    waited = stack.lahar("wait", "job", "train", "--for", "Running", "--timeout", "60s", timeout_s=90)
    history = stack.lahar("events", "train").stdout
    assert waited.returncode == 0, waited.stdout + waited.stderr + history

    events = log(stack, "PodEvicting", "PodNominated")
    evicted = {e.data.node for e in events if e.type == "PodEvicting"}
    # two whole racks, the cheapest two: rack-3 holds two mid pods
    assert evicted == {"r1-a", "r1-b", "r2-a", "r2-b"}, history
    assert len({e.data.plan for e in events}) == 1  # victims and reservations: one plan
    bound = _bound(stack, "train-")
    assert len(bound) == 4
    for partition in (0, 1):
        racks = {RACK[bound[f"train-worker-{i}"]] for i in (2 * partition, 2 * partition + 1)}
        assert len(racks) == 1, bound
    reserved = condition(stack, "train", "Preempting")
    assert reserved is not None and reserved["reason"] == "ReservationBound", reserved
    # the decision, as `lahar events -o json` tells it: the Preempting condition naming each partition's rack
    told = stack.lahar("events", "train", "-o", "json").stdout
    assert "for partition(s) worker-0 in rack-" in told, told


def _bound(stack: Stack, *prefixes: str) -> dict[str, str]:
    return {e.name: e.data.node for e in log(stack, "PodBound") if e.name.startswith(prefixes)}
