"""The response shapes the OpenAPI description declares are what the API really answers: for
each resource, real responses validate against the documented schema of their operation and
status, carry every required field and no undocumented one, and the documented headers."""

from pathlib import Path

import pytest
import yaml
from django.conf import settings
from jsonschema import Draft202012Validator

from tests.payments.support import CHALLENGE, GENERIC_DECLINE, created, payment_body, tokenize

SCHEMA = yaml.safe_load((Path(settings.BASE_DIR) / "docs" / "openapi.yaml").read_text())
COMPONENTS = SCHEMA["components"]
ENDPOINT_URL = "https://93.184.215.14/hooks"


def resolve(node: dict) -> dict:
    while "$ref" in node or len(node.get("allOf", ())) == 1:  # allOf: a $ref with a description
        node = node["allOf"][0] if "allOf" in node else node
        node = COMPONENTS["schemas"][node["$ref"].rsplit("/", 1)[-1]] if "$ref" in node else node
    return node


def matches(node: dict, value) -> bool:
    return Draft202012Validator({**node, "components": COMPONENTS}).is_valid(value)


def assert_exact_fields(node: dict, value, where: str) -> None:
    """Every required field present and no field the schema does not name, at every level
    the schema describes (free-form objects such as `metadata` are not walked)."""
    node = resolve(node)
    if value is None:
        return
    for options in (node.get("oneOf"), node.get("anyOf")):
        # The option the value is (an event: the one of its type family).
        for option in options or ():
            if resolve(option).get("type") != "null" and matches(option, value):
                assert_exact_fields(option, value, where)
    if "properties" in node and isinstance(value, dict):
        properties = node["properties"]
        assert set(value) <= set(properties), (
            f"{where}: undocumented {set(value) - set(properties)}"
        )
        missing = set(node.get("required", ())) - set(value)
        assert not missing, f"{where}: documented as required but absent: {missing}"
        for name, item in value.items():
            assert_exact_fields(properties[name], item, f"{where}.{name}")
    elif "items" in node and isinstance(value, list):
        for index, item in enumerate(value):
            assert_exact_fields(node["items"], item, f"{where}[{index}]")


def assert_documented(response, method: str, path: str) -> dict:
    """The response's status is documented for the operation, its body matches that status's
    schema exactly, and it carries the response headers documented as required."""
    operation = SCHEMA["paths"][path][method]
    status = str(response.status_code)
    assert status in operation["responses"], f"{method} {path}: {status} is not documented"
    documented = operation["responses"][status]
    body_schema = documented["content"]["application/json"]["schema"]
    body = response.json()
    Draft202012Validator({**body_schema, "components": COMPONENTS}).validate(body)
    assert_exact_fields(body_schema, body, f"{method} {path} {status}")
    for name, header in documented.get("headers", {}).items():
        if header.get("required"):
            assert response.has_header(name), f"{method} {path} {status}: no {name} header"
    return body


@pytest.fixture
def payment(api) -> dict:
    return created(api)


def test_token(api):
    body = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2099, "cvc": "123"}
    response = api.post("/v1/sandbox/tokens", body, format="json")
    assert_documented(response, "post", "/v1/sandbox/tokens")


def test_payments_in_each_shape(api, payment):
    challenged = api.post("/v1/payments", payment_body(tokenize(api, CHALLENGE)), format="json")
    assert "next_action" in assert_documented(challenged, "post", "/v1/payments")
    manual = api.post(
        "/v1/payments", payment_body(tokenize(api), capture_method="manual"), format="json"
    )
    manual_id = assert_documented(manual, "post", "/v1/payments")["id"]
    captured = api.post(f"/v1/payments/{manual_id}/captures", {"amount": 400}, format="json")
    assert_documented(captured, "post", "/v1/payments/{payment_id}/captures")
    path = "/v1/payments/{payment_id}"
    assert_documented(api.get(f"/v1/payments/{payment['id']}"), "get", path)
    listed = assert_documented(api.get("/v1/payments", {"limit": 2}), "get", "/v1/payments")
    assert listed["has_more"] is True  # three payments, pages of two: a cursor is documented


