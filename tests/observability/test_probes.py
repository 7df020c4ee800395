"""/healthz and /readyz through Django's client: every check passing, and each one failing for
real (a migration unrecorded, beat silent, a late webhook, Redis on a closed port, PostgreSQL
on a closed port in a process of its own). The checks run in threads with their own database
connections, so these tests commit (transaction=True)."""

import datetime
import json
import os
import subprocess
import sys

import pytest
from django.db import connection, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from config import beatruns, draining
from events.services import emit
from tests.e2e.processes import ROOT
from tests.sick import CLOSED_PORT_URL
from tests.test_settings import import_settings
from webhooks.models import Delivery

pytestmark = pytest.mark.django_db(transaction=True)
DELIVER_DUE = "webhooks.tasks.deliver_due"
UNSERVED_HOST = "10.9.8.7:8000"  # what a load balancer's check may send, if any Host at all


def beat_sent(seconds_ago: float = 1.0) -> None:
    beatruns.record(
        DELIVER_DUE, last_sent_at=timezone.now() - datetime.timedelta(seconds=seconds_ago)
    )


def readiness(client) -> tuple[int, dict]:
    response = client.get("/readyz", HTTP_ACCEPT="application/json")
    return response.status_code, json.loads(response.content)


def failing(report: dict) -> dict:
    return {check: result for check, result in report.items() if result != "OK"}


def test_healthz_answers_whatever_the_host_without_a_key_and_without_https(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/v1/payments", HTTP_HOST=UNSERVED_HOST).status_code == 400  # checked there
    response = client.get("/healthz", HTTP_HOST=UNSERVED_HOST)
    assert (response.status_code, response.content) == (200, b"ok\n")
    assert client.head("/healthz").status_code == 200
    assert client.post("/healthz").status_code == 405


def test_ready_when_every_check_passes(client, settings):
    beat_sent()
    settings.SECURE_SSL_REDIRECT = True
    status, report = readiness(client)
    assert (status, failing(report)) == (200, {})
    assert {name.split("(")[0] for name in report} == {
        "Draining",
        "Database",
        "Migrations",
        "Redis" if settings.REDIS_URL else "EmbeddedBroker",
        "Beat",
        "Webhooks",
    }
    assert client.get("/readyz", HTTP_HOST=UNSERVED_HOST).status_code == 200  # the HTML report


def test_not_ready_with_a_migration_not_applied(client):
    """New code deployed before its release step ran migrate: readiness false, so the load
    balancer sends it nothing (issue 21: 20 of 20 payments answered 500 behind healthy probes)."""
    beat_sent()
    recorder = MigrationRecorder(connection)
    recorder.record_unapplied("config", "0001_task_runs")
    try:
        status, report = readiness(client)
    finally:
        recorder.record_applied("config", "0001_task_runs")
    assert status == 503
    assert failing(report) == {
        "Migrations()": "Unavailable: 1 migrations not applied (config.0001_task_runs...)"
    }
    assert readiness(client)[0] == 200


def test_not_ready_when_beat_is_silent(client, settings):
    assert failing(readiness(client)[1]) == {
        "Beat()": "Unavailable: beat has never sent a scheduled task"
    }
    beat_sent(seconds_ago=settings.READINESS_BEAT_MAX_AGE + 5)
    status, report = readiness(client)
    assert status == 503
    assert failing(report)["Beat()"].startswith("Unavailable: beat last sent a scheduled task 6")
    settings.READINESS_BEAT_MAX_AGE = 0  # the check left out
    assert readiness(client) == (200, readiness(client)[1]) and "Beat()" not in readiness(client)[1]


def test_not_ready_when_the_oldest_due_webhook_is_too_late(
    client, settings, endpoint_for, receiver, merchant
):
    beat_sent()
    endpoint_for(receiver)
    with transaction.atomic():
        emit(
            merchant=merchant,
            livemode=False,
            type="payment.captured",
            obj={"id": "pay_01J0000000000000000000000A", "object": "payment"},
            previous_attributes=None,
        )
    assert Delivery.objects.filter(status="pending").count() == 1
    assert readiness(client)[0] == 200  # due now: not late yet
    late = timezone.now() - datetime.timedelta(seconds=settings.READINESS_WEBHOOK_MAX_AGE + 30)
    Delivery.objects.update(next_attempt_at=late)
    status, report = readiness(client)
    assert status == 503
    assert failing(report)["Webhooks()"].startswith("Unavailable: the oldest due webhook delivery")
    Delivery.objects.update(next_attempt_at=timezone.now() + datetime.timedelta(hours=1))
    assert readiness(client)[0] == 200  # waiting to retry is not late


def test_not_ready_when_the_broker_does_not_answer(client, settings, tmp_path):
    beat_sent()
    if settings.REDIS_URL:
        settings.REDIS_URL = CLOSED_PORT_URL
        expected = "Redis(db=0, host='127.0.0.1', port=1)"
    else:
        (tmp_path / "file").write_text("not a folder")
        settings.BROKER_DIR = tmp_path / "file" / "broker"
        expected = "EmbeddedBroker()"
    status, report = readiness(client)
    assert status == 503 and list(failing(report)) == [expected]


PROBE_WITHOUT_DATABASE = """
import django, json
django.setup()
from django.test import Client
client = Client()
ready = client.get("/readyz", HTTP_ACCEPT="application/json")
alive = client.get("/healthz").status_code
scraped = client.get("/metrics")
up = [line for line in scraped.content.decode().splitlines() if line.startswith("svc_metrics_coll")]
print(json.dumps([alive, ready.status_code, json.loads(ready.content), scraped.status_code, up]))
"""


@pytest.mark.postgres
def test_not_ready_when_the_database_does_not_answer_but_alive():
    """A process whose PostgreSQL is a closed port: alive, not ready, and says why; /metrics
    still answers, each database collector reported down."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:1/nothing",
        "DATABASE_POOL": "false",
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE_WITHOUT_DATABASE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    healthz, readyz, report, metrics, collectors = json.loads(result.stdout.splitlines()[-1])
    assert (healthz, readyz, metrics) == (200, 503, 200)
    assert collectors == [
        'svc_metrics_collector_up{collector="webhook_backlog"} 0.0',
        'svc_metrics_collector_up{collector="beat_task_runs"} 0.0',
    ]
    assert set(failing(report)) == {
        "Database(alias='default')",
        "Migrations()",
        "Beat()",
        "Webhooks()",
    }


def test_probes_are_not_rate_limited(client, settings):
    settings.API_RATE_LIMITS = {
        "test": {"rate": 0.1, "burst": 1},
        "live": {"rate": 0.1, "burst": 1},
    }
    beat_sent()
    assert {client.get(path).status_code for path in ["/healthz", "/readyz"] * 10} == {200}


def test_not_ready_while_draining(client):
    beat_sent()
    draining.DRAINING.set()
    try:
        status, report = readiness(client)
    finally:
        draining.DRAINING.clear()
    assert status == 503
    assert failing(report) == {
        "Draining()": "Unavailable: shutting down: finishing the requests in flight"
    }


def test_a_metrics_directory_that_cannot_be_made_refuses_to_start(tmp_path):
    (tmp_path / "file").write_text("")
    result = import_settings(DEBUG="true", PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "file" / "m"))
    assert result.returncode != 0
    assert "PROMETHEUS_MULTIPROC_DIR" in result.stderr and "cannot be made" in result.stderr
