"""Upgrading without downtime (docs/production.md "Upgrading"): the new release's migrations run
while the previous release still serves, so its code must keep working on the new schema.

The previous release's code (`git archive` of PREVIOUS_RELEASE) runs its web process and its
manage.py against a database migrated by this tree, and takes a merchant through a payment, a
refund and a webhook endpoint. A second, static check names every migration this tree added
since that release whose operations the previous code could trip on (a NOT NULL column it does
not write, a dropped or renamed column, an index built under a write lock).
"""

import io
import json
import os
import subprocess
import sys
import tarfile

import pytest
import requests
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations
from django.db.migrations.loader import MigrationLoader

from tests.e2e.processes import ROOT, service_env, wait_until_serving
from tests.e2e.stack import fresh_copy, quiet_port, runtime_venv, scratch_database

# The release running in production before this one: bumped by the release procedure
# (docs/production.md "Cutting a release") to the commit that was deployed.
PREVIOUS_RELEASE = "f393378fa5b9d6e3647735e44e85cada7a74c5d8"

# Contract steps (a column or table dropped or renamed, a column made NOT NULL) are only safe
# once no running release reads or writes what they remove: list each here, with the release
# that stopped using it, when it ships (docs/production.md "Upgrading").
REVIEWED_CONTRACTS: dict[tuple[str, str], str] = {
    ("webhooks", "0008_delivery_held_status"): "choices only (the `held` status): no SQL",
    ("webhooks", "0012_blocked_and_endpoint_actions_choices"): "choices only: no SQL",
    ("api", "0010_config_revision_without_triggers"): (
        "drops the configuration revision's triggers, which v0.2.0 relies on: while v0.2.0 "
        "nodes serve, their changes are seen elsewhere within MAX_AGE (60 s), not at once"
    ),
}


