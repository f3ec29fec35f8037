"""Mutated manifests (tests/support/manifest_fuzz.py) through a running stack: a few hundred through the
admission API, as `lahar apply` sends them (shared/client.py, in process), and through the intake stream,
as a producer publishes them (contracts/intake.md). Every request is answered within its timeout, every
intake message is settled, every rejection names a field; afterwards no process has restarted or failed
on a message, nothing went to the dead letters, and a plain job still runs to Completed.

The stack runs hollow nodes (a mutated command is never run on this machine), admission's pod caps are
lowered through its environment (a mutated Job may make no more than a few pods), and the mutated Jobs
and PodGroups go to a queue whose capability admits no pods, so what admission accepts costs little.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from e2e.conftest import Stack, start_stack, stop_stack
from e2e.test_crash_recovery import read_log
from support.manifest_fuzz import Mutant, draw_mutants, mutated_manifests, unnamed

from contracts.limits import ECHO_MAX_CHARS
from services.admission.core.implicit_podgroup import QUEUE_NAME
from services.cli.stack.layout import StackState, process_alive
from shared.bus.subjects import DEADLETTER_STREAM, INTAKE_ROOT, INTAKE_STREAM, encode_token
from shared.client import LaharClient, LaharError
from shared.client_reads import Answer

pytestmark = pytest.mark.slow  # a stack of its own and 500 manifests through it

API_MUTANTS = 300
INTAKE_MUTANTS = 200
SIM_NODES = 2
FUZZ_QUEUE = "fuzz"
# admission's pod caps, lowered: an accepted mutant makes a handful of pods at most
ENVIRONMENT = {"LAHAR_MAX_PODS_PER_JOB": "20", "LAHAR_MAX_PODS_PER_REQUEST": "40"}
REQUEST_TIMEOUT_S = 10.0  # the client's: an API request not answered within it hung
SETTLE_TIMEOUT_S = 60.0  # for admission to settle every intake message
COMPLETED_TIMEOUT_S = 60.0
# admission's log lines when a request or a manifest made it fail (answered, but by a bug)
FAILURE_LINES = re.compile(r"admission request failed|could not decide|admission failed on")

QUEUE = f"""
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {{name: {FUZZ_QUEUE}}}
spec:
  weight: 1
  capability: {{cpu: 1m, memory: 1Ki}}
"""
HEALTHY_JOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: after-the-fuzz
  annotations: {lahar.dev/sim-duration: 1s}
spec:
  minAvailable: 2
  queue: default
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: main
              image: busybox
              command: [sh, -c, "true"]
              resources: {requests: {cpu: 500m, memory: 64Mi}}
"""


def into_fuzz_queue(doc: dict[str, Any]) -> dict[str, Any]:
    """A seed whose Jobs, PodGroups and Pods wait in the fuzz queue instead of running."""
    spec, meta = doc.get("spec"), doc.get("metadata")
    if doc.get("kind") in ("Job", "PodGroup") and isinstance(spec, dict):
        spec["queue"] = FUZZ_QUEUE
    if doc.get("kind") == "Pod" and isinstance(meta, dict):
        meta["annotations"] = {**(meta.get("annotations") or {}), QUEUE_NAME: FUZZ_QUEUE}
    return doc


def intake_subject(mutant: Mutant) -> str:
    """lahar.intake.<kind>.<namespace>.<name> for the object the mutant's first document claims to be
    (a name too long for a subject becomes "fuzz": the subject only routes and names the rejection)."""
    tokens = [t if len(t) <= ECHO_MAX_CHARS else "fuzz" for t in (mutant.kind, mutant.namespace, mutant.name)]
    return ".".join([INTAKE_ROOT, *(encode_token(t) for t in tokens)])


@dataclass
class Published:
    mutant: Mutant
    subject: str
    seq: int

    @property
    def source(self) -> str:
        return f"{self.subject}#{self.seq}"


