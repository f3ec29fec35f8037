"""LoadAware's `metrics: {type: Prometheus}` against a real Prometheus: the seed's queries (Volcano's: one
minus the idle cpu rate, one minus MemAvailable / MemTotal, averaged over the policy's duration) read two
nodes' node_exporter series, served here by two small exporters whose counters follow the wall clock, and
turn them into each node's load. Prometheus is Debian's package, as `scripts/dev setup` installs it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.prometheus_server import PrometheusServer, write_config

from contracts.objects import Node, ObjectMeta
from contracts.resources import CPU, MEMORY, Resources
from services.descheduler.usage_sources import PrometheusUsage
from shared.server_process import LOOPBACK

GIB = 2**30
# node -> (fraction of its one cpu idle, bytes of memory available of 8Gi)
NODES = {"te1": (0.9, 7 * GIB), "te3": (0.05, GIB * 8 // 10)}
TOTAL = 8 * GIB
SCRAPE_S = 0.5
WAIT_S = 90.0  # the queries' 30s subquery steps: a first averaged point needs a whole step of samples


def exporter(idle: float, available: int) -> ThreadingHTTPServer:
    """node_exporter's two series for one single-cpu node: the idle cpu seconds grow with the wall clock
    at `idle` per second."""
    started = time.monotonic()

    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seconds = (time.monotonic() - started) * idle
            body = (
                "# TYPE node_cpu_seconds_total counter\n"
                f'node_cpu_seconds_total{{cpu="0",mode="idle"}} {seconds:.6f}\n'
                "# TYPE node_memory_MemAvailable_bytes gauge\n"
                f"node_memory_MemAvailable_bytes {available}\n"
                "# TYPE node_memory_MemTotal_bytes gauge\n"
                f"node_memory_MemTotal_bytes {TOTAL}\n"
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((LOOPBACK, 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[PrometheusServer]:
    exporters = {name: exporter(*figures) for name, figures in NODES.items()}
    interval = f"{round(SCRAPE_S * 1000)}ms"
    config = {
        "global": {"scrape_interval": interval, "scrape_timeout": interval},
        "scrape_configs": [
            {
                "job_name": "node",
                # the instance label is the node's name, as the seed's queries expect
                "static_configs": [
                    {"targets": [f"{LOOPBACK}:{server.server_address[1]}"], "labels": {"instance": name}}
                    for name, server in exporters.items()
                ],
            }
        ],
    }
    write_config(tmp_path / "prometheus", config)
    server = PrometheusServer.start_in(tmp_path / "prometheus")
    try:
        yield server
    finally:
        server.stop()
        for running in exporters.values():
            running.shutdown()
            running.server_close()


def node(name: str) -> Node:
    capacity = Resources.parse({"cpu": "1", "memory": str(TOTAL)})
    return Node(meta=ObjectMeta(name=name, namespace=""), allocatable=capacity, capacity=capacity)


def test_the_seed_queries_give_each_node_its_load(prometheus: PrometheusServer) -> None:
    source = PrometheusUsage(prometheus.url)
    nodes = [node(name) for name in NODES] + [node("te9")]  # te9: no exporter, so no load
    deadline = time.monotonic() + WAIT_S
    loads = asyncio.run(source.node_loads(nodes, 60.0, time.time()))
    while set(loads) != set(NODES):
        assert time.monotonic() < deadline, f"no load of every node within {WAIT_S}s: {loads}"
        time.sleep(SCRAPE_S)
        loads = asyncio.run(source.node_loads(nodes, 60.0, time.time()))
    for name, (idle, available) in NODES.items():
        used = loads[name].used
        assert used[CPU] == pytest.approx((1 - idle) * 1000, abs=30), name  # milli-cpu of one cpu
        assert used[MEMORY] == pytest.approx((TOTAL - available) * 1000, rel=0.01), name
    assert "te9" not in loads
