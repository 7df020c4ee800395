"""The `webhooks` section of the OpenAPI description (docs/openapi.md) is what a receiver really
gets: a delivery's body matches the documented event envelope exactly, and every documented
header is there and matches its schema."""

import json

import pytest
from jsonschema import Draft202012Validator

from tests.api.test_openapi_shapes import COMPONENTS, SCHEMA, assert_exact_fields

pytestmark = pytest.mark.django_db


def validate(schema: dict, value) -> None:
    Draft202012Validator({**schema, "components": COMPONENTS}).validate(value)


def test_a_delivery_is_what_the_webhook_section_documents(api, receiver, endpoint_for):
    endpoint_for(receiver)
    response = api.post("/v1/sandbox/simulate-webhook", {"type": "payment.captured"}, format="json")
    assert response.status_code == 201, response.content
    (request,) = receiver.requests
    operation = SCHEMA["webhooks"]["event"]["post"]
    body_schema = operation["requestBody"]["content"]["application/json"]["schema"]
    body = json.loads(request.body)
    validate(body_schema, body)
    assert_exact_fields(body_schema, body, "webhook body")
    headers = [p for p in operation["parameters"] if p["in"] == "header"]
    assert {h["name"] for h in headers} >= {"Service-Signature", "Idempotency-Key"}
    for header in headers:
        assert header["name"] in request.headers, f"no {header['name']} header"
        validate(header["schema"], request.headers[header["name"]])