def previous_release(destination) -> None:
    archive = subprocess.run(
        ["git", "archive", "--format=tar", PREVIOUS_RELEASE], cwd=ROOT, capture_output=True
    )
    if archive.returncode != 0:
        pytest.skip(f"no git history holding {PREVIOUS_RELEASE} here: {archive.stderr.decode()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(destination, filter="data")


def released_migrations() -> set[tuple[str, str]]:
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", PREVIOUS_RELEASE],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if listed.returncode != 0:
        pytest.skip(f"no git history holding {PREVIOUS_RELEASE} here: {listed.stderr}")
    found = set()
    for path in listed.stdout.splitlines():
        parts = path.split("/")
        if len(parts) == 3 and parts[1] == "migrations" and parts[2][:4].isdigit():
            found.add((parts[0], parts[2].removesuffix(".py")))
    return found


def unsafe_reason(operation, created_models: set[str]) -> str | None:
    match operation:
        case migrations.CreateModel() | migrations.RunPython() | AddIndexConcurrently():
            return None
        case RemoveIndexConcurrently():
            return None  # no lock, and no query's answer changes: the previous code reads on
        case migrations.SeparateDatabaseAndState(database_operations=operations):
            # What the database sees is its own operations (the state's touch no table).
            reasons = (unsafe_reason(op, created_models) for op in operations)
            return next((reason for reason in reasons if reason), None)
        case migrations.AlterModelOptions() | migrations.AlterModelManagers():
            return None
        case migrations.AddField(field=field):
            if field.null or field.has_db_default() or field.many_to_many:
                return None
            return "a NOT NULL column without db_default: the previous code's INSERTs fail"
        case migrations.AddIndex(model_name=model) | migrations.AddConstraint(model_name=model):
            if model in created_models:
                return None  # on a table this release creates: empty, nobody waits
            return "built under a write lock on a live table: use AddIndexConcurrently"
        case (
            migrations.RemoveField()
            | migrations.DeleteModel()
            | migrations.RenameField()
            | migrations.RenameModel()
            | migrations.AlterField()
        ):
            return "a contract step: safe only once no running release uses what it changes"
    return f"{type(operation).__name__} is not known to be safe while the previous code runs"


def test_migrations_since_the_previous_release_only_expand_the_schema():
    released = released_migrations()
    loader = MigrationLoader(None, ignore_no_migrations=True)
    ours = {"api", "accounts", "events", "webhooks", "payments", "refunds", "sandbox"}
    unsafe = []
    for key, migration in sorted(loader.disk_migrations.items()):
        if key[0] not in ours or key in released or key in REVIEWED_CONTRACTS:
            continue
        created = {op.name_lower for op in migration.operations if hasattr(op, "fields")}
        for operation in migration.operations:
            if reason := unsafe_reason(operation, created):
                unsafe.append(f"{key[0]}.{key[1]}: {operation.describe()}: {reason}")
    assert not unsafe, "\n".join(unsafe)


@pytest.mark.e2e
@pytest.mark.postgres
def test_the_previous_release_runs_on_this_releases_schema(tmp_path):
    old = tmp_path / "previous"
    previous_release(old)
    # The old code runs on this release's dependencies, installed as production installs them
    # (not this checkout's editable install, whose finder would hand the old code this tree's
    # modules wherever the old tree has none, such as a new room's admin.py).
    copy = tmp_path / "copy"
    copy.mkdir()
    old_python = str(runtime_venv(fresh_copy(copy)) / "bin" / "python")
    with scratch_database(os.environ["DATABASE_URL"], suffix="upgrade") as url:
        env = service_env(
            DATABASE_URL=url, PYTHONPATH=str(old), WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8"
        )
        # Expand: this tree's migrations, while the previous release still serves.
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env
        ).check_returncode()
        merchant = subprocess.run(
            [old_python, "manage.py", "create_merchant", "--name", "Old", "--email"]
            + ["old@example.test", "--json"],
            cwd=old,
            env=env,
            capture_output=True,
            text=True,
        )
        assert merchant.returncode == 0, merchant.stderr
        keys = json.loads(merchant.stdout)["keys"]["test"]
        port = quiet_port()
        web = subprocess.Popen(
            [old_python, "-m", "granian", "--interface", "wsgi", "--port", str(port)]
            + ["--workers", "1", "--no-ws", "config.wsgi:application"],
            cwd=old,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until_serving(base, web)
            a_merchant_works_through(f"{base}/v1", keys)
        finally:
            web.terminate()
            web.wait(30)


def a_merchant_works_through(api: str, keys: dict) -> None:
    secret = {"Authorization": f"Bearer {keys['secret']}"}
    card = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2040, "cvc": "123"}
    token = requests.post(
        f"{api}/sandbox/tokens",
        json=card,
        headers={"Authorization": f"Bearer {keys['publishable']}"},
        timeout=30,
    )
    assert token.status_code == 201, token.text
    body = {"amount": 1500, "currency": "eur", "reference": "upgrade", "metadata": {"a": "b"}}
    body["payment_method"] = {"type": "card", "token": token.json()["id"]}
    payment = requests.post(f"{api}/payments", json=body, headers=secret, timeout=30)
    assert payment.status_code == 201, payment.text
    payment_id = payment.json()["id"]
    refund = requests.post(
        f"{api}/payments/{payment_id}/refunds", json={"amount": 500}, headers=secret, timeout=30
    )
    assert refund.status_code == 201, refund.text
    endpoint = requests.post(
        f"{api}/webhook-endpoints",
        json={"url": "https://127.0.0.1:9/hooks", "enabled_events": ["payment.*"]},
        headers=secret,
        timeout=30,
    )
    assert endpoint.status_code == 201, endpoint.text
    for path in ("payments", f"payments/{payment_id}", "events", "webhook-endpoints"):
        listed = requests.get(f"{api}/{path}", headers=secret, timeout=30)
        assert listed.status_code == 200, (path, listed.text)
