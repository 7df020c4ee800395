"""A merchant's whole integration over real HTTP: the web process (granian), a Celery worker
on the `webhooks` queue, PostgreSQL, Redis and a real HTTPS receiver on loopback.

Register an endpoint, tokenise a test card with the publishable key, pay with the secret key
and an Idempotency-Key, replay it, and receive the signed events the worker delivers; then read
them back through /v1/events. Nothing is mocked and nothing runs in the test process but the
HTTP client and the receiver.
"""

import json
import uuid

import pytest
import requests
import stripe

from accounts.services import merchant_create
from tests.e2e.processes import celery_worker, wait_for, web_server

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def bearer(secret: str) -> dict:
    return {"Authorization": f"Bearer {secret}"}


def test_card_payment_is_delivered_as_signed_webhooks(receiver, ca_bundle):
    keys = merchant_create(name="Full Flow", email="owner@flow.test").keys["test"]
    secret_key, publishable_key = keys["secret"].secret, keys["publishable"].secret
    local_receivers = {"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8", "WEBHOOK_CA_BUNDLE": ca_bundle}
    with web_server(**local_receivers) as base, celery_worker("webhooks", **local_receivers):
        api = f"{base}/v1"
        endpoint = requests.post(
            f"{api}/webhook-endpoints",
            headers=bearer(secret_key),
            json={"url": receiver.url(), "enabled_events": ["payment.*"]},
            timeout=10,
        )
        assert endpoint.status_code == 201, endpoint.text
        webhook_secret = endpoint.json()["secret"]

        token = requests.post(
            f"{api}/sandbox/tokens",
            headers=bearer(publishable_key),
            json={"number": "4242 4242 4242 4242", "exp_month": 12, "exp_year": 2040, "cvc": "123"},
            timeout=10,
        )
        assert token.status_code == 201, token.text

        pay = {
            "amount": 2599,
            "currency": "EUR",
            "reference": "order-1",
            "payment_method": {"type": "card", "token": token.json()["id"]},
        }
        headers = {**bearer(secret_key), "Idempotency-Key": str(uuid.uuid4())}
        created = requests.post(f"{api}/payments", headers=headers, json=pay, timeout=10)
        assert created.status_code == 201, created.text
        payment = created.json()
        assert (payment["status"], payment["amount_captured"]) == ("captured", 2599)

        replay = requests.post(f"{api}/payments", headers=headers, json=pay, timeout=10)
        assert replay.content == created.content
        assert replay.headers["Idempotent-Replayed"] == "true"

        wait_for(lambda: len(receiver.requests) >= 2)
        delivered = {}
        for request in receiver.requests:
            event = stripe.Webhook.construct_event(
                request.body.decode(),
                request.headers["Service-Signature"],
                webhook_secret,
                tolerance=300,
            )
            assert request.headers["Service-Event-Id"] == event["id"]
            delivered[event["type"]] = json.loads(request.body)
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
