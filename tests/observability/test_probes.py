"""/healthz and /readyz through Django's client: every check passing, and each one failing for
real (a migration unrecorded, beat silent, a late webhook, Redis on a closed port, PostgreSQL
on a closed port in a process of its own). The checks run in threads with their own database
connections, so these tests commit (transaction=True)."""

import datetime
import json
import os
import re
import subprocess
import sys

import pytest
from django.db import connection, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from config import beatruns, draining, health
from events.services import emit
from tests.e2e.processes import ROOT
from tests.sick import CLOSED_PORT_URL
from tests.test_settings import import_settings
from tests.webhooks.receiver import Receiver
from webhooks import metrics as webhook_metrics
from webhooks import transport
from webhooks.attempts import delivery_run
from webhooks.fanout import events_fan_out
from webhooks.health import BUCKET
from webhooks.models import Attempt, Delivery
from webhooks.services import endpoint_create

pytestmark = pytest.mark.django_db(transaction=True)
DELIVER_DUE = "webhooks.tasks.deliver_due"
UNSERVED_HOST = "10.9.8.7:8000"  # what a load balancer's check may send, if any Host at all


@pytest.fixture(autouse=True)
def patient_redis(settings):
    """These tests are about the other checks; the full report also asks the shared Redis,
    whose 0.5 s connect timeout (REDIS_TIMEOUT) a loaded CI box's stall went past once
    (session 29; session 26's probe test met the same). Time enough here; a closed port
    still fails at once."""
    settings.REDIS_CLIENT_OPTIONS = {"socket_timeout": 5.0, "socket_connect_timeout": 5.0}
    settings.READINESS_CHECK_TIMEOUT = 6.0


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


def tenant_event(merchant, number: int) -> list[str]:
    """A committed event of `merchant`, fanned out: its deliveries' ids."""
    with transaction.atomic():
        event = emit(
            merchant=merchant,
            livemode=False,
            type="payment.captured",
            obj={"id": f"pay_01J00000000000000000000{number:03d}", "object": "payment"},
            previous_attributes=None,
            fan_out=False,
        )
    return events_fan_out([event.id])


def test_one_tenants_failing_and_hanging_endpoints_do_not_make_the_fleet_unready(
    client, settings, clock, receiver, webhook_ca, merchant, other_merchant, monkeypatch
):
    """Issue 35: one test tenant's endpoints that never answer kept its deliveries late and
    /readyz 503 on every node. Workers that attempt them (and deliver another tenant's) are
    up: ready. The same backlog with no attempt for the max age: no worker, 503."""
    monkeypatch.setattr(transport, "TIMEOUT_SECONDS", 0.3)  # each hanging POST ends soon
    max_age = settings.READINESS_WEBHOOK_MAX_AGE
    hanging, erring = Receiver(webhook_ca), Receiver(webhook_ca)
    hanging.reply.hold = True
    erring.reply.status = 500
    try:
        for dead in (hanging, erring):
            endpoint_create(merchant=merchant, livemode=False, url=dead.url())
        endpoint_create(merchant=other_merchant, livemode=False, url=receiver.url())
        late = [d for number in range(3) for d in tenant_event(merchant, number)]
        clock.shift(datetime.timedelta(seconds=max_age + 30))
        beat_sent()
        for delivery_id in late[:2]:  # the workers try the dead endpoints: each attempt fails
            assert delivery_run(delivery_id).status == "failed"
        (healthy,) = tenant_event(other_merchant, 9)
        assert delivery_run(healthy).status == "delivered"
    finally:
        hanging.close()
        erring.close()
    assert {a.error.split(":")[0] for a in Attempt.objects.filter(status="failed")} >= {"timeout"}
    now = timezone.now()
    assert webhook_metrics.oldest_due_age(now) > max_age  # what paged the fleet before

    status, report = readiness(client)

    assert (status, failing(report)) == (200, {})
    clock.shift(datetime.timedelta(seconds=max_age) + BUCKET)  # no attempt since
    beat_sent()
    status, report = readiness(client)
    assert status == 503
    assert failing(report) == {
        "Webhooks()": f"Unavailable: the oldest due webhook delivery is"
        f" {webhook_metrics.oldest_due_age(timezone.now()):.0f} s late"
        f" and no attempt was made for {max_age:.0f} s"
    }


def test_not_ready_when_the_broker_does_not_answer(client, settings, tmp_path):
    beat_sent()
    if settings.REDIS_URL:
        settings.REDIS_URL = CLOSED_PORT_URL
        expected = "Redis()"
    else:
        (tmp_path / "file").write_text("not a folder")
        settings.BROKER_DIR = tmp_path / "file" / "broker"
        expected = "EmbeddedBroker()"
    status, report = readiness(client)
    assert status == 503 and list(failing(report)) == [expected]


@pytest.mark.parametrize("fmt", ["json", "text", "atom", "rss", "openmetrics", "html"])
def test_readyz_never_names_where_redis_or_postgresql_is(
    client, settings, fmt, caplog, monkeypatch
):
    """/readyz is public (issue 35): where the broker and the database are stays in the logs."""
    monkeypatch.setattr(health, "_ready", {})  # so that this probe's change is logged
    settings.REDIS_URL = CLOSED_PORT_URL  # redis://127.0.0.1:1/0: failing, so the error shows
    settings.READINESS_BEAT_MAX_AGE = 0
    # PostgreSQL's port, where there is one (the embedded SQLite has none).
    ports = (
        [str(connection.settings_dict["PORT"] or 5432)] if connection.vendor == "postgresql" else []
    )
    answer = client.get("/readyz", {"format": fmt} if fmt != "html" else {})
    body = answer.content.decode()
    assert "Redis" in body
    for where in ("127.0.0.1", "localhost", "port=", "db="):
        assert where not in body, (where, body)
    for port in ports:  # as a number of its own: a response time may read 0.005432
        assert not re.search(rf"(?<![\w.]){port}(?!\w)", body), (port, body)
    if answer.status_code == 503:  # the feeds answer 200 whatever the checks say
        assert "127.0.0.1" in caplog.text  # the log line of the change says where


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
    # What a load balancer polls (deploy/haproxy.cfg): the node's own checks, no shared Redis
    # whose one slow connect on a loaded box would answer 503 and say nothing about limits.
    probes = ["/healthz", "/readyz?scope=node"] * 10
    assert {client.get(path).status_code for path in probes} == {200}


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
