"""`/readyz?scope=node`, what a load balancer checks (deploy/haproxy.cfg, docs/production.md
"Health checks"): only what is wrong with this node. What the whole fleet shares (the broker,
beat, the webhook backlog) fails every node at once, and a load balancer that took them all out
would stop an API that serves without them."""

import datetime
import json

import pytest
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from config import beatruns, draining
from tests.sick import CLOSED_PORT_URL

pytestmark = pytest.mark.django_db(transaction=True)
NODE = "/readyz?scope=node"


def readiness(client, path: str) -> tuple[int, dict]:
    response = client.get(path, HTTP_ACCEPT="application/json", HTTP_HOST="10.9.8.7:8000")
    return response.status_code, json.loads(response.content)


def failing(report: dict) -> set[str]:
    return {check for check, result in report.items() if result != "OK"}


def test_what_the_fleet_shares_fails_readyz_but_not_the_node_scope(client, settings, tmp_path):
    stale = timezone.now() - datetime.timedelta(seconds=settings.READINESS_BEAT_MAX_AGE + 5)
    beatruns.record("webhooks.tasks.deliver_due", last_sent_at=stale)
    if settings.REDIS_URL:
        settings.REDIS_URL = CLOSED_PORT_URL
    else:
        (tmp_path / "file").write_text("not a folder")
        settings.BROKER_DIR = tmp_path / "file" / "broker"
    status, report = readiness(client, "/readyz")
    assert status == 503 and len(failing(report)) == 2  # the broker and beat
    status, report = readiness(client, NODE)
    assert status == 200
    assert [name.split("(")[0] for name in report] == ["Draining", "Database", "Migrations"]


def test_the_node_scope_fails_on_a_missing_migration_and_while_draining(client):
    recorder = MigrationRecorder(connection)
    recorder.record_unapplied("config", "0001_task_runs")
    try:
        missing = readiness(client, NODE)
    finally:
        recorder.record_applied("config", "0001_task_runs")
    assert (missing[0], failing(missing[1])) == (503, {"Migrations()"})
    draining.DRAINING.set()
    try:
        drained = readiness(client, NODE)
    finally:
        draining.DRAINING.clear()
    assert (drained[0], failing(drained[1])) == (503, {"Draining()"})
    assert readiness(client, NODE)[0] == 200


def test_an_unknown_scope_is_refused(client):
    response = client.get("/readyz?scope=fleet")
    assert response.status_code == 400
    assert b"scope: 'node'" in response.content
