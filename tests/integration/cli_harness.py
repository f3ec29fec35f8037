"""The harness of the CLI integration tests: `lahar` run as a user runs it (a real
`python -m services.cli.main` process) against real nats-server and etcd, with admission running in the
test's process, and read-model entries written by hand (the controllers' job)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from contracts.codec import encode_object
from contracts.objects import ApiObject
from services.admission.service import AdmissionConfig, AdmissionService
from shared.bus.jetstream import Bus
from shared.bus.streams import events_stream, intake_stream
from shared.servers import EtcdServer, NatsServer
from shared.store.etcd import Etcd
from shared.store.read_model import ReadModel
from shared.telemetry.metrics import Registry

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Cli:
    env: dict[str, str]
    tmp: Path

    async def start(self, *argv: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "services.cli.main",
            *argv,
            cwd=REPO,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )

    async def __call__(self, *argv: str, timeout_s: float = 60.0) -> tuple[int, str, str]:
        """(exit status, stdout, stderr) of one `lahar` command."""
        proc = await self.start(*argv)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode()

    async def json(self, *argv: str) -> Any:
        code, out, err = await self(*argv)
        assert code == 0, (argv, code, out, err)
        return json.loads(out)

    def file(self, name: str, *docs: dict[str, Any]) -> str:
        path = self.tmp / name
        path.write_text("---\n".join(json.dumps(doc) + "\n" for doc in docs))
        return str(path)


@pytest.fixture
async def cli_admission(bus: Bus, etcd: Etcd) -> AsyncIterator[AdmissionService]:
    """Admission serving the API in the test's process."""
    await bus.ensure_streams([events_stream(), intake_stream()])
    service = AdmissionService(bus, etcd, AdmissionConfig(checkpoint_every_s=3600), registry=Registry())
    await service.run_until_idle(15)
    yield service
    await service.shutdown()


@pytest.fixture
def cli(
    nats_server: NatsServer, etcd_server: EtcdServer, tmp_path: Path, cli_admission: AdmissionService
) -> Cli:
    """`lahar` against the test's servers (fixtures of every integration test, through conftest.py)."""
    host, port = etcd_server.endpoint
    env = {
        **os.environ,
        "LAHAR_NATS_URL": nats_server.url,
        "LAHAR_ETCD_ENDPOINT": f"{host}:{port}",
        "LAHAR_HOME": str(tmp_path / "home"),  # no stack.json there: the flags must be what is used
        "PYTHONPATH": str(REPO),
    }
    return Cli(env, tmp_path)


async def store(etcd: Etcd, obj: ApiObject, seq: int) -> None:
    """What a controller would write to the read model."""
    kind = obj.kind.lower()
    namespace = obj.meta.namespace or None
    await ReadModel(etcd).put(kind, namespace, obj.meta.name, encode_object(obj), seq)
