"""deploy/haproxy.cfg as it is written answers /readyz and /metrics from the public side
itself, 404 in the service's envelope, so no node reads its database for them (issue 35: eight
threads of /readyz took another merchant's p50 from 14 to 192 ms); /healthz, which reads
nothing, and the API are passed. The node's own check of /readyz?scope=node goes on."""

import http.client
import json

import pytest

from tests.e2e.standins import Pool


@pytest.fixture
def live():
    pool = Pool("live")
    yield pool
    pool.stop()


def fetch(port: int, path: str) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, 5)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


@pytest.mark.parametrize("path", ["/readyz", "/readyz?scope=node", "/metrics", "/%72eadyz"])
def test_the_proxy_answers_the_probes_that_read_the_database_itself(live, proxy_for, path):
    port = proxy_for(live, None).port
    before = live.served
    status, body = fetch(port, path)
    assert status == 404
    assert json.loads(body)["error"]["code"] == "unrecognized_request_url"
    assert live.served == before


def test_the_proxy_passes_healthz_and_the_api(live, proxy_for):
    port = proxy_for(live, None).port
    assert fetch(port, "/healthz") == (200, "live")
    assert fetch(port, "/v1/payments") == (200, "live")
