"""Spec "Common rules" 2: the raw-card guard on every endpoint but the tokenizer, and the
request-size limit (docs/request-safety.md)."""

import json

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from api.cardnumbers import luhn_valid
from api.ids import CROCKFORD
from api.parsers import MAX_BODY_CONTAINERS
from tests.api.test_conventions import error_of

pytestmark = pytest.mark.urls("tests.support.urls")

VISA = "4242424242424242"
TEST_CARDS = ["4242424242424242", "5555555555554444", "4000000000003220", "378282246310005"]


def post_raw(client, path, raw: bytes):
    return client.post(path, raw, content_type="application/json")


def refused(response, param):
    body = error_of(response, 400, "validation_error", "raw_card_data_not_allowed")
    assert body["param"] == param
    assert VISA not in response.content.decode()  # the error never echoes the number
    return body


def test_card_number_is_refused_naming_the_field(api):
    response = api.post(
        "/v1/test/echo",
        {"amount": 100, "currency": "eur", "payment_method": {"number": VISA}},
        format="json",
    )
    refused(response, "payment_method.number")


def test_guard_runs_before_schema_validation(api):
    response = api.post("/v1/test/echo", {"metadata": {"note": VISA}}, format="json")  # no amount
    refused(response, "metadata.note")


@pytest.mark.parametrize(
    "separator", ["\n", "\r\n", "\u200b", "\u00ad", "\u2010", "\u2014", "\u2212", "\u2028"]
)
def test_a_card_split_by_the_issue_20_separators_is_refused_not_stored(api, separator):
    note = separator.join(VISA[i : i + 4] for i in range(0, 16, 4))
    body = {"amount": 100, "currency": "eur", "metadata": {"note": note}}
    refused(api.post("/v1/test/echo", body, format="json"), "metadata.note")


def test_guard_runs_before_json_parsing(api):
    refused(post_raw(api, "/v1/test/echo", b'{"number": "' + VISA.encode() + b'",'), None)


def test_security_code_is_refused(api):
    response = api.post("/v1/test/accept", {"card": {"cvc": "123"}}, format="json")
    refused(response, "card.cvc")


def test_ordinary_body_passes(api):
    response = api.post(
        "/v1/test/echo",
        {"amount": 100, "currency": "eur", "metadata": {"order": "4242424242424241"}},
        format="json",
    )
    assert response.status_code == 201, response.content


def test_authentication_comes_before_the_guard(anonymous_api, db):
    response = anonymous_api.post("/v1/test/echo", {"number": VISA}, format="json")
    error_of(response, 401, "authentication_error", "api_key_missing")


