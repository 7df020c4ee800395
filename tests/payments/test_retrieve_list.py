"""GET /v1/payments/:id and GET /v1/payments with every filter and cursor pagination."""

import datetime

import pytest

from tests.factories import PaymentFactory
from tests.payments.support import APPROVED, created, error_of


def ids(response):
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["data"]]


def test_get_returns_the_payment(api):
    payment = created(api, APPROVED)
    response = api.get(f"/v1/payments/{payment['id']}")
    assert response.status_code == 200 and response.json() == payment


@pytest.mark.parametrize(
    "payment_id", ["pay_01J00000000000000000000000", "nope", "pay_%00", "%00", "x" * 300]
)
def test_unknown_payment_is_404(api, payment_id):
    error_of(api.get(f"/v1/payments/{payment_id}"), 404, "not_found_error", "resource_not_found")
    for action in ("captures", "cancel", "refunds"):  # bodies valid as sent
        error_of(
            api.post(f"/v1/payments/{payment_id}/{action}", {}, format="json"),
            404,
            "not_found_error",
            "resource_not_found",
        )


def test_other_merchant_and_other_mode_do_not_see_it(api, other_api, live_api):
    payment = created(api, APPROVED)
    for client in (other_api, live_api):
        error_of(
            client.get(f"/v1/payments/{payment['id']}"),
            404,
            "not_found_error",
            "resource_not_found",
        )
        assert ids(client.get("/v1/payments")) == []


@pytest.fixture
def population(merchant, other_merchant):
    """Payments of the merchant in various shapes, oldest first; plus noise it must not see."""
    t0 = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
    rows = [
        PaymentFactory(merchant=merchant, captured=True, amount=500, created=t0),
        PaymentFactory(
            merchant=merchant,
            authorized=True,
            currency="usd",
            created=t0 + datetime.timedelta(hours=1),
        ),
        PaymentFactory(
            merchant=merchant,
            reference="special",
            amount=2000,
            created=t0 + datetime.timedelta(hours=2),
        ),
        PaymentFactory(
            merchant=merchant,
            captured=True,
            method_type="apple_pay",
            customer="cus_01J00000000000000000000000",
            created=t0 + datetime.timedelta(hours=3),
        ),
        PaymentFactory(
            merchant=merchant,
            status="declined",
            due_at=None,
            created=t0 + datetime.timedelta(hours=4),
        ),
    ]
    PaymentFactory(merchant=other_merchant, captured=True)
    PaymentFactory(merchant=merchant, livemode=True, captured=True)
    return [row.id for row in rows]


def test_newest_first_and_envelope(api, population):
    body = api.get("/v1/payments").json()
    assert body["object"] == "list" and body["has_more"] is False and body["next_cursor"] is None
    assert [item["id"] for item in body["data"]] == population[::-1]


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"status": "captured"}, [3, 0]),
        ({"status": "captured,authorized"}, [3, 1, 0]),
        ({"currency": "usd"}, [1]),
        ({"currency": "USD"}, [1]),
        ({"reference": "special"}, [2]),
        ({"customer": "cus_01J00000000000000000000000"}, [3]),
        ({"method_type": "apple_pay"}, [3]),
        ({"created[gte]": "2030-01-01T02:00:00Z"}, [4, 3, 2]),
        (
            {
                "created[lte]": str(
                    int(datetime.datetime(2030, 1, 1, 1, tzinfo=datetime.UTC).timestamp())
                )
            },
            [1, 0],
        ),
        ({"amount[gte]": "1000"}, [4, 3, 2, 1]),
        ({"amount[lte]": "1000"}, [4, 3, 1, 0]),
        ({"amount[gte]": "600", "amount[lte]": "1500", "status": "captured"}, [3]),
    ],
)
def test_filters_combine_with_and(api, population, params, expected):
    assert ids(api.get("/v1/payments", params)) == [population[i] for i in expected]


@pytest.mark.parametrize(
    "param, value",
    [
        ("status", "done"),
        ("status", "captured,nope"),
        ("currency", "EURO"),
        ("customer", "bob"),
        ("method_type", "cash"),
        ("created[gte]", "yesterday"),
        ("created[lte]", "2030-01-01T00:00:00"),
        # Valid RFC 3339 whose UTC form is outside the datetime range: was an OverflowError.
        ("created[gte]", "9999-12-31T23:59:59-14:00"),
        ("created[lte]", "0001-01-01T00:00:00+14:00"),
        ("reference", "a\x00b"),  # PostgreSQL cannot take a NUL: was a 500
        ("amount[gte]", "-1"),
        ("amount[lte]", "1.5"),
        ("limit", "0"),
        ("limit", "101"),
        ("starting_after", "garbage"),
    ],
)
def test_bad_filters_are_400_naming_the_parameter(api, population, param, value):
    response = api.get("/v1/payments", {param: value})
    body = error_of(response, 400, "validation_error", "invalid_parameter")
    assert body["param"] == param


def test_unknown_status_is_named(api, population):
    body = error_of(
        api.get("/v1/payments", {"status": "done"}), 400, "validation_error", "invalid_parameter"
    )
    assert "done" in body["message"]


def test_cursor_pagination_walks_everything_once(api, population):
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"starting_after": cursor} if cursor else {})}
        body = api.get("/v1/payments", params).json()
        seen += [item["id"] for item in body["data"]]
        if not body["has_more"]:
            break
        cursor = body["next_cursor"]
    assert seen == population[::-1]


def test_bare_ids_work_as_cursors_and_both_cursors_are_refused(api, population):
    assert ids(api.get("/v1/payments", {"starting_after": population[2]})) == population[1::-1]
    assert ids(api.get("/v1/payments", {"ending_before": population[2]})) == population[:2:-1]
    both = api.get(
        "/v1/payments", {"starting_after": population[2], "ending_before": population[1]}
    )
    error_of(both, 400, "validation_error", "invalid_parameter")


def test_publishable_key_cannot_read_payments(publishable_api, anonymous_api):
    error_of(publishable_api.get("/v1/payments"), 403, "authorization_error", "secret_key_required")
    error_of(anonymous_api.get("/v1/payments"), 401, "authentication_error", "api_key_missing")
