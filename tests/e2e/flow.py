"""A merchant's card payment over real HTTP, as the end-to-end tests drive it: register a webhook
endpoint, tokenise a test card with the publishable key, pay with the secret key, and read the
signed events a real HTTPS receiver got."""

import json
import uuid

import requests
import stripe


def bearer(secret: str) -> dict:
    return {"Authorization": f"Bearer {secret}"}


def register_endpoint(api: str, secret_key: str, url: str) -> str:
    """Subscribes `url` to every payment event; returns the endpoint's signing secret."""
    endpoint = requests.post(
        f"{api}/webhook-endpoints",
        headers=bearer(secret_key),
        json={"url": url, "enabled_events": ["payment.*"]},
        timeout=10,
    )
    assert endpoint.status_code == 201, endpoint.text
    return endpoint.json()["secret"]


def pay_with_test_card(api: str, secret_key: str, publishable_key: str):
    """Tokenises 4242... and pays 25.99 EUR with it; returns (payment request's headers and
    body, the 201 response) so a caller may replay it."""
    (headers, pay), created = pay_with_card(api, secret_key, publishable_key, "4242424242424242")
    payment = created.json()
    assert (payment["status"], payment["amount_captured"]) == ("captured", 2599)
    return (headers, pay), created


def pay_with_card(api: str, secret_key: str, publishable_key: str, number: str):
    """Tokenises `number` and pays 25.99 EUR with it: (headers and body, the 201 response)."""
    token = requests.post(
        f"{api}/sandbox/tokens",
        headers=bearer(publishable_key),
        json={"number": number, "exp_month": 12, "exp_year": 2040, "cvc": "123"},
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
    return (headers, pay), created


def verified_events(receiver, webhook_secret: str) -> dict:
    """Every request the receiver got, its signature verified: {event type: event body}."""
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
    return delivered
