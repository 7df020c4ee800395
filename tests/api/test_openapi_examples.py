"""The examples in the OpenAPI description (docs/openapi.md "Examples") are real exchanges: each
request example, sent to the API in test mode (its ids replaced by tokens of the same test cards
and a payment made for the purpose), gets the status of the response example of the same name
and an answer of the same shape (the same keys, at every depth, with values of the same JSON
types)."""

import json
import re
from pathlib import Path

import pytest
import yaml
from django.conf import settings

from payments.openapi import EXAMPLE_TOKEN_CARDS, PAYMENT_ID
from tests.payments.support import created, tokenize

COMMITTED = Path(settings.BASE_DIR) / "docs" / "openapi.yaml"
# The examples' host, and an address the webhook URL guard takes without a DNS lookup.
HOST_STAND_INS = {"shop.example.com": "93.184.215.14"}


def examples_of_operations() -> list[tuple]:
    """(method, path, request example, response status, response example) of every response
    example, with the operation's request example of the same name."""
    document = yaml.safe_load(COMMITTED.read_text())
    found = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
            requests = body.get("examples", {})
            for status, response in operation.get("responses", {}).items():
                answers = response.get("content", {}).get("application/json", {})
                for name, answer in answers.get("examples", {}).items():
                    request = requests[name]["value"]
                    found.append((method, path, request, int(status), answer["value"]))
    return found


EXAMPLES = examples_of_operations()


def shape(value):
    """The value's keys at every depth and the JSON types of its values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


def with_stand_ins(value, stand_ins: dict[str, str]):
    """`value` with each example id (or host) replaced by its stand-in."""
    text = json.dumps(value)
    for example, stand_in in stand_ins.items():
        text = text.replace(example, stand_in)
    return json.loads(text)


def test_the_main_operations_have_examples():
    documented = {(method, path, status) for method, path, _, status, _ in EXAMPLES}
    assert {
        ("post", "/v1/sandbox/tokens", 201),
        ("post", "/v1/payments", 201),
        ("post", "/v1/payments", 402),
        ("post", "/v1/payments/{payment_id}/refunds", 201),
        ("post", "/v1/webhook-endpoints", 201),
    } <= documented


@pytest.mark.parametrize(
    ("method", "path", "request_example", "status", "response_example"),
    EXAMPLES,
    ids=[f"{method} {path} {status}" for method, path, _, status, _ in EXAMPLES],
)
def test_an_example_request_gets_an_answer_shaped_like_the_example(
    api, method, path, request_example, status, response_example
):
    stand_ins = {token: tokenize(api, card) for token, card in EXAMPLE_TOKEN_CARDS.items()}
    stand_ins[PAYMENT_ID] = created(api)["id"]
    stand_ins.update(HOST_STAND_INS)
    path_parameters = {"payment_id": stand_ins[PAYMENT_ID]}
    real_path = re.sub(r"\{(\w+)\}", lambda parameter: path_parameters[parameter[1]], path)
    body = with_stand_ins(request_example, stand_ins)
    response = getattr(api, method)(real_path, body, format="json")
    assert response.status_code == status, response.content
    assert shape(response.json()) == shape(response_example)
