"""`make serve`, one node from an installed release (docs/production.md "Processes"): every
Procfile process starts on the address it is given, nothing is installed and nothing migrated.
The node answers /readyz 503 while a migration is missing, and 200 once the release step
(`manage.py migrate`, run on its own) applied it, without a restart."""

import contextlib
import os
import random
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import requests
from django.db.migrations.loader import MigrationLoader

from tests.e2e.processes import ROOT, service_env, wait_for
from tests.e2e.stack import Collected, scratch_database

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
START_TIMEOUT = 120.0  # readiness polling on a busy 2-core box, not a timing assertion
HOST = "127.0.0.2"  # not make's default (127.0.0.1): the address is the one given
PROCESSES = ("web", "admin", "worker", "webhooks", "webhooks-test", "beat")  # the Procfile's


def port_in(first: int, last: int) -> int:
    """A free port of the range given to this suite (below the ephemeral range)."""
    while True:
        port = random.randint(first, last)
        with socket.socket() as sock, contextlib.suppress(OSError):
            sock.bind(("127.0.0.1", port))
            return port


def last_payments_migration() -> tuple[str, str]:
    """(the payments app's leaf migration, the one before it)."""
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    (leaf,) = graph.leaf_nodes("payments")
    (parent,) = (node for node in graph.node_map[leaf].parents if node.key[0] == "payments")
    return leaf[1], parent.key[1]


def manage(env: dict, *args: str) -> str:
    run = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def applied(database_url: str, name: str) -> bool:
    with psycopg.connect(database_url) as conn:
        query = "SELECT count(*) FROM django_migrations WHERE app = 'payments' AND name = %s"
        return conn.execute(query, [name]).fetchone()[0] == 1


class MakeServe(Collected):
    """`make serve` in the checkout, its output collected; `-W pyproject.toml` makes the
    install stamp out of date, so a serve that depended on the install would reinstall."""

    def __init__(self, env: dict, port: int):
        venv = Path(sys.executable).parent.parent
        argv = ["make", "-W", "pyproject.toml", "serve", f"VENV={venv}"]
        super().__init__([*argv, f"WEB_HOST={HOST}", f"PORT={port}"], ROOT, env)

    def started(self, name: str) -> bool:
        return any(re.match(rf"\S+ {re.escape(name)}\.\d+ +\| ", line) for line in self.lines)

    def stop(self) -> int:
        """Ctrl-C, as an operator stops it in the foreground."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGINT)
        try:
            return self.process.wait(60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)


def readiness(url: str) -> dict | None:
    """/readyz's checks, {name: error or ""}, with its status; None while nothing answers."""
    try:
        answer = requests.get(url, headers={"Accept": "application/json"}, timeout=5)
    except requests.ConnectionError:
        return None
    return {"status": answer.status_code, **answer.json()}


def test_make_serve_starts_every_process_on_its_address_without_install_or_migrate(tmp_path):
    leaf, before_leaf = last_payments_migration()
    with scratch_database(os.environ["DATABASE_URL"], suffix="serve") as url:
        env = service_env(
            DATABASE_URL=url,
            PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"),
            BEAT_SCHEDULE=str(tmp_path / "beat-schedule"),
            ALLOWED_HOSTS=HOST,
        )
        env.pop("MAKEFLAGS", None)
        manage(env, "migrate", "--noinput")
        manage(env, "migrate", "--noinput", "payments", before_leaf)
        port = port_in(25000, 25999)
        readyz = f"http://{HOST}:{port}/readyz"
        node = MakeServe(env, port)
        try:
            states = []

            def answered() -> bool:
                """/readyz answers and every process has written its first line (a loaded
                machine's worker may write its banner after beat's)."""
                assert node.process.poll() is None, node.output()
                states.append(readiness(readyz))
                return states[-1] is not None and all(map(node.started, PROCESSES))

            try:
                wait_for(answered, timeout=START_TIMEOUT)
            except AssertionError as error:
                pytest.fail(f"{error}; not every process started:\n{node.output()}")
            with pytest.raises(requests.ConnectionError):  # only where it was told
                requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
            assert states[-1]["status"] == 503
            assert "1 migrations not applied" in str(states[-1]), states[-1]
            assert not applied(url, leaf)
            assert "pip install" not in node.output() and "Applying" not in node.output()

            # The release step, on its own: the same processes turn ready.
            manage(env, "migrate", "--noinput")
            wait_for(lambda: (readiness(readyz) or {}).get("status") == 200, START_TIMEOUT)
            # The back office in its own process, on the next port; the API's has no /admin/.
            admin = f"http://{HOST}:{port + 1}/admin/login/"
            assert requests.get(admin, timeout=10).status_code == 200
            assert requests.get(f"http://{HOST}:{port}/admin/login/", timeout=10).status_code == 404
        finally:
            status = node.stop()
        # make itself ends by the SIGINT; every process stopped on it, none crashed before.
        assert status in (0, -signal.SIGINT), node.output()
        assert "EXITED" not in node.output()
