"""`created[gte]` / `created[lte]` (spec "GET /v1/payments"): the given second is a whole
second (timestamps are second precision on the wire), and a window is also an id window
(docs/data.md "Reads at scale")."""

import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from api import ids as id_generator
from api.ids import id_floor, id_time, new_ulid
from payments.models import Payment
from tests.factories import PaymentFactory
from tests.payments.support import APPROVED, created
from tests.payments.test_retrieve_list import ids
from tests.support.connectors import SlowSimulator

NOON = datetime.datetime(2030, 1, 1, 12, tzinfo=datetime.UTC)
MS = datetime.timedelta(milliseconds=1)


@pytest.fixture
def second(merchant):
    """Payments just before noon, during its second (shown as 12:00:00Z) and just after."""
    return [
        PaymentFactory(merchant=merchant, created=NOON - MS).id,
        PaymentFactory(merchant=merchant, created=NOON).id,
        PaymentFactory(merchant=merchant, created=NOON + 700 * MS).id,
        PaymentFactory(merchant=merchant, created=NOON + 1000 * MS).id,
    ]


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"created[lte]": "2030-01-01T12:00:00Z"}, [2, 1, 0]),
        ({"created[lte]": str(int(NOON.timestamp()))}, [2, 1, 0]),
        ({"created[lte]": "2030-01-01T12:00:00.300Z"}, [2, 1, 0]),
        ({"created[gte]": "2030-01-01T12:00:00Z"}, [3, 2, 1]),
        ({"created[gte]": "2030-01-01T12:00:00.900Z"}, [3, 2, 1]),
        ({"created[gte]": "2030-01-01T12:00:00Z", "created[lte]": "2030-01-01T12:00:00Z"}, [2, 1]),
        ({"created[lte]": "9999-12-31T23:59:59Z"}, [3, 2, 1, 0]),
        ({"created[gte]": "-1"}, [3, 2, 1, 0]),
    ],
)
def test_the_given_second_is_a_whole_second(api, second, params, expected):
    assert ids(api.get("/v1/payments", params)) == [second[i] for i in expected]


def test_a_window_bounds_the_ids_the_list_reads(api, second):
    with CaptureQueriesContext(connection) as queries:
        api.get(
            "/v1/payments", {"created[gte]": "2030-01-01T12:00:00Z", "created[lte]": "1893499200"}
        )
    listing = next(q["sql"] for q in queries if 'FROM "payments_payment"' in q["sql"])
    slack = datetime.timedelta(minutes=10)  # payments.selectors.ID_SLACK
    assert id_floor("pay", NOON - slack) in listing
    assert id_floor("pay", NOON + datetime.timedelta(seconds=1) + slack) in listing


def test_a_payment_made_before_created_followed_its_id_is_still_in_its_window(api, merchant):
    """Rows written before 2026-11-25 took `created` when the connector answered."""
    late = PaymentFactory(
        merchant=merchant,
        created=NOON,
        id=id_floor("pay", NOON - datetime.timedelta(minutes=5))[:-16] + new_ulid()[10:],
    )
    assert ids(api.get("/v1/payments", {"created[gte]": "2030-01-01T12:00:00Z"})) == [late.id]


@pytest.mark.parametrize("number", [APPROVED, None])
def test_a_payment_is_created_at_its_requests_moment_with_its_id(
    api, settings, time_machine, monkeypatch, number
):
    """Not when the connector answered (2 s later here): the id and `created` agree."""
    settings.PAYMENT_CONNECTORS = {"test": "tests.support.connectors.SlowSimulator"}
    monkeypatch.setattr(SlowSimulator, "clock", time_machine)
    # The generator never goes below the last millisecond it used (ids stay ordered when a
    # clock steps back): forget the one an earlier test travelled to.
    monkeypatch.setattr(id_generator, "_last_ms", -1)
    time_machine.move_to(NOON, tick=False)
    payment = Payment.objects.get(pk=created(api, number)["id"])
    assert payment.created == id_time(payment.id) == NOON
