"""Debian's real Prometheus scrapes a running service (granian web, a `webhooks` Celery worker
and beat, sharing one metrics directory as a node's processes do) and the series are read back
with PromQL: payments by status and decline code, the authorisation rate, requests by route,
webhook attempts made by the worker process, beat's sends. /readyz turns 200 once beat has
sent its first task."""

import uuid

import pytest
import requests

from accounts.services import merchant_create
from tests.e2e.flow import bearer, pay_with_test_card, register_endpoint
from tests.e2e.monitoring import (
    celery_beat,
    eventually,
    prometheus,
    prometheus_or_skip,
    promql,
    scalar,
)
from tests.e2e.processes import celery_worker, web_server
from tests.observability.test_dashboard import dashboard_queries

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
TOKEN = "metrics-token-e2e"


def declined_payment(api: str, secret_key: str, publishable_key: str) -> None:
    token = requests.post(
        f"{api}/sandbox/tokens",
        headers=bearer(publishable_key),
        json={"number": "4000000000009995", "exp_month": 12, "exp_year": 2040, "cvc": "123"},
        timeout=10,
    ).json()["id"]
    body = {"amount": 500, "currency": "EUR", "reference": "order-2"}
    body["payment_method"] = {"type": "card", "token": token}
    headers = {**bearer(secret_key), "Idempotency-Key": str(uuid.uuid4())}
    declined = requests.post(f"{api}/payments", headers=headers, json=body, timeout=10)
    assert declined.status_code == 402, declined.text


def test_prometheus_scrapes_the_service_and_promql_reads_it_back(receiver, ca_bundle, tmp_path):
    prometheus_or_skip()
    keys = merchant_create(name="Observed", email="owner@observed.test").keys["test"]
    secret_key, publishable_key = keys["secret"].secret, keys["publishable"].secret
    (tmp_path / "metrics").mkdir()
    node = {
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
        "METRICS_TOKEN": TOKEN,
        "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        "WEBHOOK_CA_BUNDLE": ca_bundle,
    }
    with (
        web_server(**node) as base,
        celery_worker("webhooks", **node),
        celery_beat(tmp_path, **node),
        prometheus(base.removeprefix("http://"), TOKEN, tmp_path) as origin,
    ):
        ready = eventually(lambda: requests.get(f"{base}/readyz", timeout=10).status_code == 200)
        assert ready, requests.get(f"{base}/readyz?format=json", timeout=10).text
        api = f"{base}/v1"
        register_endpoint(api, secret_key, receiver.url())
        pay_with_test_card(api, secret_key, publishable_key)
        declined_payment(api, secret_key, publishable_key)

        def reads(query: str, expected: float) -> bool:
            return eventually(lambda: scalar(origin, query) == expected)

        assert reads('up{job="svc"}', 1)
        assert reads('sum(svc_payments_total{mode="test", status="captured"})', 1)
        assert reads(
            'sum(svc_payments_total{status="declined", decline_code="insufficient_funds"})', 1
        )
        rate = (
            'sum(svc_payment_authorizations_total{outcome="approved"})'
            ' / sum(svc_payment_authorizations_total{outcome=~"approved|declined|failed"})'
        )
        assert reads(rate, 0.5)
        created = '{route="v1/payments", method="POST", status="201", mode="test"}'
        assert reads(f"sum(svc_http_requests_total{created})", 1)
        # created by the worker process, summed by the web's /metrics: 4 events delivered
        # (created and captured; created and declined)
        assert reads('sum(svc_webhook_attempts_total{outcome="delivered"})', 4)
        assert reads("svc_webhook_backlog", 0)
        sent = 'svc_beat_task_last_sent_timestamp_seconds{task="webhooks.tasks.deliver_due"}'
        assert eventually(lambda: (scalar(origin, f"time() - {sent}") or 1e9) < 60)
        p99 = (
            "histogram_quantile(0.99, sum by (le) "
            '(svc_http_request_duration_seconds_bucket{route="v1/payments"}))'
        )
        assert 0 < scalar(origin, p99) <= 30
        for query in dashboard_queries():  # every panel's query is PromQL Prometheus runs
            promql(origin, query.replace("$__rate_interval", "1m"))