@dataclass
class FuzzRun:
    # each API request's source (Lahar-Source), mutant and answer (or what the client raised)
    answers: list[tuple[str, Mutant, Answer | Exception]]
    refused_by_client: int  # mutants larger than a NATS message: the client refuses to send them
    published: list[Published]
    intake_left: int  # intake messages still on the stream when the run ended
    intake_results: Mapping[str, float]  # admission's intake counter by result
    rejections: Mapping[str, Mapping[str, Any]]  # ManifestRejected payloads by source
    dead_letters: int
    status_before: Mapping[str, Mapping[str, Any]]
    status_after: Mapping[str, Mapping[str, Any]]
    status_code_after: int
    failure_lines: list[str]
    healthy_job: str  # the phase the plain job reached


def status(stack: Stack) -> tuple[int, dict[str, dict[str, Any]]]:
    result = stack.lahar("status", "-o", "json")
    return result.returncode, {row["name"]: row for row in json.loads(result.stdout)["processes"]}


def intake_counts(state: StackState) -> dict[str, float]:
    admission = next(s for s in state.services if s.name == "admission")
    with urllib.request.urlopen(f"http://127.0.0.1:{admission.metrics_port}/metrics", timeout=5) as page:
        text = page.read().decode()
    found = re.findall(r'^lahar_admission_intake_messages_total\{result="(\w+)"\} (\S+)$', text, re.M)
    return {result: float(value) for result, value in found}


async def fuzz(stack: Stack, api: list[Mutant], intake: list[Mutant]) -> dict[str, Any]:
    state = stack.state
    async with await LaharClient.connect(
        state.nats_url, state.etcd_endpoint, creds=state.admin_creds or None, tls_ca=state.tls_ca or None
    ) as client:
        client.request_timeout_s = REQUEST_TIMEOUT_S
        queue = await client.apply(QUEUE)
        assert queue.accepted, queue
        max_payload = client.bus.nc.max_payload

        answers: list[tuple[str, Mutant, Answer | Exception]] = []
        refused_by_client = 0
        for index, mutant in enumerate(api):
            if len(mutant.data) > max_payload:
                with pytest.raises(LaharError, match="the server takes at most"):
                    await client.apply(mutant.data)
                refused_by_client += 1
                continue
            source = f"fuzz-{index}"
            try:
                answers.append((source, mutant, await client.apply(mutant.data, source=source)))
            except LaharError as exc:  # Unreachable: no answer within the timeout
                answers.append((source, mutant, exc))

        js = client.bus.js  # through the API prefix of the credentials' account (docs/security.md)
        published = []
        for mutant in intake:
            if len(mutant.data) <= max_payload:
                subject = intake_subject(mutant)
                ack = await js.publish(subject, mutant.data, timeout=REQUEST_TIMEOUT_S)
                published.append(Published(mutant, subject, ack.seq))
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        # work-queue retention: a message leaves the stream once admission has settled it
        while (left := (await js.stream_info(INTAKE_STREAM)).state.messages) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        dead_letters = (await js.stream_info(DEADLETTER_STREAM)).state.messages

        events = await read_log(state)
        rejections = {e.payload["source"]: e.payload for e in events if e.type == "ManifestRejected"}

        job = await client.apply(HEALTHY_JOB)
        assert job.accepted, job
        waited = await client.wait_job("after-the-fuzz", timeout_s=COMPLETED_TIMEOUT_S)
    return {
        "answers": answers,
        "refused_by_client": refused_by_client,
        "published": published,
        "intake_left": left,
        "rejections": rejections,
        "dead_letters": dead_letters,
        "healthy_job": waited.phase,
    }


