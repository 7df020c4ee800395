"""deploy/haproxy.cfg as it is written sends requests with a test key or a large body to the
test-mode web processes when NODE1_TEST names them and they are up, and everything else to the
live pool (docs/request-safety.md "Test mode on its own processes", issue 20: worst-case bodies,
a test key's or a live key's, held the GIL of the processes serving live payments). The pools
here are two small HTTP servers that answer with their own name, so the test reads where each
request went."""

import pytest

from tests.e2e.processes import wait_for
from tests.e2e.standins import Pool, get

LIVE_SECRET = "svc_sk_live_" + "a" * 24
TEST_SECRET = "svc_sk_test_" + "b" * 24
TEST_PUBLISHABLE = "svc_pk_test_" + "c" * 24
LIVE_PUBLISHABLE = "svc_pk_live_" + "d" * 24


@pytest.fixture
def pools():
    live, test = Pool("live"), Pool("test")
    yield live, test
    live.stop()
    test.stop()


def served_by(port: int, key: str | None, body=None) -> str:
    return get(port, key, body=body)[2]


def test_test_keys_go_to_the_test_pool_and_the_rest_to_the_live_pool(pools, proxy_for):
    live, test = pools
    port = proxy_for(live, test)
    assert served_by(port, TEST_SECRET) == "test"
    assert served_by(port, TEST_PUBLISHABLE) == "test"
    assert served_by(port, LIVE_SECRET) == "live"
    assert served_by(port, LIVE_PUBLISHABLE) == "live"
    assert served_by(port, None) == "live"


def test_test_keys_fall_back_to_the_live_pool_while_the_test_pool_is_down(pools, proxy_for):
    live, test = pools
    port = proxy_for(live, test)
    assert served_by(port, TEST_SECRET) == "test"
    test.stop()
    # haproxy's check (1 s apart, fall 2) takes the pool out; until then a refused
    # connection is retried (`retries 3`), so no test-mode request is lost on the way.
    wait_for(lambda: served_by(port, TEST_SECRET) == "live", timeout=30)
    assert served_by(port, LIVE_SECRET) == "live"


def test_without_a_test_pool_every_request_goes_to_the_live_pool(pools, proxy_for):
    live, _ = pools
    port = proxy_for(live, None)
    assert served_by(port, TEST_SECRET) == "live"
    assert served_by(port, LIVE_SECRET) == "live"


def test_large_bodies_go_to_the_test_pool_whatever_the_key(pools, proxy_for):
    """A body over 32 KiB (one that costs more than a unit, API_COST_BYTES), or of unannounced
    length, holds its process's GIL for its scan and parse: away from the ordinary live ones."""
    live, test = pools
    port = proxy_for(live, test)
    assert served_by(port, LIVE_SECRET, body=b"x" * 32768) == "live"
    assert served_by(port, LIVE_SECRET, body=b"x" * 32769) == "test"
    assert served_by(port, None, body=b"x" * 32769) == "test"
    assert served_by(port, LIVE_SECRET, body=iter([b"x" * 10])) == "test"  # chunked
