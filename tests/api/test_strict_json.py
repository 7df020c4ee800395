"""Issue 20 item 9: a body with a key twice in one object is refused (400 `invalid_json`,
docs/api-conventions.md), not read as whichever came last."""

import pytest

from tests.api.test_conventions import error_of

pytestmark = pytest.mark.urls("tests.support.urls")


@pytest.mark.parametrize(
    "raw, key",
    [
        (b'{"amount": 1, "currency": "eur", "amount": 100000}', "amount"),
        (b'{"amount": 1, "metadata": {"a": "1", "b": "2", "a": "3"}}', "a"),
        (b'{"items": [{"sku": "x"}, {"sku": "y", "sku": "z"}]}', "sku"),
        (b'{"\\u0061mount": 1, "amount": 2}', "amount"),  # the same key, once escaped
    ],
)
def test_a_key_twice_in_one_object_is_refused(api, raw, key):
    response = api.post("/v1/test/echo", raw, content_type="application/json")
    error = error_of(response, 400, "validation_error", "invalid_json")
    assert error["param"] is None and f"'{key}'" in error["message"]


def test_a_long_duplicate_key_is_quoted_short(api):
    key = "k" * 10_000
    raw = f'{{"{key}": 1, "{key}": 2}}'.encode()
    response = api.post("/v1/test/echo", raw, content_type="application/json")
    error_of(response, 400, "validation_error", "invalid_json")
    assert len(response.content) < 1000


def test_the_same_key_in_different_objects_or_cases_passes(api):
    raw = b'{"amount": 1, "currency": "eur", "Amount": 2, "metadata": {"amount": 3}}'
    response = api.post("/v1/test/echo", raw, content_type="application/json")
    assert response.status_code == 201, response.content
