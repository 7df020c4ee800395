"""A merchant's whole integration over real HTTP: the web process (granian), a Celery worker
on the `webhooks` queue, PostgreSQL, Redis and a real HTTPS receiver on loopback.

Register an endpoint, tokenise a test card with the publishable key, pay with the secret key
and an Idempotency-Key, replay it, and receive the signed events the worker delivers; then read
them back through /v1/events. Nothing is mocked and nothing runs in the test process but the
HTTP client and the receiver.
"""

import pytest
import requests

from accounts.services import merchant_create
from tests.e2e.flow import bearer, pay_with_test_card, register_endpoint, verified_events
from tests.e2e.processes import celery_worker, wait_for, web_server

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_card_payment_is_delivered_as_signed_webhooks(receiver, ca_bundle):
    keys = merchant_create(name="Full Flow", email="owner@flow.test").keys["test"]
    secret_key, publishable_key = keys["secret"].secret, keys["publishable"].secret
    local_receivers = {"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8", "WEBHOOK_CA_BUNDLE": ca_bundle}
    with (
        web_server(**local_receivers) as base,
        celery_worker("webhooks", "webhooks-test", **local_receivers),
    ):
        api = f"{base}/v1"
        webhook_secret = register_endpoint(api, secret_key, receiver.url())
        (headers, pay), created = pay_with_test_card(api, secret_key, publishable_key)
        payment = created.json()

        replay = requests.post(f"{api}/payments", headers=headers, json=pay, timeout=10)
        assert replay.content == created.content
        assert replay.headers["Idempotent-Replayed"] == "true"

        wait_for(lambda: len(receiver.requests) >= 2)
        delivered = verified_events(receiver, webhook_secret)
        assert set(delivered) == {"payment.created", "payment.captured"}
        assert (
            delivered["payment.captured"]["data"]["object"]
            == requests.get(
                f"{api}/payments/{payment['id']}", headers=bearer(secret_key), timeout=10
            ).json()
        )

        listed = requests.get(
            f"{api}/events",
            headers=bearer(secret_key),
            params={"resource": payment["id"]},
            timeout=10,
        ).json()
        assert {e["type"] for e in listed["data"]} == set(delivered)
        captured_id = delivered["payment.captured"]["id"]

        def delivered_attempt_recorded():
            detail = requests.get(
                f"{api}/events/{captured_id}", headers=bearer(secret_key), timeout=10
            ).json()
            return [a["status"] for a in detail["attempts"]] == ["delivered"]

        wait_for(delivered_attempt_recorded)
