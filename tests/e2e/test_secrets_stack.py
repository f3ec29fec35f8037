"""The ssh plugin's private keys are not in the readable log, on the stack `lahar up` runs: a job with the
ssh plugin runs to completion (so the node agent opened its sealed key pair and mounted it, and ssh
accepts the key), then the whole event log, read as the operator (the broadest reader a human has;
tenants get no log reads), holds no private key: no PEM text, no key bytes, in no message."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import msgspec
import pytest
from e2e.conftest import Stack, operator_bus, start_stack, stop_stack

from contracts.payloads import JobSecretCreated
from shared.bus.envelope import Envelope
from shared.bus.poison import read_quarantine
from shared.bus.subjects import EVENTS_STREAM
from shared.security.secret_keys import PRIVATE_FILE, load_private_key

pytestmark = pytest.mark.timeout(300)

JOB = "ssh-demo"
# every pod checks the pair it was given: ssh-keygen refuses a private key others may read, and the
# public key it derives must be the one mounted beside it
JOB_MANIFEST = f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {JOB}}}
spec:
  minAvailable: 2
  queue: default
  plugins: {{ssh: []}}
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: worker
          image: busybox
          command:
          - sh
          - -c
          - >-
            set -e;
            test "$(ssh-keygen -y -f "$VC_SSH_DIR/id_rsa" | cut -d' ' -f1,2)"
            = "$(cut -d' ' -f1,2 "$VC_SSH_DIR/id_rsa.pub")"
          resources: {{requests: {{cpu: 100m, memory: 32Mi}}}}
"""
PEM_BODY = re.compile(rb"-----BEGIN [A-Z ]*PRIVATE KEY-----\n(.*?)\n-----END", re.DOTALL)


def secrets_in(pem: bytes) -> list[bytes]:
    """What must not appear in the log for a PEM private key: its base64 lines and its DER bytes."""
    match = PEM_BODY.search(pem)
    assert match is not None, pem[:40]
    lines = [line for line in match.group(1).split(b"\n") if line and b":" not in line]
    return [*lines, base64.b64decode(b"".join(lines))]


async def whole_log(stack: Stack) -> list[tuple[str, bytes]]:
    bus = await operator_bus(stack.state, "secrets-test")
    try:
        return [(r.subject, r.data) async for r in bus.replay(EVENTS_STREAM)]
    finally:
        await bus.close()


async def node_agent_quarantine(stack: Stack) -> list[str]:
    bus = await operator_bus(stack.state, "secrets-test")
    try:
        return [record.error for _, record in await read_quarantine(bus) if record.type == "JobSecretCreated"]
    finally:
        await bus.close()


def run_ssh_job(stack: Stack, tmp_path: Path) -> bytes:
    """Run the job to completion; the private key its pods were given."""
    manifest = tmp_path / "ssh-job.yaml"
    manifest.write_text(JOB_MANIFEST)
    applied = stack.lahar("apply", "-f", str(manifest))
    assert applied.returncode == 0, applied.stderr
    waited = stack.lahar("wait", "job", JOB, "--for", "Completed", "--timeout", "180s")
    assert waited.returncode == 0, waited.stdout + waited.stderr + stack.service_log("node-agent")[-3000:]
    pods = stack.home / "data" / "node-agent" / "pods" / "default"
    mounted = [path.read_bytes() for path in sorted(pods.glob(f"{JOB}-worker-*/root/.ssh/id_rsa"))]
    assert len(mounted) == 2 and mounted[0] == mounted[1], "both pods got the job's one pair"
    return mounted[0]


async def test_an_ssh_job_runs_and_the_log_the_operator_reads_holds_no_private_key(
    stack: Stack, tmp_path: Path
) -> None:
    # the pair the agent opened and mounted, and the node agents' own key: the secrets to look for
    mounted = [run_ssh_job(stack, tmp_path)]
    agents_key = stack.home / "creds" / PRIVATE_FILE
    load_private_key(agents_key)  # the stack made one, and it is what the agents opened with
    forbidden = [*secrets_in(mounted[0]), *secrets_in(agents_key.read_bytes())]

    log = await whole_log(stack)
    assert log, "the operator reads the log"
    for subject, data in log:
        assert b"PRIVATE KEY" not in data, subject
        for secret in forbidden:
            assert secret not in data, f"private key material in {subject}"
    secrets = [
        msgspec.convert(dict(Envelope.decode(data).payload), JobSecretCreated)
        for subject, data in log
        if ".JobSecretCreated." in subject and subject.endswith(f".default.{JOB}")
    ]
    assert len(secrets) == 1 and secrets[0].sealed is not None and secrets[0].data == {}
    assert await node_agent_quarantine(stack) == []


async def test_an_open_stack_writes_the_pair_unsealed_as_before(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """`lahar up --no-auth`: no identities, no secrets key; the pair is in the log in plain text (what the
    test above would find if sealing were off), and the job runs as before."""
    home = tmp_path_factory.mktemp("lahar-open")
    open_stack = start_stack(home, "--no-auth")
    try:
        private = run_ssh_job(open_stack, tmp_path_factory.mktemp("manifest"))
        assert not (home / "creds" / PRIVATE_FILE).exists()
        log = await whole_log(open_stack)
        first_line = secrets_in(private)[0]
        assert any(b"PRIVATE KEY" in data and first_line in data for _, data in log)
    finally:
        stop_stack(open_stack.supervisor)
