"""Slow clients are the proxy's to hold (issue 35: a slowloris against granian directly held
another merchant's requests 13.9 s). deploy/haproxy.cfg as written waits for a request's
headers itself, at most `timeout http-request`, before any node sees it; every shipped shape
has it in front (docs/admission.md "Every shape")."""

import re
import socket
from pathlib import Path

import pytest

from tests.e2e.standins import Pool, get

CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "haproxy.cfg"


def test_the_shipped_proxy_bounds_how_long_a_request_may_take_to_arrive():
    defaults = CONFIG.read_text().split("\ndefaults\n", 1)[1].split("\nfrontend ", 1)[0]
    [seconds] = re.findall(r"^\s+timeout http-request (\d+)s$", defaults, re.MULTILINE)
    assert 0 < int(seconds) <= 10


@pytest.fixture
def live():
    pool = Pool("live")
    yield pool
    pool.stop()


def test_a_client_that_never_finishes_its_headers_never_reaches_a_node(live, proxy_for):
    port = proxy_for(live, None).port
    before = live.served
    slow = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(20)]
    try:
        for connection in slow:
            connection.sendall(b"GET /v1/payments HTTP/1.1\r\nHost: pay.example\r\nX-a: ")
        assert get(port, None)[0] == 200  # served meanwhile
        assert live.served - before == 1  # the slow ones are held by the proxy, not the node
    finally:
        for connection in slow:
            connection.close()
