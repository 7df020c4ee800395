"""Helpers shared by the payments and sandbox tests: tokens and payments made over HTTP."""

from events.models import Event

APPROVED = "4242424242424242"
MASTERCARD = "5555555555554444"
CHALLENGE = "4000000000003220"
CHALLENGE_DECLINE = "4000008400001629"
ASYNC = "4000000000000077"
INSUFFICIENT_FUNDS = "4000000000009995"
GENERIC_DECLINE = "4000000000000002"
LOST_CARD = "4000000000009987"
PROCESSING_ERROR = "4000000000000119"


def tokenize(client, number: str = APPROVED, **extra) -> str:
    body = {"number": number, "exp_month": 12, "exp_year": 2099, "cvc": "123", **extra}
    response = client.post("/v1/sandbox/tokens", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def payment_body(token: str | None = None, **fields) -> dict:
    method = {"type": fields.pop("method_type", "card")}
    if token:
        method["token"] = token
    return {
        "amount": 1000,
        "currency": "eur",
        "reference": "order-1",
        "payment_method": method,
        **fields,
    }


def create(api, number: str | None = APPROVED, **fields):
    """POST /v1/payments with a fresh token for `number` (None: the two-step flow)."""
    token = tokenize(api, number, type=fields.get("method_type", "card")) if number else None
    return api.post("/v1/payments", payment_body(token, **fields), format="json")


def created(api, number: str | None = APPROVED, **fields) -> dict:
    response = create(api, number, **fields)
    assert response.status_code == 201, response.content
    return response.json()


def confirm(api, payment_id: str, number: str = APPROVED, method_type: str = "card"):
    token = tokenize(api, number, type=method_type)
    body = {"payment_method": {"type": method_type, "token": token}}
    return api.post(f"/v1/payments/{payment_id}/confirm", body, format="json")


def error_of(response, status: int, type_: str, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()["error"]
    assert (body["type"], body["code"]) == (type_, code), body
    return body


def payment_id_in(error: dict) -> str:
    """The declined or failed payment's id: a field of the error (issue 38), which the
    human-readable message also names."""
    assert error["payment"] in error["message"]
    return error["payment"]


def event_types(payment_id: str) -> list[str]:
    return list(
        Event.objects.filter(resource_id=payment_id).order_by("id").values_list("type", flat=True)
    )
