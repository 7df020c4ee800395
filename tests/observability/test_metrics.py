"""/metrics through Django's client: the token, and each series moving when what it counts
happens for real (a request, a payment approved and declined, an idempotency conflict, a 429,
webhook attempts delivered and dead-lettered, a periodic task run, beat sending). Counters live
on across tests in this process's metric files, so each test compares before and after. The
counts are taken after commit, so these tests commit (transaction=True)."""

import datetime
import uuid

import pytest
import time_machine
from celery.signals import after_task_publish, beat_init
from django.db import transaction
from django.utils import timezone

from api import metrics as api_metrics
from config import beatruns
from config.models import TaskRun
from events.services import emit
from payments.tasks import purge_unused_tokens
from tests.observability.support import scrape, total, value
from tests.payments.support import APPROVED, INSUFFICIENT_FUNDS, create, payment_body, tokenize
from webhooks.attempts import delivery_run
from webhooks.health import BUCKET
from webhooks.models import Delivery

pytestmark = pytest.mark.django_db(transaction=True)
UNSERVED_HOST = "10.9.8.7:9100"


def test_the_token_when_one_is_set_whatever_the_host(client, settings):
    settings.METRICS_TOKEN = "scrape-token-1"
    assert client.get("/metrics").status_code == 401
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-2")
    assert (wrong.status_code, wrong["WWW-Authenticate"]) == (401, 'Bearer realm="metrics"')
    scrape(client, HTTP_AUTHORIZATION="Bearer scrape-token-1", HTTP_HOST=UNSERVED_HOST)
    settings.METRICS_TOKEN = ""
    scrape(client, HTTP_HOST=UNSERVED_HOST)


def test_requests_by_route_method_status_and_mode(client, api):
    route = {"route": "v1/payments/<str:payment_id>", "method": "GET"}
    before = scrape(client)
    assert api.get("/v1/payments/pay_01J0000000000000000000000A").status_code == 404
    assert client.get("/v1/payments/pay_01J0000000000000000000000B").status_code == 401
    after = scrape(client)
    for status, mode in (("404", "test"), ("401", "none")):
        name, labels = "svc_http_requests_total", {**route, "status": status, "mode": mode}
        assert value(after, name, **labels) - value(before, name, **labels) == 1
    name = "svc_http_request_duration_seconds_count"
    assert value(after, name, **route, mode="test") - value(before, name, **route, mode="test") == 1


def test_payments_by_status_and_decline_code_and_the_connectors_latency(client, api):
    before = scrape(client)
    assert create(api, APPROVED).status_code == 201
    assert create(api, INSUFFICIENT_FUNDS).status_code == 402
    after = scrape(client)

    def moved(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("svc_payments_total", mode="test", status="captured", decline_code="") == 1
    declined = {"mode": "test", "decline_code": "insufficient_funds"}
    assert moved("svc_payments_total", status="declined", **declined) == 1
    assert (
        moved("svc_payment_authorizations_total", outcome="approved", mode="test", decline_code="")
        == 1
    )
    assert moved("svc_payment_authorizations_total", outcome="declined", **declined) == 1
    call = {
        "connector": "SimulatorConnector",
        "operation": "create",
        "mode": "test",
        "result": "ok",
    }
    assert moved("svc_connector_request_duration_seconds_count", **call) == 2


def test_idempotency_conflicts_and_429s_are_counted(client, api, settings):
    key = {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())}
    token = tokenize(api)
    before = scrape(client)
    assert api.post("/v1/payments", payment_body(token), format="json", **key).status_code == 201
    changed = payment_body(token, amount=2000)
    conflict = api.post("/v1/payments", changed, format="json", **key)
    assert conflict.json()["error"]["code"] == "idempotency_key_conflict"
    settings.CACHES = {
        **settings.CACHES,
        "rl": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "obs"},
    }
    settings.API_RATE_LIMIT_CACHE = "rl"
    settings.API_RATE_LIMITS = {
        "test": {"rate": 0.001, "burst": 1},
        "live": {"rate": 1, "burst": 1},
    }
    statuses = [api.get("/v1/payments").status_code for _ in range(3)]
    assert statuses == [200, 429, 429]
    api_metrics.rate_limited("concurrency", "test")  # what a limiter of its own calls
    after = scrape(client)

    def moved(name, **labels):
        return total(after, name, **labels) - total(before, name, **labels)

    assert moved("svc_api_errors_total", code="idempotency_key_conflict", mode="test") == 1
    assert moved("svc_api_errors_total", type="rate_limit_error", code="rate_limit_exceeded") == 2
    assert moved("svc_http_requests_total", route="v1/payments", status="429", mode="test") == 2
    assert moved("svc_rate_limited_total", limit="concurrency", mode="test") == 1


