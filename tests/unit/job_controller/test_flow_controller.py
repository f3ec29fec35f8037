"""The JobFlow controller core: jobs made in DAG order from their templates, a failed dependency, the
retain and delete policies, templates that come later, taskStatus probes, a job deleted under a running
flow, and the status (lists, conditions, job status list, phase) the read model shows."""

from __future__ import annotations

import pytest
from workloads_harness import Cluster, jobflow, template

from contracts.objects_flow import JobFlow
from services.job_controller.core.workloads.owners import CREATED_BY_FLOW, CREATED_BY_TEMPLATE, OWNER

# Volcano's example (examples/volcano/jobflow/JobFlow.yaml): a -> b -> (c, d) -> e
VOLCANO_FLOWS = [
    {"name": "a"},
    {"name": "b", "dependsOn": {"targets": ["a"]}},
    {"name": "c", "dependsOn": {"targets": ["b"]}},
    {"name": "d", "dependsOn": {"targets": ["b"]}},
    {"name": "e", "dependsOn": {"targets": ["c", "d"]}},
]


def volcano_example(retain: str = "delete", templates: str = "abcde") -> Cluster:
    cluster = Cluster()
    for name in templates:
        cluster.apply(template(name))
    cluster.apply(jobflow("test", VOLCANO_FLOWS, retain))
    return cluster


def finish(cluster: Cluster, name: str, at: float, phase: str = "Completed", **status: object) -> None:
    cluster.job_phase(f"test-{name}", "Running", at - 5)
    cluster.job_phase(f"test-{name}", phase, at, **status)
    cluster.settle(at)


def phase(cluster: Cluster) -> str:
    flow = cluster.rendered("jobflow", "test")
    assert isinstance(flow, JobFlow)
    return flow.status.phase


def test_the_dag_runs_in_order() -> None:
    cluster = volcano_example()
    cluster.settle(1)
    assert cluster.created() == ["test-a"] and phase(cluster) == "Pending"
    finish(cluster, "a", 10)
    assert cluster.created() == ["test-a", "test-b"] and phase(cluster) == "Running"
    finish(cluster, "b", 20)
    assert cluster.created()[2:] == ["test-c", "test-d"]
    finish(cluster, "c", 30)
    assert "test-e" not in cluster.created()  # d is not done
    finish(cluster, "d", 40)
    assert cluster.created()[-1] == "test-e"
    finish(cluster, "e", 50)
    assert phase(cluster) == "Succeed"
    # jobRetainPolicy delete: the flow's jobs go once it succeeded
    assert sorted(cluster.deleted()) == ["test-a", "test-b", "test-c", "test-d", "test-e"]
    assert cluster.jobs() == [] and phase(cluster) == "Succeed"


def test_a_flows_job_is_its_template_marked_as_volcano_marks_it() -> None:
    cluster = volcano_example()
    cluster.settle(1)
    (request,) = cluster.requests
    job = request.payload.decoded()  # type: ignore[union-attr]
    assert (job.meta.name, job.tasks[0].name) == ("test-a", "worker")
    assert job.meta.annotations[CREATED_BY_TEMPLATE] == "default.a"
    assert job.meta.labels[CREATED_BY_FLOW] == "default.test"
    assert job.meta.annotations[OWNER] == "JobFlow/test/uid-test"


def test_a_failed_dependency_fails_the_flow_and_starts_nothing_after_it() -> None:
    cluster = volcano_example()
    cluster.settle(1)
    finish(cluster, "a", 10)
    finish(cluster, "b", 20, phase="Failed")
    assert phase(cluster) == "Failed"
    assert cluster.created() == ["test-a", "test-b"]
    flow = cluster.rendered("jobflow", "test")
    assert (flow.status.completed_jobs, flow.status.failed_jobs) == (("test-a",), ("test-b",))
    assert cluster.deleted() == []  # a failed flow keeps its jobs, whatever its policy


@pytest.mark.parametrize(("retain", "kept"), [("retain", 5), ("delete", 0)])
def test_retain_policy_after_success(retain: str, kept: int) -> None:
    cluster = volcano_example(retain)
    cluster.settle(1)
    for at, name in enumerate("abcde", start=1):
        finish(cluster, name, at * 10)
    assert phase(cluster) == "Succeed" and len(cluster.jobs()) == kept


