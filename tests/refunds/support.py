"""Helpers for the refund tests: refunds made over HTTP."""

from tests.payments.support import APPROVED, created

OUTCOME = "_svc_test_refund_outcome"


def refund(api, payment_id: str, **body):
    return api.post(f"/v1/payments/{payment_id}/refunds", body, format="json")


def refunded(api, payment_id: str, **body) -> dict:
    response = refund(api, payment_id, **body)
    assert response.status_code == 201, response.content
    return response.json()


def captured_payment(api, **fields) -> dict:
    payment = created(api, APPROVED, **fields)
    assert payment["status"] == "captured"
    return payment


def payment_of(api, payment_id: str) -> dict:
    return api.get(f"/v1/payments/{payment_id}").json()
