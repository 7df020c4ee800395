"""localstripe (PyPI `localstripe`, a stateful Stripe emulator written by others) as a service
the suite starts, like PostgreSQL and Redis: one process per test session on a free loopback
port, its store emptied before each test that asks for it (`DELETE /_config/data`). The payments
benchmark starts it the same way for its live creates (bench/bench_payments.py --live), and reads
its process's CPU time.

Started through a small launcher rather than `python -m localstripe`, for two reasons only:
that entry point listens on every interface (we keep to loopback) and pickles its whole store
to /tmp/localstripe.pickle after every write (shared by every run on the machine, and slower
as the store grows). The emulator's own routes and answers are untouched."""

import contextlib
import subprocess
import sys
import time

import requests

LAUNCHER = """
import sys
from aiohttp import web
from localstripe import resources, server
resources.Store.dump_to_disk = lambda self: None
web.run_app(server.app, host="127.0.0.1", port=int(sys.argv[1]), print=None,
            access_log=None)
"""


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Emulator:
    def __init__(self, url: str, pid: int):
        self.url = url
        self.pid = pid  # its process, for the benchmark's CPU meter

    def flush(self) -> None:
        requests.delete(f"{self.url}/_config/data", timeout=5).raise_for_status()

    def register_webhook(self, name: str, *, url: str, secret: str, events=None) -> None:
        """Makes the emulator send its events, signed with `secret` as Stripe signs them."""
        data = {"url": url, "secret": secret}
        if events is not None:
            data["events"] = events
        requests.post(f"{self.url}/_config/webhooks/{name}", json=data, timeout=5)

    def list(self, resource: str, secret_key: str, **params) -> list[dict]:
        """Every object of a kind the emulator holds (it pages like Stripe)."""
        found, after = [], None
        while True:
            query = {"limit": 100, **params, **({"starting_after": after} if after else {})}
            page = requests.get(
                f"{self.url}/v1/{resource}", params=query, auth=(secret_key, ""), timeout=5
            ).json()
            found.extend(page["data"])
            if not page.get("has_more"):
                return found
            after = page["data"][-1]["id"]


@contextlib.contextmanager
def running_localstripe():
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(url, process)
        yield Emulator(url, process.pid)
    finally:
        process.terminate()
        process.wait(timeout=10)


def _wait_until_serving(url: str, process: subprocess.Popen, timeout: float = 30) -> None:
    """Readiness polling for the process just started (not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"localstripe exited with {process.returncode}: {process.stderr.read().decode()}"
            )
        with contextlib.suppress(requests.ConnectionError):
            requests.get(f"{url}/js.stripe.com/v3/", timeout=1)
            return
        time.sleep(0.1)
    raise TimeoutError(f"localstripe did not start serving at {url} in {timeout} s")
