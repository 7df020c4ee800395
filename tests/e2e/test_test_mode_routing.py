"""deploy/haproxy.cfg as it is written sends requests with a test key, no key, a key it has not
seen the service answer with a success, or a large body to the second web pool when NODE1_TEST names
it and it is up, and known live keys' ordinary requests to the live pool (docs/request-safety.md
"Test mode on its own processes", issue 20: worst-case bodies, a test key's or a live key's,
and made-up keys from many addresses took the processes serving live payments). The pools
here are two small HTTP servers that answer with their own name, so the test reads where each
request went."""

import http.client

import pytest

from tests.e2e.processes import wait_for
from tests.e2e.standins import Pool, answer_by_key, get

LIVE_SECRET = "svc_sk_live_" + "a" * 24
TEST_SECRET = "svc_sk_test_" + "b" * 24
TEST_PUBLISHABLE = "svc_pk_test_" + "c" * 24
LIVE_PUBLISHABLE = "svc_pk_live_" + "d" * 24
ADDRESS = {"X-RateLimit-Scope": "address"}


@pytest.fixture
def pools():
    live, test = Pool("live"), Pool("test")
    yield live, test
    live.stop()
    test.stop()


def served_by(port: int, key: str | None, body=None) -> str:
    return get(port, key, body=body)[2]


def test_test_keys_go_to_the_test_pool_and_known_live_keys_to_the_live_pool(pools, proxy_for):
    live, test = pools
    port = proxy_for(live, test).port
    assert [served_by(port, TEST_SECRET) for _ in range(2)] == ["test", "test"]
    assert served_by(port, TEST_PUBLISHABLE) == "test"
    # A live key's first request: the proxy has not seen it answered with a success yet.
    assert [served_by(port, LIVE_SECRET) for _ in range(2)] == ["test", "live"]
    assert [served_by(port, LIVE_PUBLISHABLE) for _ in range(2)] == ["test", "live"]
    assert [served_by(port, None) for _ in range(2)] == ["test", "test"]


def test_a_preflight_does_not_make_a_key_known(pools, proxy_for):
    """A CORS preflight (OPTIONS) is answered without authentication."""
    live, test = pools
    port = proxy_for(live, test).port
    connection = http.client.HTTPConnection("127.0.0.1", port, 5)
    connection.request("OPTIONS", "/v1/sandbox/tokens", headers={"Authorization": LIVE_SECRET})
    assert connection.getresponse().read() == b"test"
    connection.close()
    assert served_by(port, LIVE_SECRET) == "test"


def test_pages_without_a_key_stay_on_the_live_pool(pools, proxy_for):
    """The challenge page is a customer's browser's, with no key; the admin a session's."""
    live, test = pools
    port = proxy_for(live, test).port
    for path in ("/sandbox/challenge/chs_1", "/admin/"):
        connection = http.client.HTTPConnection("127.0.0.1", port, 5)
        connection.request("GET", path)
        assert connection.getresponse().read() == b"live"
        connection.close()


def test_keys_the_service_refused_never_reach_the_live_pool(proxy_for):
    """Issue 20: made-up keys from 1,016 addresses, each under every per-address limit, cost
    the live pool an authentication each (bob's p99 3.1x). A key is the live pool's once the
    service has answered it with a success; a 401, the address bucket's 429, or a 404 (an
    unknown path is answered before authentication) does not make it so."""
    refused = {
        "svc_sk_live_" + "m" * 24: (401, {}),
        "svc_sk_live_" + "n" * 24: (429, ADDRESS),
        "svc_sk_live_" + "o" * 24: (404, {}),
    }
    live = Pool("live", answer_by_key("live", refused))
    test = Pool("test", answer_by_key("test", refused))
    try:
        port = proxy_for(live, test).port
        for key in refused:
            assert [served_by(port, key) for _ in range(3)] == ["test"] * 3
        assert live.served == 0
    finally:
        live.stop()
        test.stop()


def test_test_keys_fall_back_to_the_live_pool_while_the_test_pool_is_down(pools, proxy_for):
    live, test = pools
    port = proxy_for(live, test).port
    assert served_by(port, TEST_SECRET) == "test"
    assert served_by(port, LIVE_SECRET) == "test"  # not known yet
    test.stop()
    # haproxy's check (1 s apart, fall 2) takes the pool out; until then a refused
    # connection is retried (`retries 3`), so no test-mode request is lost on the way.
    wait_for(lambda: served_by(port, TEST_SECRET) == "live", timeout=30)
    assert served_by(port, LIVE_SECRET) == "live"


def test_without_a_test_pool_every_request_goes_to_the_live_pool(pools, proxy_for):
    live, _ = pools
    port = proxy_for(live, None).port
    assert served_by(port, TEST_SECRET) == "live"
    assert served_by(port, LIVE_SECRET) == "live"


def test_large_bodies_go_to_the_test_pool_whatever_the_key(pools, proxy_for):
    """A body over 32 KiB (one that costs more than a unit, API_COST_BYTES), or of unannounced
    length, holds its process's GIL for its scan and parse: away from the ordinary live ones."""
    live, test = pools
    port = proxy_for(live, test).port
    served_by(port, LIVE_SECRET)  # known from here on
    assert served_by(port, LIVE_SECRET, body=b"x" * 32768) == "live"
    assert served_by(port, LIVE_SECRET, body=b"x" * 32769) == "test"
    assert served_by(port, None, body=b"x" * 32769) == "test"
    assert served_by(port, LIVE_SECRET, body=iter([b"x" * 10])) == "test"  # chunked