def test_the_tokenizer_takes_card_data(api):
    response = api.post(
        "/v1/test/tokenize",
        {"number": VISA, "cvc": "123", "exp_month": 12, "exp_year": 2030},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["last4"] == "4242"


@pytest.mark.parametrize("path", ["/v1/test/accept", "/v1/test/tokenize"])
def test_body_over_the_size_limit_is_400_request_too_large(api, settings, path):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64
    body = json.dumps({"note": "x" * 60}).encode()
    response = post_raw(api, path, body)
    error = error_of(response, 400, "validation_error", "request_too_large")
    assert "64 bytes" in error["message"]


def test_body_at_the_size_limit_passes(api, settings):
    body = json.dumps({"note": "x" * 52}).encode()
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = len(body)
    assert post_raw(api, "/v1/test/accept", body).status_code == 200


def objects_in_a_list(count: int) -> bytes:
    """A JSON object holding `count` objects and arrays in all."""
    return json.dumps({"items": [{"n": index} for index in range(count - 2)]}).encode()


@pytest.mark.parametrize("path", ["/v1/test/accept", "/v1/test/tokenize"])
def test_a_body_of_too_many_objects_and_arrays_is_400_request_too_complex(api, path):
    response = post_raw(api, path, objects_in_a_list(MAX_BODY_CONTAINERS + 1))
    error = error_of(response, 400, "validation_error", "request_too_complex")
    assert error["param"] is None
    assert str(MAX_BODY_CONTAINERS) in error["message"]


def test_a_body_at_the_shape_limit_passes(api):
    response = post_raw(api, "/v1/test/accept", objects_in_a_list(MAX_BODY_CONTAINERS))
    assert response.status_code == 200


def test_brackets_inside_strings_are_not_objects_or_arrays(api):
    body = {"note": "[{" * MAX_BODY_CONTAINERS, "escaped": '\\"[' * MAX_BODY_CONTAINERS}
    assert post_raw(api, "/v1/test/accept", json.dumps(body).encode()).status_code == 200


def test_the_shape_limit_comes_before_the_guard(api):
    """A body too complex to read is refused before anything reads it for card data."""
    raw = json.dumps([VISA] + [[] for _ in range(MAX_BODY_CONTAINERS)]).encode()
    error_of(post_raw(api, "/v1/test/accept", raw), 400, "validation_error", "request_too_complex")


# --- property: card data planted anywhere is found, ordinary data passes ---------------------

KEYS = st.sampled_from(
    ["amount", "currency", "reference", "description", "order", "note", "items", "customer"]
    + ["name", "city", "line1", "tags", "qty", "sku", "id", "metadata", "payment_method"]
)


def _non_luhn(digits: str) -> str:
    return next(digits + check for check in "0123456789" if not luhn_valid(digits + check))


def _luhn(digits: str) -> str:
    return next(digits + check for check in "0123456789" if luhn_valid(digits + check))


ORDINARY = st.one_of(
    st.text(CROCKFORD, min_size=26, max_size=26).map(lambda ulid: f"pay_{ulid}"),
    st.integers(0, 10**12 - 1),  # amounts: anything short of a trillion minor units
    st.from_regex(r"INV-20[0-9]{2}-[0-9]{4}", fullmatch=True),
    st.text("0123456789", min_size=15, max_size=15).map(_non_luhn),  # order numbers
    st.text(st.characters(exclude_categories=("Nd", "Cs")), max_size=30),
    st.sampled_from(["+372 5123 4567", "2026-11-21T05:47:26Z", "eur", "usd"]),
    st.booleans(),
    st.none(),
)
DOCUMENTS = st.dictionaries(
    KEYS,
    st.recursive(
        ORDINARY,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
        max_leaves=12,
    ),
    max_size=5,
)
CARD_NUMBERS = st.sampled_from(TEST_CARDS) | st.integers(13, 19).flatmap(
    lambda length: (
        st.text("0123456789", min_size=length - 1, max_size=length - 1)
        .filter(lambda digits: digits[0] != "0")
        .map(_luhn)
    )
)
PLACEHOLDER = "\x00planted\x00"
WORDS = st.text(st.characters(exclude_categories=("Nd", "Cs")), max_size=10)
PROPERTY = hypothesis_settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def unlimited(settings):
    unlimited = {"rate": 1e6, "burst": 10**6}
    settings.API_RATE_LIMITS = {"test": unlimited, "live": unlimited}


def plant(document: dict, data, value) -> tuple:
    """Puts `value` somewhere in `document` (any depth) and returns its path."""
    node, path = document, ()
    while True:
        children = [
            (key, child)
            for key, child in (node.items() if isinstance(node, dict) else enumerate(node))
            if isinstance(child, (dict, list))
        ]
        if not children or data.draw(st.booleans()):
            break
        key, node = data.draw(st.sampled_from(children))
        path += (key,)
    if isinstance(node, dict):
        key = data.draw(KEYS)
        node[key] = value
    else:
        key = data.draw(st.integers(0, len(node)))
        node.insert(key, value)
    return path + (key,)


def json_string_of_card(number: str, data) -> str:
    """The card as the source of a JSON string: spaced or dashed, in a sentence, or written
    entirely as \\u escapes."""
    separator = data.draw(st.sampled_from(["", " ", "-"]))
    card = separator.join(number[i : i + 4] for i in range(0, len(number), 4))
    before, after = data.draw(WORDS) + " ", " " + data.draw(WORDS)
    if data.draw(st.booleans()):
        card = "".join(f"\\u{ord(char):04x}" for char in card)
    return json.dumps(before)[:-1] + card + json.dumps(after)[1:]


@PROPERTY
@given(document=DOCUMENTS, number=CARD_NUMBERS, data=st.data())
def test_a_card_number_planted_anywhere_is_refused(api, unlimited, document, number, data):
    path = plant(document, data, PLACEHOLDER)
    as_number = data.draw(st.booleans())
    source = number if as_number else json_string_of_card(number, data)
    raw = json.dumps(document).replace(json.dumps(PLACEHOLDER), source).encode()
    refused(post_raw(api, "/v1/test/accept", raw), ".".join(map(str, path)))


@PROPERTY
@given(document=DOCUMENTS, data=st.data())
def test_a_security_code_or_expiry_planted_anywhere_is_refused(api, unlimited, document, data):
    name, fields = data.draw(
        st.sampled_from(
            [
                ("cvc", {"cvc": "123"}),
                ("CVV2", {"CVV2": 4567}),
                ("security_code", {"security_code": "999"}),
                ("exp_month", {"exp_month": 12, "exp_year": 2030}),
                ("expMonth", {"expMonth": "07", "expYear": "31"}),
                ("expiry", {"expiry": "12/30"}),
            ]
        )
    )
    path = plant(document, data, fields)
    response = post_raw(api, "/v1/test/accept", json.dumps(document).encode())
    refused(response, ".".join(map(str, path + (name,))))


@PROPERTY
@given(document=DOCUMENTS)
def test_ordinary_documents_pass(api, unlimited, document):
    response = post_raw(api, "/v1/test/accept", json.dumps(document).encode())
    assert response.status_code == 200, response.content


# --- GET and DELETE bodies: refused unread (docs/request-safety.md "Bodies") ----------------


@pytest.mark.parametrize(
    "method, path",
    [("GET", "/v1/events"), ("GET", "/v1/payments"), ("DELETE", "/v1/webhook-endpoints/whe_x")],
)
@pytest.mark.parametrize("body", [b"{}", b'{"note": "' + VISA.encode() + b'"}', b"1-" * 90_000])
def test_a_body_on_get_or_delete_is_refused_unread(api, method, path, body):
    error = error_of(api.generic(method, path, body), 400, "validation_error", "body_not_allowed")
    assert error["param"] is None


def test_a_body_over_the_size_limit_on_get_is_refused_as_a_body_not_read(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64
    response = api.generic("GET", "/v1/events", b"x" * 100)
    error_of(response, 400, "validation_error", "body_not_allowed")


def test_get_and_delete_without_a_body_are_served(api):
    assert api.get("/v1/events").status_code == 200
    assert api.generic("GET", "/v1/events", b"").status_code == 200
