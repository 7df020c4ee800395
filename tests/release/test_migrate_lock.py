"""`manage.py migrate` as a release step that several nodes may run at once (docs/production.md
"Upgrading"): real processes on a fresh scratch database, started together."""

import os
import subprocess
import sys

import psycopg
import pytest
from django.db.migrations.loader import MigrationLoader

from tests.e2e.processes import ROOT, service_env
from tests.e2e.stack import scratch_database

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

NODES = 4


def migrations_on_disk() -> set[tuple[str, str]]:
    return set(MigrationLoader(None, ignore_no_migrations=True).disk_migrations)


def test_nodes_migrating_at_once_all_succeed_and_record_each_migration_once():
    with scratch_database(os.environ["DATABASE_URL"], suffix="migrate") as url:
        # The pool on, as in production: the lock lives on the connection migrate uses.
        env = service_env(DATABASE_URL=url, DATABASE_POOL="true")
        runs = [
            subprocess.Popen(
                [sys.executable, "manage.py", "migrate", "--noinput"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for _ in range(NODES)
        ]
        outputs = [run.communicate(timeout=120)[0] for run in runs]
        assert [run.returncode for run in runs] == [0] * NODES, "\n---\n".join(outputs)
        with psycopg.connect(url) as conn:
            recorded = conn.execute("SELECT app, name FROM django_migrations").fetchall()
    assert len(recorded) == len(set(recorded)), "a migration was recorded twice"
    assert set(recorded) >= migrations_on_disk()
    # Exactly one process applied anything; the others found the schema up to date.
    assert sum("Applying " in output for output in outputs) == 1, "\n---\n".join(outputs)
