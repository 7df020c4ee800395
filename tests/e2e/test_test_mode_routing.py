"""deploy/haproxy.cfg as it is written sends requests with a test key to the test-mode web
processes when NODE1_TEST names them and they are up, and everything else to the live pool
(docs/request-safety.md "Test mode on its own processes", issue 20: one test key's worst-case
bodies held the GIL of the processes serving live payments). The pools here are two small
HTTP servers that answer with their own name, so the test reads where each request went."""

import os
import subprocess
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread

import pytest
import requests

from tests.e2e.fleet import HAPROXY
from tests.e2e.processes import ROOT, wait_for
from tests.e2e.stack import quiet_port

LIVE_SECRET = "svc_sk_live_" + "a" * 24
TEST_SECRET = "svc_sk_test_" + "b" * 24
TEST_PUBLISHABLE = "svc_pk_test_" + "c" * 24
LIVE_PUBLISHABLE = "svc_pk_live_" + "d" * 24


class Pool:
    """A web pool standing in for `serve.py web`: answers every request with its name."""

    def __init__(self, name: str):
        class Answer(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's naming)
                self.send_response(200)
                self.send_header("Content-Length", str(len(name)))
                self.end_headers()
                self.wfile.write(name.encode())

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def pools():
    live, test = Pool("live"), Pool("test")
    yield live, test
    live.stop()
    test.stop()


def start_proxy(live: Pool, test: Pool | None) -> tuple[subprocess.Popen, str]:
    port = quiet_port()
    env = {**os.environ, "LB_BIND": f"127.0.0.1:{port}", "NODE1": live.address}
    env["NODE2"] = live.address
    if test is not None:
        env["NODE1_TEST"] = test.address
    proxy = subprocess.Popen(
        [HAPROXY, "-db", "-f", str(ROOT / "deploy" / "haproxy.cfg")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proxy, f"http://127.0.0.1:{port}/v1/payments"


def served_by(url: str, key: str | None) -> str:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return requests.get(url, headers=headers, timeout=5).text


@pytest.fixture
def proxy_for():
    if not os.path.exists(HAPROXY):
        pytest.skip("haproxy is not installed (scripts/test.sh installs Debian's under CI)")
    started = []

    def start(live: Pool, test: Pool | None) -> str:
        proxy, url = start_proxy(live, test)
        started.append(proxy)
        wait_for(lambda: _answers(url), timeout=30)
        return url

    yield start
    for proxy in started:
        proxy.terminate()
        proxy.wait(10)


def _answers(url: str) -> bool:
    try:
        return served_by(url, None) == "live"
    except requests.RequestException:
        return False


def test_test_keys_go_to_the_test_pool_and_the_rest_to_the_live_pool(pools, proxy_for):
    live, test = pools
    url = proxy_for(live, test)
    assert served_by(url, TEST_SECRET) == "test"
    assert served_by(url, TEST_PUBLISHABLE) == "test"
    assert served_by(url, LIVE_SECRET) == "live"
    assert served_by(url, LIVE_PUBLISHABLE) == "live"
    assert served_by(url, None) == "live"


def test_test_keys_fall_back_to_the_live_pool_while_the_test_pool_is_down(pools, proxy_for):
    live, test = pools
    url = proxy_for(live, test)
    assert served_by(url, TEST_SECRET) == "test"
    test.stop()
    # haproxy's check (1 s apart, fall 2) takes the pool out; until then a refused
    # connection is retried (`retries 3`), so no test-mode request is lost on the way.
    wait_for(lambda: served_by(url, TEST_SECRET) == "live", timeout=30)
    assert served_by(url, LIVE_SECRET) == "live"


def test_without_a_test_pool_every_request_goes_to_the_live_pool(pools, proxy_for):
    live, _ = pools
    url = proxy_for(live, None)
    assert served_by(url, TEST_SECRET) == "live"
    assert served_by(url, LIVE_SECRET) == "live"
