"""Spec "Common conventions" and "Errors > Envelope" on every kind of response."""

import json
import re

import pytest

pytestmark = pytest.mark.urls("tests.support.urls")

REQUEST_ID = r"^req_[0-9A-HJKMNP-TV-Z]{26}$"


def error_of(response, status, type_, code):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["X-Request-Id"]
    body = response.json()["error"]
    assert (body["type"], body["code"]) == (type_, code)
    assert body["request_id"] == response["X-Request-Id"]
    assert isinstance(body["message"], str) and body["message"]
    return body


def test_success_has_request_id_charset_and_version(api):
    response = api.post("/v1/test/echo", {"amount": 100, "currency": "EUR"}, format="json")
    assert response.status_code == 201
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Service-Version"] == "2026-08-19"

    assert re.match(REQUEST_ID, response["X-Request-Id"])


def test_request_ids_differ(api):
    assert api.get("/v1/test/keys")["X-Request-Id"] != api.get("/v1/test/keys")["X-Request-Id"]


@pytest.mark.parametrize(
    "path",
    [
        "/v1/customers",
        "/v1/customers/cus_01J000000000000000000000",
        "/v1/payment-methods/pm_1",
        "/v1/payouts",
        "/v1/disputes",
        "/v1/payment-links",
        "/v1/refunds",
    ],
)
def test_reserved_paths_are_404_in_the_envelope(api, path):
    error_of(api.get(path), 404, "not_found_error", "unrecognized_request_url")


def test_unknown_path_is_404_envelope_even_without_a_key(anonymous_api, db):
    error_of(anonymous_api.get("/nowhere"), 404, "not_found_error", "unrecognized_request_url")


def test_wrong_method_is_404_unrecognized_url(api):
    body = error_of(api.delete("/v1/test/keys"), 404, "not_found_error", "unrecognized_request_url")
    assert "DELETE" in body["message"]


def test_unhandled_exception_is_500_envelope_without_stack_trace(api, settings):
    settings.DEBUG = True  # even in DEBUG, a merchant never sees a stack trace
    api.raise_request_exception = False
    response = api.get("/v1/test/boom")
    body = error_of(response, 500, "api_error", "internal_error")
    assert "secret inside" not in response.content.decode()
    assert "Traceback" not in response.content.decode()
    assert body["param"] is None


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b"{'amount': 1}",
        b"[1,",
        b"NaN",
        b'{"amount": NaN}',
        '{"a": "\xe9"}'.encode("latin-1"),
        # Unpaired surrogate escapes decode to strings with no UTF-8 form (I-JSON forbids them).
        b'{"note": "\\ud800"}',
        b'{"\\udfff": 1}',
    ],
)
def test_invalid_json_is_400_invalid_json(api, raw):
    response = api.post("/v1/test/echo", raw, content_type="application/json")
    error_of(response, 400, "validation_error", "invalid_json")


