"""Bodies sent with `Transfer-Encoding: chunked` (no Content-Length) through the real web
server: read, guarded and size-limited like any other (docs/request-safety.md "Chunked
bodies"). Django reads a body without Content-Length as empty."""

import json

import pytest
import requests

from accounts.services import merchant_create
from tests.e2e.processes import web_server
from tests.payments.support import payment_body

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def chunks(body: bytes, size: int = 7):
    """A generator: requests sends it chunked, with no Content-Length."""
    return (body[start : start + size] for start in range(0, len(body), size))


@pytest.fixture
def send(settings):
    secret = merchant_create(name="E2E", email="e2e@example.test").keys["test"]["secret"].secret

    def send(base_url, method, path, body: bytes):
        response = requests.request(
            method,
            base_url + path,
            data=chunks(body),
            headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
            timeout=20,
        )
        assert response.request.headers.get("Transfer-Encoding") == "chunked"
        assert "Content-Length" not in response.request.headers
        return response

    return send


def error_code(response, status: int) -> str:
    assert response.status_code == status, response.text
    return response.json()["error"]["code"]


def test_chunked_bodies_are_read_guarded_and_limited(send):
    with web_server(API_MAX_BODY_BYTES="4096") as base:
        payment = send(base, "POST", "/v1/payments", json.dumps(payment_body()).encode())
        assert payment.status_code == 201, payment.text
        assert payment.json()["amount"] == 1000

        card = json.dumps({**payment_body(), "description": "4242 4242 4242 4242"}).encode()
        assert error_code(send(base, "POST", "/v1/payments", card), 400) == (
            "raw_card_data_not_allowed"
        )

        oversized = json.dumps({**payment_body(), "description": "x" * 5000}).encode()
        assert error_code(send(base, "POST", "/v1/payments", oversized), 400) == (
            "request_too_large"
        )

        assert error_code(send(base, "GET", "/v1/payments", b"{}"), 400) == "body_not_allowed"
        assert send(base, "GET", "/v1/payments", b"").status_code == 200
