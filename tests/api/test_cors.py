"""Publishable keys are used from the browser: their endpoints answer CORS preflights."""

import pytest


@pytest.mark.parametrize(
    "path, method", [("/v1/sandbox/tokens", "POST"), ("/v1/sandbox/test-cards", "GET")]
)
def test_browser_endpoints_answer_a_keyless_preflight(anonymous_api, db, path, method):
    response = anonymous_api.options(
        path, HTTP_ORIGIN="https://shop.example", HTTP_ACCESS_CONTROL_REQUEST_METHOD=method
    )
    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == "*"
    assert method in response["Access-Control-Allow-Methods"]
    assert "Authorization" in response["Access-Control-Allow-Headers"]
    assert response["X-Request-Id"].startswith("req_")


def test_tokenizer_responses_allow_any_origin(publishable_api):
    response = publishable_api.post(
        "/v1/sandbox/tokens",
        {"number": "4242424242424242", "exp_month": 12, "exp_year": 2040, "cvc": "123"},
        format="json",
        HTTP_ORIGIN="https://shop.example",
    )
    assert response.status_code == 201
    assert response["Access-Control-Allow-Origin"] == "*"


def test_server_only_endpoints_have_no_cors(api):
    preflight = api.options("/v1/payments", HTTP_ORIGIN="https://shop.example")
    assert preflight.status_code == 404
    assert preflight.json()["error"]["code"] == "unrecognized_request_url"
    assert "Access-Control-Allow-Origin" not in api.get("/v1/payments")
