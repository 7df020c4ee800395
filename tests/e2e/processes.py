"""Start the service's real processes (granian web, Celery worker) against the test database,
for end-to-end tests that talk HTTP. The database must be one the subprocesses can open, so
these tests run on PostgreSQL (pytest-django's SQLite test database lives in memory)."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import requests
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_database_url() -> str:
    """The database pytest-django created, as a URL another process can open."""
    db = connection.settings_dict
    host, port = db["HOST"] or "127.0.0.1", db["PORT"] or 5432
    return f"postgres://{db['USER'] or 'postgres'}@{host}:{port}/{db['NAME']}"


# The limits config/settings_test.py lifts for the suite: a process started with these names
# set to None (removed from its environment) has the production defaults.
PRODUCTION_LIMITS = dict.fromkeys(
    [f"API_RATE_LIMIT_{mode}_{name}" for mode in ("LIVE", "TEST") for name in ("RATE", "BURST")]
    + ["API_ADDRESS_RATE", "API_ADDRESS_BURST", "API_CONCURRENCY_LIVE", "API_CONCURRENCY_TEST"]
    + ["API_LOAD_SHEDDING"]
)


def service_env(**extra) -> dict:
    """The subprocess environment: the test database pytest-django created, the test broker;
    `extra` on top (a name given None is removed)."""
    url = test_database_url()
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
        "API_KEY_PEPPER": settings.API_KEY_PEPPER,
        "DEBUG": "false",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_POOL": "false",
    }
    if settings.REDIS_URL:
        env["REDIS_URL"] = settings.REDIS_URL
    env.update(extra)
    return {name: value for name, value in env.items() if value is not None}


def wait_until_serving(base_url: str, process: subprocess.Popen, timeout: float = 30) -> None:
    """Readiness polling for a process we just started (not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"web process exited with {process.returncode}")
        try:
            requests.get(base_url + "/v1/", timeout=1, allow_redirects=False)  # any answer
            return
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.1)
    raise TimeoutError(f"{base_url} did not start serving in {timeout} s")


@contextlib.contextmanager
def web_server(**env):
    """The web server as `make run` starts it (one worker); yields the origin, e.g.
    http://127.0.0.1:PORT."""
    port = free_port()
    # As `make run` does before starting: whitenoise serves the collected admin assets.
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env=service_env(**env),
        check=True,
    )
    process = subprocess.Popen(
        [
            str(VENV_BIN / "granian"),
            "--interface",
            "wsgi",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--blocking-threads",
            "4",
            "--no-ws",
            "config.wsgi:application",
        ],
        cwd=ROOT,
        env=service_env(**env),
        stdout=subprocess.DEVNULL,
        # Not a pipe nobody reads: the request log (a line per request) would fill it and
        # block the server mid-request (found under schemathesis, tests/e2e/test_fuzz.py).
        stderr=subprocess.DEVNULL,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(base_url, process)
        yield base_url
    finally:
        process.terminate()
        process.wait(timeout=30)


WORKER_START_TIMEOUT = 30


@contextlib.contextmanager
def celery_worker(*queues: str, **env):
    """A Celery worker process as the Procfile's `webhooks` line starts it (threads pool),
    consuming `queues`; yields the process (its own session, so a test may SIGKILL it), its
    log lines so far in `process.output`."""
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", ",".join(queues)]
        + ["--pool", "threads", "--concurrency", "2", "--prefetch-multiplier", "1"]
        + ["--without-gossip", "--without-mingle", "--without-heartbeat", "-n", "e2e@%h"]
        + ["--loglevel", "INFO"],
        cwd=ROOT,
        env=service_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    ready, output = threading.Event(), []
    process.output = output
    threading.Thread(target=_drain, args=(process, output, ready), daemon=True).start()
    try:
        assert ready.wait(WORKER_START_TIMEOUT), "the worker did not start:\n" + "".join(output)
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def _drain(process, output: list[str], ready: threading.Event) -> None:
    """Read the worker's log (a full pipe would block it) and notice when it is ready."""
    for line in process.stdout:
        output.append(line)
        if " ready." in line:
            ready.set()


def wait_for(predicate, timeout: float = 20.0) -> None:
    """Wait on an observable fact a process is expected to bring about (never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for another process"
        time.sleep(0.05)