def test_json_is_read_whatever_the_content_type(api):
    body = json.dumps({"amount": 100, "currency": "usd"})
    response = api.post("/v1/test/echo", body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 201


def test_form_body_is_invalid_json(api):
    response = api.post(
        "/v1/test/echo", "amount=100&currency=usd", content_type="application/x-www-form-urlencoded"
    )
    error_of(response, 400, "validation_error", "invalid_json")


@pytest.mark.parametrize("amount", [10.0, 10.5, "100", True, None, 0, -5, 2**53, 2**60])
def test_bad_amounts_are_refused_with_param(api, amount):
    response = api.post("/v1/test/echo", {"amount": amount, "currency": "eur"}, format="json")
    body = error_of(response, 400, "validation_error", "invalid_parameter")
    assert body["param"] == "amount"


def test_largest_amount_below_2_pow_53_is_accepted(api):
    response = api.post("/v1/test/echo", {"amount": 2**53 - 1, "currency": "eur"}, format="json")
    assert response.status_code == 201
    assert response.json()["data"]["amount"] == 2**53 - 1


def test_missing_parameter_names_it(api):
    body = error_of(
        api.post("/v1/test/echo", {"currency": "eur"}, format="json"),
        400,
        "validation_error",
        "invalid_parameter",
    )
    assert body["param"] == "amount"


def test_uppercase_currency_is_normalised(api):
    response = api.post("/v1/test/echo", {"amount": 1, "currency": "JPY"}, format="json")
    assert response.json()["data"]["currency"] == "jpy"


@pytest.mark.parametrize("currency", ["xyz", "eu", "", 978, "usd "[:2]])
def test_unsupported_currency_is_400_naming_it(api, currency):
    body = error_of(
        api.post("/v1/test/echo", {"amount": 1, "currency": currency}, format="json"),
        400,
        "validation_error",
        "invalid_parameter",
    )
    assert body["param"] == "currency"


def test_nested_errors_name_a_dotted_param(api):
    response = api.post(
        "/v1/test/echo",
        {"amount": 1, "currency": "eur", "metadata": {"note": {"nested": 1}}},
        format="json",
    )
    body = error_of(response, 400, "validation_error", "invalid_parameter")
    assert body["param"] == "metadata.note"


def test_non_object_body_is_invalid_parameter(api):
    response = api.post("/v1/test/echo", b"[1, 2]", content_type="application/json")
    error_of(response, 400, "validation_error", "invalid_parameter")


def test_timestamps_are_rfc3339_seconds_z(api, new_merchant):
    item = api.get("/v1/test/keys").json()["data"][0]

    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", item["created"])


@pytest.mark.parametrize(
    "header, expected",
    [
        ("2026-08-19", "2026-08-19"),
        ("1999-01-01", "2026-08-19"),
        ("not-a-date", "2026-08-19"),
    ],
)
def test_service_version_header_overrides_or_falls_back(api, header, expected):
    response = api.post(
        "/v1/test/echo",
        {"amount": 1, "currency": "eur"},
        format="json",
        HTTP_SERVICE_VERSION=header,
    )
    assert response.status_code == 201
    assert response.json()["api_version"] == expected
    assert response["Service-Version"] == expected


def test_version_pinned_on_key_is_used_when_supported(api, new_merchant, settings):
    settings.SUPPORTED_API_VERSIONS = ("2026-08-19", "2027-01-01")
    key = new_merchant.keys["test"]["secret"].api_key
    key.api_version = "2027-01-01"
    key.save()
    response = api.post("/v1/test/echo", {"amount": 1, "currency": "eur"}, format="json")
    assert response.json()["api_version"] == "2027-01-01"
    overridden = api.post(
        "/v1/test/echo",
        {"amount": 1, "currency": "eur"},
        format="json",
        HTTP_SERVICE_VERSION="2026-08-19",
    )
    assert overridden.json()["api_version"] == "2026-08-19"


def test_expand_is_accepted_and_ignored(api):
    plain = api.get("/v1/test/keys").json()
    expanded = api.get("/v1/test/keys", {"expand[]": "data.merchant"}).json()
    assert plain == expanded


def test_a_paired_surrogate_escape_is_ordinary_text(api):
    response = api.post(
        "/v1/test/echo",
        b'{"amount": 1, "currency": "eur", "note": "\\ud83d\\ude00"}',
        content_type="application/json",
    )
    assert response.status_code == 201, response.content


def test_an_error_naming_an_unpaired_surrogate_key_still_renders(api):
    # The guard runs before parsing, so its `param` may carry such a key: the envelope must
    # still be sent (escaped), never a 500.
    raw = b'{"\\ud800": {"cvc": "123"}}'
    response = api.post("/v1/test/accept", raw, content_type="application/json")
    body = error_of(response, 400, "validation_error", "raw_card_data_not_allowed")
    assert body["param"] == "\ud800.cvc"


@pytest.mark.parametrize("accept", ["application/xml", "text/html", "*/*", "application/json"])
def test_every_answer_is_json_whatever_accept_asks_for(api, accept):
    """DRF's negotiation refused these with a 406 it could not render: a 500."""
    response = api.post(
        "/v1/test/echo", {"amount": 100, "currency": "EUR"}, format="json", HTTP_ACCEPT=accept
    )
    assert response.status_code == 201, response.content
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response.json()["data"]["amount"] == 100


def test_an_error_is_json_whatever_accept_asks_for(anonymous_api, db):
    error_of(
        anonymous_api.get("/v1/test/keys", HTTP_ACCEPT="application/xml"),
        401,
        "authentication_error",
        "api_key_missing",
    )
