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
    slack, end = datetime.timedelta(minutes=10), NOON + datetime.timedelta(seconds=1)
    for moment in (NOON - slack, NOON + slack, end - slack, end + slack):  # ID_SLACK
        assert id_floor("pay", moment) in listing


def made_apart(merchant, created, id_moment) -> str:
    return PaymentFactory(
        merchant=merchant, created=created, id=id_floor("pay", id_moment)[:-16] + new_ulid()[10:]
    ).id


@pytest.mark.parametrize("apart", [datetime.timedelta(minutes=-9), datetime.timedelta(minutes=9)])
def test_created_decides_near_the_edges_when_an_id_and_created_lie_apart(api, merchant, apart):
    """Rows written before 2026-11-25 took `created` after their id (by a connector call);
    a clock that steps back makes an id run ahead of `created`."""
    inside = made_apart(merchant, NOON, NOON + apart)
    before = made_apart(merchant, NOON - MS, NOON - MS + apart)
    after = made_apart(merchant, NOON + 1000 * MS, NOON + 1000 * MS + apart)
    window = {"created[gte]": "2030-01-01T12:00:00Z", "created[lte]": "2030-01-01T12:00:00Z"}
    assert ids(api.get("/v1/payments", window)) == [inside]
    assert set(ids(api.get("/v1/payments", {"created[gte]": "1893499200"}))) == {inside, after}
    assert ids(api.get("/v1/payments", {"created[lte]": "1893499199"})) == [before]


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
