"""Which outputs of one publish operation travel together as bundles, and where (shared/bus/bundles.py
`group_for_bundles`, shared/bus/bundle_groups.py): per type and namespace, cut at the limits, and never
moving an event past another of its job or its object."""

from __future__ import annotations

import random
from dataclasses import replace

import msgspec
import pytest
from support.builders import pod
from support.bundle_outputs import names, out, podgroup_created, status
from support.payload_examples import EXAMPLES

from contracts import payloads
from contracts.bundles import MAX_BUNDLE_BYTES
from contracts.codec import encode_object
from shared.bus.bundles import bundle_envelope, group_for_bundles


def test_events_of_one_type_about_one_namespaces_pods_travel_together_where_the_first_was() -> None:
    outputs = [
        out("PodBound", "a"),
        out("PodBound", "x", job="other"),
        out("PodBound", "b"),
        out("PodBound", "z", job="other", namespace="elsewhere", correlation_id="elsewhere/other"),
        out("PodBound", "y", job="other"),
        out("PodBound", "c"),
    ]
    assert names(group_for_bundles(outputs)) == [
        ["PodBound:a", "PodBound:x", "PodBound:b", "PodBound:y", "PodBound:c"],
        ["PodBound:z"],
    ]


def test_an_event_never_moves_past_another_event_of_its_job_or_its_pod() -> None:
    train_status = status("PodGroupStatusChanged", "train")
    outputs = [
        out("PodRunning", "a", job="ja"),
        out("PodSucceeded", "a", job="ja"),
        out("PodRunning", "b", job="jb"),
        out("PodSucceeded", "b", job="jb"),
        out("PodFailed", "c", job="jc"),
        out("PodRunning", "c", job="jc"),
        out("PodBound", "t0"),
        train_status,
        out("PodBound", "t1"),  # not before train's status into the first PodBound bundle
    ]
    groups = group_for_bundles(outputs)
    assert names(groups) == [
        ["PodRunning:a", "PodRunning:b"],
        ["PodSucceeded:a", "PodSucceeded:b"],
        ["PodFailed:c"],
        ["PodRunning:c"],  # after c's PodFailed: not moved before it into the first bundle
        ["PodBound:t0"],
        ["PodGroupStatusChanged:train"],
        ["PodBound:t1"],
    ]
    order = [o.id for group in groups for o in group]
    for job in ("default/ja", "default/jb", "default/jc", "default/train"):
        mine = [o.id for o in outputs if o.correlation_id == job]
        assert [i for i in order if i in mine] == mine


@pytest.mark.parametrize(
    "other",
    [
        {"expected_last_subject_seq": 0},  # a compare-and-set goes alone
        {"namespace": None},  # a cluster-scoped object
        {"kind": "podgroup"},  # not the object a bundle of pods' events carries
    ],
)
def test_what_cannot_be_bundled_goes_alone(other: dict[str, object]) -> None:
    outputs = [out("PodBound", "a", **other), out("PodBound", "b", **other)]
    assert names(group_for_bundles(outputs)) == [["PodBound:a"], ["PodBound:b"]]


