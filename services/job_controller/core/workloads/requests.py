"""The workloads core's outputs: events it asks admission to write (pure).

A CronJob's or JobFlow's job is created and deleted as Kubernetes' controllers do it, through the API
server: the core returns the JobSubmitted or JobDeleted it wants, and the service sends each to
admission's API as a create or delete request (services/job_controller/requests.py); admission decides
and writes it, or refuses. The request id is deterministic, and admission derives its event's id from it
(derived_event_id(request, 0)), so the output's id is the id of the event that answers it: the loop
holds the output in flight until that event is in the log, and a request sent again (after a restart,
by a new leader) writes nothing twice. The output's causation_id carries the request id, as the answering
event's does.
"""

from __future__ import annotations

from contracts import payloads
from contracts.codec import encode_object
from contracts.events import JOB_CONTROLLER
from contracts.objects import Job
from shared.runner_types import Output, derived_event_id, deterministic_id


def create_job(job: Job, maker_uid: str, incarnation: int = 0) -> Output:
    """Ask for `job` to be created; `incarnation` counts the earlier jobs of that name the maker made
    (a JobFlow makes a flow's job again if it was deleted), so each creation is its own request."""
    request = deterministic_id(JOB_CONTROLLER, "create", job.meta.key, maker_uid, incarnation)
    return Output(
        type="JobSubmitted",
        kind="job",
        namespace=job.meta.namespace,
        name=job.meta.name,
        id=derived_event_id(request, 0),
        correlation_id=job.meta.key,
        payload=payloads.JobSubmitted(object=encode_object(job)),
        causation_id=request,
    )


def delete_job(key: str, uid: str) -> Output:
    """Ask for the job `key` (uid: this incarnation of it) to be deleted."""
    namespace, _, name = key.partition("/")
    request = deterministic_id(JOB_CONTROLLER, "delete", key, uid)
    return Output(
        type="JobDeleted",
        kind="job",
        namespace=namespace,
        name=name,
        id=derived_event_id(request, 0),
        correlation_id=key,
        payload=payloads.Empty(),
        causation_id=request,
    )
