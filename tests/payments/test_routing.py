"""Routing (docs/methods.md "Routing"): test mode goes to the sandbox for every catalogue
method; live mode goes where the merchant's route for the method and currency says, and
without one the answer is 422 no_route."""

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from payments.models import Payment, Route
from tests.payments.support import error_of, payment_body

ACQUIRER = "tests.support.connectors.ApprovingConnector"


@pytest.fixture
def acquirer(settings):
    settings.PAYMENT_CONNECTORS = {**settings.PAYMENT_CONNECTORS, "acquirer": ACQUIRER}
    return "acquirer"


def pay(client, method_type: str, currency: str):
    body = payment_body(method_type=method_type, currency=currency)
    return client.post("/v1/payments", body, format="json")


def test_a_live_payment_goes_where_the_merchants_route_says(live_api, merchant, acquirer):
    route(merchant, "ideal", "eur", acquirer)
    response = pay(live_api, "ideal", "eur")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["status"], body["livemode"], body["method"]["type"]) == ("captured", True, "ideal")


def test_a_live_payment_looks_its_route_up_once(live_api, merchant, acquirer):
    """The check before anything is written, the operation's start and the connector call
    share one lookup (payments.connectors.connector_of)."""
    route(merchant, "ideal", "eur", acquirer)
    with CaptureQueriesContext(connection) as queries:
        assert pay(live_api, "ideal", "eur").status_code == 201
    lookups = [q["sql"] for q in queries.captured_queries if Route._meta.db_table in q["sql"]]
    assert len(lookups) == 1, lookups


def route(merchant, method_type: str, currency: str, connector: str) -> Route:
    return Route.objects.create(
        merchant=merchant, method_type=method_type, currency=currency, connector=connector
    )


@pytest.mark.parametrize("method_type", ["paypal", "ideal"])
def test_no_route_for_that_method_and_currency_is_422(
    live_api, merchant, other_merchant, acquirer, method_type
):
    route(merchant, "paypal", "usd", acquirer)  # paypal, but in another currency
    route(other_merchant, "ideal", "eur", acquirer)  # another merchant's route is not ours
    error = error_of(pay(live_api, method_type, "eur"), 422, "processing_error", "no_route")
    assert method_type in error["message"] and "live" in error["message"]
    assert not Payment.objects.exists()


def test_a_live_route_never_reaches_the_simulator(live_api, merchant):
    route(merchant, "ideal", "eur", "test")
    error_of(pay(live_api, "ideal", "eur"), 422, "processing_error", "no_route")


def test_test_mode_needs_no_route(api):
    assert pay(api, "ideal", "eur").status_code == 201
    error_of(pay(api, "ideal", "usd"), 422, "processing_error", "no_route")


@pytest.mark.parametrize(
    "fields, problem",
    [
        ({"method_type": "cash"}, "method_type"),
        ({"currency": "usd"}, "currency"),
        ({"connector": "test"}, "connector"),
        ({"connector": "nowhere"}, "connector"),
    ],
)
def test_a_route_is_checked_before_it_is_saved(merchant, acquirer, fields, problem):
    route = Route(merchant=merchant, method_type="ideal", currency="eur", connector=acquirer)
    route.full_clean()
    for name, value in fields.items():
        setattr(route, name, value)
    with pytest.raises(ValidationError) as raised:
        route.full_clean()
    assert set(raised.value.message_dict) == {problem}


def test_routes_are_edited_on_the_merchants_admin_page(staff_client, merchant, acquirer):
    route(merchant, "ideal", "eur", acquirer)
    page = staff_client.get(f"/admin/accounts/merchant/{merchant.pk}/change/").content.decode()
    assert 'name="routes-0-method_type"' in page and 'value="ideal"' in page