def test_a_bundle_is_cut_before_it_outgrows_a_message() -> None:
    big = pod("big", "train")
    big = replace(big, meta=replace(big.meta, annotations={"pad": "x" * (MAX_BUNDLE_BYTES // 3)}))
    outputs = [
        out(
            "PodCreated",
            f"p{i}",
            payload=payloads.PodCreated(
                object=encode_object(replace(big, meta=replace(big.meta, name=f"p{i}")))
            ),
        )
        for i in range(7)
    ]
    groups = group_for_bundles(outputs)
    assert [len(g) for g in groups] == [2, 2, 2, 1]
    for group in groups[:-1]:
        env, _, _ = bundle_envelope(
            group, time=1.0, producer="job-controller", traceparents=[None] * len(group)
        )
        assert len(env.encode()) < MAX_BUNDLE_BYTES + 4096


def test_a_status_bundle_is_cut_by_what_its_statuses_say_not_by_their_count() -> None:
    # a PodGroup's Unschedulable condition can name why each of thousands of nodes did not fit
    example = EXAMPLES["PodGroupStatusChanged"]
    assert isinstance(example, payloads.PodGroupStatusChanged)
    reason = msgspec.structs.replace(example.conditions[0], message="x" * (MAX_BUNDLE_BYTES // 5))
    outputs = [
        status(
            "PodGroupStatusChanged",
            f"job-{i}",
            payload=payloads.PodGroupStatusChanged(phase="Pending", conditions=(reason,)),
        )
        for i in range(9)
    ]
    groups = group_for_bundles(outputs)
    assert [len(g) for g in groups] == [4, 4, 1]
    for group in groups:
        env, _, _ = bundle_envelope(group, time=1.0, producer="binder", traceparents=[None] * len(group))
        assert len(env.encode()) < MAX_BUNDLE_BYTES + 4096


def test_a_binders_commit_of_several_plans_is_one_bundle_of_binds_and_one_of_statuses() -> None:
    # each plan's binds, then its PodGroup's status
    outputs = [
        out("PodBound", "a0", job="a"),
        out("PodBound", "a1", job="a"),
        status("PodGroupStatusChanged", "a"),
        out("PodBound", "b0", job="b"),
        status("PodGroupStatusChanged", "b"),
        status("PodGroupStatusChanged", "c"),
        status("PodGroupStatusChanged", "d", namespace="other", correlation_id="other/d"),
    ]
    groups = group_for_bundles(outputs)
    assert names(groups) == [
        ["PodBound:a0", "PodBound:a1", "PodBound:b0"],
        ["PodGroupStatusChanged:a", "PodGroupStatusChanged:b", "PodGroupStatusChanged:c"],
        ["PodGroupStatusChanged:d"],  # another namespace: another subject
    ]


def test_statuses_move_after_other_jobs_binds_to_travel_together() -> None:
    outputs = [
        status("PodGroupStatusChanged", "a"),
        out("PodBound", "b0", job="b"),
        status("PodGroupStatusChanged", "b"),  # not before b0: a's status moves after it instead
    ]
    assert names(group_for_bundles(outputs)) == [
        ["PodBound:b0"],
        ["PodGroupStatusChanged:a", "PodGroupStatusChanged:b"],
    ]


def test_a_status_change_is_never_moved_past_another_event_of_its_job() -> None:
    outputs = [
        status("JobStatusChanged", "a"),
        out("PodCreated", "b0", job="b"),
        status("JobStatusChanged", "b"),  # not before b0: a's change moves after b0 to join it
        out("PodCreated", "a0", job="a"),  # about a: that group moves no further
        status("JobStatusChanged", "c"),
        status("PodGroupStatusChanged", "c"),
        status("JobStatusChanged", "d"),  # nothing about d yet: it joins c's change where that is
    ]
    groups = group_for_bundles(outputs)
    assert names(groups) == [
        ["PodCreated:b0"],
        ["JobStatusChanged:a", "JobStatusChanged:b"],
        ["PodCreated:a0"],
        ["JobStatusChanged:c", "JobStatusChanged:d"],
        ["PodGroupStatusChanged:c"],
    ]
    order = [o for group in groups for o in group]
    for job in "abcd":
        mine = [o.id for o in outputs if o.correlation_id == f"default/{job}"]
        assert [o.id for o in order if o.correlation_id == f"default/{job}"] == mine


def test_new_jobs_statuses_podgroups_and_pods_travel_in_three_bundles() -> None:
    # what the job-controller decides for new jobs: each one's Pending status, PodGroup and pods
    outputs = []
    for job in "abc":
        created = status("PodGroupStatusChanged", job, type="PodGroupCreated", payload=podgroup_created(job))
        outputs += [status("JobStatusChanged", job), created, out("PodCreated", f"{job}0", job=job)]
    assert names(group_for_bundles(outputs)) == [
        ["JobStatusChanged:a", "JobStatusChanged:b", "JobStatusChanged:c"],
        ["PodGroupCreated:a", "PodGroupCreated:b", "PodGroupCreated:c"],
        ["PodCreated:a0", "PodCreated:b0", "PodCreated:c0"],
    ]


def test_bundles_keep_every_jobs_events_in_order_whatever_the_mix() -> None:
    for seed in range(300):
        rng = random.Random(seed)
        outputs = []
        for index in range(rng.randint(5, 40)):
            job = rng.choice("abcde")
            pick = rng.random()
            if pick < 0.4:
                outputs.append(status("JobStatusChanged", job, id=f"j{index}"))
            elif pick < 0.8:
                outputs.append(status("PodGroupStatusChanged", job, id=f"g{index}"))
            elif pick < 0.9:  # goes alone
                outputs.append(out("PodFailed", f"{job}{index % 3}", job=job, id=f"f{index}"))
            else:  # a pod bundle's
                outputs.append(out("PodRunning", f"{job}{index % 3}", job=job, id=f"r{index}"))
        groups = group_for_bundles(outputs)
        order = [o for group in groups for o in group]
        assert sorted(o.id for o in order) == sorted(o.id for o in outputs), seed
        for job in "abcde":
            mine = [o.id for o in outputs if o.correlation_id == f"default/{job}"]
            assert [o.id for o in order if o.correlation_id == f"default/{job}"] == mine, seed
        assert len(groups) < len(outputs) or len(outputs) < 8, seed  # they do travel together