@pytest.fixture(scope="module")
def fuzz_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzRun]:
    mutants = draw_mutants(API_MUTANTS + INTAKE_MUTANTS, mutated_manifests(prepare=into_fuzz_queue))
    home = tmp_path_factory.mktemp("lahar-fuzz")
    with pytest.MonkeyPatch.context() as env:
        for name, value in ENVIRONMENT.items():
            env.setenv(name, value)
        stack = start_stack(home, "--sim-nodes", str(SIM_NODES))
    try:
        _, before = status(stack)
        outcome = asyncio.run(fuzz(stack, mutants[:API_MUTANTS], mutants[API_MUTANTS:]))
        code_after, after = status(stack)
        yield FuzzRun(
            **outcome,
            intake_results=intake_counts(stack.state),
            status_before=before,
            status_after=after,
            status_code_after=code_after,
            failure_lines=FAILURE_LINES.findall(stack.service_log("admission")),
        )
    finally:
        final = StackState.read(home)
        stop_stack(stack.supervisor)
        if final is not None:
            leftovers = [s.name for s in final.services if process_alive(s.pid)]
            assert not leftovers, f"processes left running after the stack stopped: {leftovers}"


def test_every_api_request_is_answered_and_every_refusal_names_a_field(fuzz_run: FuzzRun) -> None:
    assert len(fuzz_run.answers) + fuzz_run.refused_by_client >= API_MUTANTS * 0.9
    unanswered = [(m, a) for _, m, a in fuzz_run.answers if not isinstance(a, Answer)]
    assert not unanswered, unanswered[:5]
    answers = [(s, m, a) for s, m, a in fuzz_run.answers if isinstance(a, Answer)]
    codes = Counter(a.code for _, _, a in answers)
    assert set(codes) == {"ok", "invalid"}, codes  # never "error" (a bug), "unavailable" or "conflict"
    assert codes["ok"] >= 10 and codes["invalid"] >= 100, codes
    for source, mutant, answer in answers:
        if answer.accepted:
            assert answer.objects and not answer.errors, (mutant, answer)
        else:
            assert answer.errors and not unnamed(answer.errors, source), (mutant, answer)


def test_every_intake_manifest_is_settled_and_every_rejection_names_a_field(fuzz_run: FuzzRun) -> None:
    published = fuzz_run.published
    assert len(published) >= INTAKE_MUTANTS * 0.9
    assert fuzz_run.intake_left == 0, f"{fuzz_run.intake_left} intake messages never settled"
    results = fuzz_run.intake_results
    # each message settled once, accepted or rejected; none retried, none given up on
    assert results.get("accepted", 0) + results.get("rejected", 0) == len(published), results
    assert not results.get("retried") and not results.get("dead_letter"), results
    rejected = [p for p in published if p.source in fuzz_run.rejections]
    assert len(rejected) == results.get("rejected"), "a rejection counted but not in the log, or twice"
    # both ways out were taken: most mutants are refused (strict manifests refuse every unknown field a
    # mutation makes), a few accepted; how many depends on batching (a job naming a queue an earlier
    # mutant creates is accepted only when it lands after it), so the floor is the accept path taken at all
    assert len(rejected) >= 100 and len(published) - len(rejected) >= 2, results
    for message in rejected:
        errors = fuzz_run.rejections[message.source]["errors"]
        assert errors and not unnamed(errors, message.source), (message.mutant, errors)


def test_no_process_restarted_or_failed_on_a_message(fuzz_run: FuzzRun) -> None:
    before, after = fuzz_run.status_before, fuzz_run.status_after
    assert set(after) == set(before) and "admission" in after
    changed = {
        name: (before[name], row)
        for name, row in after.items()
        if row["state"] != "running"
        or (row["pid"], row["restarts"]) != (before[name]["pid"], before[name]["restarts"])
    }
    assert not changed and fuzz_run.status_code_after == 0, changed
    assert not fuzz_run.failure_lines, fuzz_run.failure_lines[:5]
    assert fuzz_run.dead_letters == 0


def test_a_plain_job_still_runs_to_completed_afterwards(fuzz_run: FuzzRun) -> None:
    assert fuzz_run.healthy_job == "Completed"
