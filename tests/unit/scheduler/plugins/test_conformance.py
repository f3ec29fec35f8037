"""conformance plugin: critical and kube-system pods are never victims."""

from __future__ import annotations

import pytest
from support.builders import conf, node, pod, podgroup, queue, session

CASES = [
    # (namespace, priority class) -> evictable
    pytest.param("default", "", True, id="plain"),
    pytest.param("team-a", "high", True, id="other-class"),
    pytest.param("kube-system", "", False, id="kube-system"),
    pytest.param("default", "system-cluster-critical", False, id="cluster-critical"),
    pytest.param("default", "system-node-critical", False, id="node-critical"),
]


def _session(specs, tiers=(["conformance"],)):
    objects = [queue("default"), node("n1", cpu=32, memory="32Gi"), podgroup("me"), pod("me-w-0", "me")]
    for i, (namespace, klass) in enumerate(specs):
        objects += [
            podgroup(f"v{i}", namespace=namespace),
            pod(f"v{i}-w-0", f"v{i}", namespace=namespace, priority_class=klass, node_name="n1"),
        ]
    ssn = session(objects, conf("allocate", *tiers))
    victims = [t for t in ssn.all_tasks() if t.name != "me-w-0"]
    return ssn, ssn.jobs["default/me"].tasks["default-me-w-0"], sorted(victims, key=lambda t: t.name)


@pytest.mark.parametrize(("namespace", "klass", "evictable"), CASES)
def test_single_candidate(namespace, klass, evictable):
    ssn, preemptor, candidates = _session([(namespace, klass)])
    plugin = ssn.plugins["conformance"]
    expected = candidates if evictable else []
    assert plugin.preemptable(ssn, preemptor, candidates) == expected
    assert plugin.reclaimable(ssn, preemptor, candidates) == expected
    assert ssn.preemptable_fn(preemptor, candidates) == expected
    assert ssn.reclaimable_fn(preemptor, candidates) == expected


def test_mixed_candidates_keep_only_evictable():
    specs = [("default", ""), ("kube-system", ""), ("default", "system-node-critical"), ("team-a", "")]
    ssn, preemptor, candidates = _session(specs)
    assert [t.name for t in ssn.preemptable_fn(preemptor, candidates)] == ["v0-w-0", "v3-w-0"]
    assert [t.name for t in ssn.reclaimable_fn(preemptor, candidates)] == ["v0-w-0", "v3-w-0"]


def test_intersects_with_gang_in_the_same_tier():
    # gang allows every victim (each job has 1 ready > minMember 0); conformance still protects kube-system
    specs = [("default", ""), ("kube-system", "")]
    ssn, preemptor, candidates = _session(specs, (["gang", "conformance"],))
    for job in ssn.jobs.values():
        job.min_available = 0
    assert [t.name for t in ssn.preemptable_fn(preemptor, candidates)] == ["v0-w-0"]