@pytest.mark.parametrize(("retain", "left"), [("retain", ["test-a", "test-b"]), ("delete", [])])
def test_deleting_a_flow_takes_its_jobs_unless_it_retains_them(retain: str, left: list[str]) -> None:
    cluster = volcano_example(retain)
    cluster.settle(1)
    finish(cluster, "a", 10)
    cluster.delete("JobFlow", "default/test", at=11)
    cluster.settle(11)
    assert cluster.jobs() == left
    # the templates still list the jobs made of them that exist
    assert cluster.rendered("jobtemplate", "a").status.job_depends_on_list == tuple(left[:1])


def test_a_template_that_comes_later_is_waited_for() -> None:
    cluster = volcano_example(templates="acde")
    cluster.settle(1)
    finish(cluster, "a", 10)
    assert cluster.created() == ["test-a"]
    assert cluster.rendered("jobflow", "test").status.message == "waiting for JobTemplate 'b'"
    cluster.apply(template("b"), at=15)
    cluster.settle(15)
    assert cluster.created() == ["test-a", "test-b"]
    assert cluster.rendered("jobflow", "test").status.message == ""


@pytest.mark.parametrize(
    ("counts", "starts"),
    [
        ({"worker": {"Succeeded": 2}}, True),
        ({"worker": {"Succeeded": 1, "Failed": 1}}, False),  # a job may complete with minAvailable
        ({"other": {"Failed": 1}}, True),  # the probe names no task of the target
    ],
)
def test_task_status_probes(counts: dict[str, dict[str, int]], starts: bool) -> None:
    cluster = Cluster()
    cluster.apply(template("a"))
    cluster.apply(template("b"))
    probe = {"taskStatusList": [{"taskName": "worker", "phase": "Succeeded"}]}
    cluster.apply(
        jobflow("test", [{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"], "probe": probe}}])
    )
    cluster.settle(1)
    finish(cluster, "a", 10, task_status_count=counts)
    assert ("test-b" in cluster.created()) == starts
    flow = cluster.rendered("jobflow", "test")
    assert flow.status.phase == ("Running" if starts else "Failed")
    if not starts:
        assert (
            flow.status.message
            == "flow 'b' can never start: task 'worker' of job 'test-a' did not end Succeeded"
        )


def test_a_job_deleted_under_a_running_flow_is_made_again_as_a_new_request() -> None:
    cluster = volcano_example()
    cluster.settle(1)
    cluster.job_phase("test-a", "Running", 5)
    (first,) = cluster.requests
    cluster.fold(cluster.log.event("JobDeleted", "default/test-a", at=6))
    cluster.settle(6)
    assert cluster.created() == ["test-a", "test-a"]
    assert cluster.requests[-1].id != first.id  # not deduplicated away as the first request's retry


def test_the_status_lists_conditions_and_job_status_list() -> None:
    cluster = volcano_example()
    cluster.settle(1)
    finish(cluster, "a", 10, retry_count=1, task_status_count={"worker": {"Succeeded": 1}})
    cluster.job_phase("test-b", "Running", 12)
    cluster.settle(12)
    status = cluster.rendered("jobflow", "test").status
    assert (status.completed_jobs, status.running_jobs, status.pending_jobs) == (("test-a",), ("test-b",), ())
    assert status.conditions["test-a"].task_status_count == {"worker": {"Succeeded": 1}}
    assert status.conditions["test-a"].running_duration == 9  # created at 1, finished at 10
    (a, b) = status.job_status_list
    assert (a.name, a.state, a.restart_count, a.end_timestamp) == ("test-a", "Completed", 1, 10)
    assert [run.state for run in a.running_histories] == ["Pending", "Running", "Completed"]
    assert (b.name, b.state) == ("test-b", "Running")


def test_the_state_survives_a_checkpoint() -> None:
    cluster = volcano_example()
    cluster.settle(1)
    finish(cluster, "a", 10)
    loaded = cluster.core.load(cluster.core.dump(cluster.state))
    assert loaded == cluster.state
    assert cluster.core.reconcile(loaded, 11) == cluster.core.reconcile(cluster.state, 11)