def captured_event(merchant):
    with transaction.atomic():
        return emit(
            merchant=merchant,
            livemode=False,
            type="payment.captured",
            obj={"id": "pay_01J0000000000000000000000A", "object": "payment"},
            previous_attributes=None,
        )


def test_webhook_backlog_attempts_latency_and_dead_letters(
    client, merchant, endpoint_for, receiver
):
    endpoint_for(receiver)
    before = scrape(client)
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        delivered = Delivery.objects.get(event=captured_event(merchant))
        doomed = Delivery.objects.get(event=captured_event(merchant))
        clock.shift(datetime.timedelta(hours=73))  # past the 72 h retry window: one attempt
        waiting = scrape(client)
        assert value(waiting, "svc_webhook_backlog") == value(waiting, "svc_webhook_due") == 2
        assert value(waiting, "svc_webhook_oldest_due_age_seconds") == 73 * 3600
        assert value(waiting, "svc_webhook_last_attempt_age_seconds") == -1  # none made
        receiver.reply.status = 500
        assert delivery_run(doomed.pk).status == "failed"
        receiver.reply.status = 200
        assert delivery_run(delivered.pk).status == "delivered"
        since = value(scrape(client), "svc_webhook_last_attempt_age_seconds")
        assert 0 <= since < BUCKET.total_seconds()  # to the 5-minute slice of the attempts
    after = scrape(client)

    def moved(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("svc_webhook_attempts_total", mode="test", outcome="delivered") == 1
    assert moved("svc_webhook_attempts_total", mode="test", outcome="failed") == 1
    assert moved("svc_webhook_dead_letters_total", mode="test") == 1
    assert moved("svc_webhook_attempt_duration_seconds_count", outcome="failed") == 1
    latency = {"name": "svc_webhook_delivery_latency_seconds_bucket", "mode": "test"}
    assert moved(**latency, le="259200.0") == 0 and moved(**latency, le="+Inf") == 1  # 73 h
    assert value(after, "svc_webhook_backlog") == 0


def test_each_periodic_task_s_last_run_and_beat_s_sends(client):
    task = "payments.tasks.purge_unused_tokens"
    before = scrape(client)
    purge_unused_tokens.apply()  # run here with Celery's signals, as a worker runs it
    run = TaskRun.objects.get(task=task)
    assert run.last_succeeded and run.last_duration_seconds >= 0 and run.last_sent_at is None
    beat_init.send(sender=None)  # this process now records as beat does
    try:
        after_task_publish.send(sender=task, headers={}, body=(), exchange="", routing_key="")
        after_task_publish.send(sender="not.scheduled", headers={}, body=())
    finally:
        beatruns._process["beat"] = False
    assert TaskRun.objects.get(task=task).last_sent_at is not None
    assert not TaskRun.objects.filter(task="not.scheduled").exists()
    after = scrape(client)
    finished = value(after, "svc_beat_task_last_run_timestamp_seconds", task=task)
    assert finished == run.last_finished_at.timestamp()
    assert value(after, "svc_beat_task_last_succeeded", task=task) == 1
    assert value(after, "svc_beat_task_last_sent_timestamp_seconds", task=task) > 0
    duration = {"name": "svc_beat_task_duration_seconds_count", "task": task, "outcome": "ok"}
    assert value(after, **duration) - value(before, **duration) == 1
    assert value(after, "svc_metrics_collector_up", collector="beat_task_runs") == 1
