"""deploy/haproxy.cfg as it is written, in front of stand-in web pools: small HTTP servers
whose answers a test chooses, so it reads what the proxy did (where a request went, what it
passed on, what it refused itself) without the service's own limits in the way."""

import http.client
import os
from collections.abc import Callable, Iterable
from http.server import ThreadingHTTPServer

import pytest

from tests.e2e.fleet import HAPROXY, LoadBalancer
from tests.e2e.processes import wait_for
from tests.support.loopback import QuietHandler, serving

# (the request's headers, lower-cased names) -> (status, extra headers, body)
Answer = Callable[[dict], tuple[int, dict, str]]


def answer_by_key(
    name: str, answers: dict[str, tuple[int, dict]], otherwise: tuple[int, dict] = (200, {})
) -> Answer:
    """The (status, headers) `answers` holds for the request's key (its Bearer token), else
    `otherwise`; the body is the pool's `name`, so a test reads where the request went."""

    def answer(headers: dict) -> tuple[int, dict, str]:
        key = headers.get("authorization", "").removeprefix("Bearer ")
        return (*answers.get(key, otherwise), name)

    return answer


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # haproxy's health check resets its connection once it has read the status


class Pool:
    """A web pool standing in for `serve.py web`: answers every request with `answer`'s reply
    (by default 200 and its name), and counts them; its health checks are answered 200."""

    def __init__(self, name: str, answer: Answer | None = None):
        answer = answer or (lambda headers: (200, {}, name))
        pool = self
        self.served = 0

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802
                self.read_body()
                self.do_GET()

            def do_OPTIONS(self):  # noqa: N802
                self.do_GET()

            def read_body(self) -> None:
                if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                    self.rfile.read(int(self.headers.get("Content-Length", 0)))
                    return
                while size := int(self.rfile.readline().split(b";")[0], 16):
                    self.rfile.read(size + 2)  # the chunk and its CRLF
                self.rfile.readline()  # the CRLF after the last (empty) chunk

            def do_GET(self):  # noqa: N802 (http.server's naming)
                if not self.path.startswith("/readyz"):
                    pool.served += 1
                    status, headers, body = answer(_joined(self.headers))
                else:  # the proxy's health check
                    status, headers, body = 200, {}, "ready"
                self.answer(status, body.encode(), headers)

        self.server = serving(Handler, QuietServer)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _joined(headers) -> dict:
    """Lower-cased names (haproxy sends them so); repeated headers joined with commas, as the
    WSGI server does (a forwarded-for header the client sent and the one the proxy added
    arrive as two lines)."""
    return {name.lower(): ", ".join(headers.get_all(name)) for name in set(headers.keys())}


def get(
    port: int,
    key: str | None,
    source: str = "127.0.0.1",
    headers: dict | None = None,
    body: bytes | Iterable[bytes] | None = None,
):
    """GET /v1/payments through the proxy from the loopback address `source` (any 127.x.y.z
    is this host's), or POST it when there is a `body` (an iterable one is sent chunked):
    -> (status, headers (any case), body)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, 5, source_address=(source, 0))
    sent = {**(headers or {}), **({"Authorization": f"Bearer {key}"} if key else {})}
    try:
        method = "GET" if body is None else "POST"
        connection.request(method, "/v1/payments", body=body, headers=sent)
        response = connection.getresponse()
        return response.status, response.headers, response.read().decode()
    finally:
        connection.close()


@pytest.fixture
def proxy_for(tmp_path):
    """start(live pool, test pool or None, second live node) -> the proxy (its `port`), once
    it serves the live pool. The live pool's two nodes are `live` twice unless a second is
    given."""
    if not os.path.exists(HAPROXY):
        pytest.skip("haproxy is not installed (scripts/test.sh installs Debian's under CI)")
    started = []

    def start(live: Pool, test: Pool | None, node2: Pool | None = None) -> LoadBalancer:
        servers = {"NODE1": live.address, "NODE2": (node2 or live).address}
        if test is not None:
            servers["NODE1_TEST"] = test.address
        work = tmp_path / f"proxy-{len(started)}"
        work.mkdir()
        started.append(LoadBalancer(servers, work))
        wait_for(lambda: _answers(started[-1].port), timeout=30)
        return started[-1]

    yield start
    for proxy in started:
        proxy.stop()


def _answers(port: int) -> bool:
    try:
        return get(port, None)[0] < 500
    except OSError:
        return False