def test_a_cancel_and_a_decline(api):
    manual = created(api, capture_method="manual")
    canceled = api.post(f"/v1/payments/{manual['id']}/cancel", format="json")
    assert_documented(canceled, "post", "/v1/payments/{payment_id}/cancel")
    declined = api.post("/v1/payments", payment_body(tokenize(api, GENERIC_DECLINE)), format="json")
    assert "decline_code" in assert_documented(declined, "post", "/v1/payments")["error"]


def test_refund(api, payment):
    refunded = api.post(f"/v1/payments/{payment['id']}/refunds", {"amount": 100}, format="json")
    refund = assert_documented(refunded, "post", "/v1/payments/{payment_id}/refunds")
    assert_documented(api.get(f"/v1/refunds/{refund['id']}"), "get", "/v1/refunds/{refund_id}")


def test_webhook_endpoint(api):
    response = api.post("/v1/webhook-endpoints", {"url": ENDPOINT_URL}, format="json")
    endpoint = assert_documented(response, "post", "/v1/webhook-endpoints")
    path = "/v1/webhook-endpoints/{endpoint_id}"
    one = f"/v1/webhook-endpoints/{endpoint['id']}"
    assert_documented(api.get(one), "get", path)
    assert_documented(api.get("/v1/webhook-endpoints"), "get", "/v1/webhook-endpoints")
    rolled = api.post(f"{one}/roll-secret", format="json")
    assert_documented(rolled, "post", path + "/roll-secret")
    assert_documented(api.delete(one), "delete", path)


def test_events(api, payment):
    listed = assert_documented(api.get("/v1/events"), "get", "/v1/events")
    assert listed["data"], "the payment emitted events"
    event_id = listed["data"][0]["id"]
    assert_documented(api.get(f"/v1/events/{event_id}"), "get", "/v1/events/{event_id}")


def test_test_cards(api):
    listed = api.get("/v1/sandbox/test-cards")
    assert_documented(listed, "get", "/v1/sandbox/test-cards")


def test_simulated_webhook_refusals_are_documented(api):
    """Found by the fuzzer (tests/e2e/test_fuzz.py): the 422 with no subscribed endpoint
    and the 404 for an unknown resource were answered but not documented."""
    path = "/v1/sandbox/simulate-webhook"
    unsubscribed = api.post(path, {"type": "dispute.won"}, format="json")
    assert unsubscribed.status_code == 422
    assert_documented(unsubscribed, "post", path)
    unknown = {"type": "payment.captured", "resource": "pay_00000000000000000000000000"}
    assert_documented(api.post(path, unknown, format="json"), "post", path)


def test_errors(api, anonymous_api):
    assert_documented(anonymous_api.get("/v1/payments"), "get", "/v1/payments")
    missing = api.get("/v1/payments/pay_00000000000000000000000000")
    assert_documented(missing, "get", "/v1/payments/{payment_id}")
    invalid = api.post("/v1/payments", {"amount": "ten"}, format="json")
    assert_documented(invalid, "post", "/v1/payments")


def test_events_of_each_family_are_their_oneof_member(api, payment):
    """A payment event's `data.object` is a Payment and a refund event's a Refund (the oneOf
    by type family): each validates against exactly its member, fields checked exactly."""
    refund = api.post(f"/v1/payments/{payment['id']}/refunds", {"amount": 100}, format="json")
    assert refund.status_code == 201, refund.content
    listed = assert_documented(api.get("/v1/events"), "get", "/v1/events")
    families = {event["type"].split(".")[0]: event for event in listed["data"]}
    assert families["payment"]["data"]["object"]["object"] == "payment"
    assert families["refund"]["data"]["object"]["object"] == "refund"
    payment_event = {"$ref": "#/components/schemas/PaymentEvent"}
    refund_event = {"$ref": "#/components/schemas/RefundEvent"}
    assert matches(payment_event, families["payment"]) and not matches(
        refund_event, families["payment"]
    )
    assert matches(refund_event, families["refund"]) and not matches(
        payment_event, families["refund"]
    )


def test_a_sandbox_5xx_is_the_documented_envelope(api):
    """The sandbox answers a 5xx on purpose (`_svc_test_http_error`): documented, in the
    envelope, so a client reads its `api_error` and retries with the same key."""
    body = payment_body(tokenize(api), metadata={"_svc_test_http_error": 503})
    response = api.post("/v1/payments", body, format="json")
    assert response.status_code == 503
    assert assert_documented(response, "post", "/v1/payments")["error"]["type"] == "api_error"
