"""A health probe that reaches something other than a lahar service's HTTP endpoint (a port reused by
another program, such as a nats-server, whose first line is not HTTP) reads as not healthy, never raises."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from services.cli.stack.supervisor import port_bindable, service_health, service_healthy


@pytest.fixture
def not_http_port() -> Iterator[int]:
    """A loopback port whose server greets every connection with a NATS-style INFO line, then closes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.05)  # accept() wakes up to see the test is over
    stopping = threading.Event()

    def serve() -> None:
        while not stopping.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with connection:
                connection.sendall(b'INFO {"server_id":"x","max_payload":1048576}\r\n')

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stopping.set()
    listener.close()
    thread.join(timeout=5)


def test_a_port_that_does_not_speak_http_is_not_healthy(not_http_port: int) -> None:
    assert service_healthy(not_http_port) is False
    assert service_health(not_http_port) is None


def test_a_port_held_by_a_connection_is_not_bindable_and_a_released_one_is() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    client = socket.create_connection(server.getsockname())
    held = client.getsockname()[1]  # the client's source port: in use, though nothing listens on it
    try:
        assert not port_bindable(held)
    finally:
        client.close()
        server.close()
    released = socket.socket()
    released.bind(("127.0.0.1", 0))
    port = released.getsockname()[1]
    released.close()
    assert port_bindable(port)
