"""scripts/serve.py web, the production web command (docs/production.md "Processes"): it refuses
a port another server still listens on, and a SIGTERM during its start stops it."""

import contextlib
import os
import signal
import subprocess
import sys

import pytest

from tests.e2e.processes import ROOT, free_port, service_env, wait_for, wait_until_serving

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def serve_web(port: int, log, **env) -> subprocess.Popen:
    """The web server, its log (granian's and serve.py's) written to the file `log`."""
    return subprocess.Popen(
        [sys.executable, "scripts/serve.py", "web"],
        cwd=ROOT,
        env=service_env(WEB_PORT=str(port), WEB_WORKERS="2", **env),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            pass  # killed with its workers below

    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def test_a_second_server_on_a_taken_port_refuses_to_start(tmp_path):
    port, log = free_port(), tmp_path / "web.log"
    with open(log, "w") as out:
        first = serve_web(port, out)
        try:
            wait_until_serving(f"http://127.0.0.1:{port}", first)
            second = serve_web(port, out)
            try:
                second.wait(timeout=30)
            finally:
                stop(second)
            assert second.returncode != 0
            assert f"127.0.0.1:{port} is taken" in log.read_text()
        finally:
            stop(first)


def test_a_sigterm_while_the_workers_start_stops_the_server(tmp_path):
    """granian 2.8 waited for ever on a worker SIGTERMed while it loaded the app (4 of 4 in
    the issue; here every time with its log going to a file): the signal only marked the main
    process's copy of the server. config.draining has such a worker exit once loaded, so the
    server stops by itself, long before its kill timeout (the old code ran past 60 s)."""
    log = tmp_path / "web.log"
    with open(log, "w") as out:
        process = serve_web(free_port(), out, WEB_KILL_TIMEOUT="600")
        try:
            wait_for(lambda: "Spawning worker-2" in log.read_text(), timeout=60)
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0, log.read_text()[-2000:]
        finally:
            stop(process)
