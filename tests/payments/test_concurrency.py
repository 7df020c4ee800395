"""Races on one payment leave exactly one winner: real parallel HTTP requests against a live
server, each on its own database connection, serialised only by the payment's row lock."""

from collections import Counter

import pytest

from events.models import Event
from payments.models import Payment
from tests.racing import race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def winners(results):
    return [(action, status) for action, status, _ in results if status == 200]


def test_capture_cancel_and_advance_racing_leave_one_winner(http):
    payment = http.payment("4242424242424242", capture_method="manual")
    pid = payment["id"]
    paths = [
        f"/v1/payments/{pid}/captures",
        f"/v1/payments/{pid}/cancel",
        f"/v1/sandbox/advance/{pid}",
    ] * 3
    results = race(http, paths)
    assert len(winners(results)) == 1
    losers = Counter(code for _, status, code in results if status != 200)
    assert set(losers) <= {
        "payment_not_capturable",
        "payment_not_cancelable",
        "payment_not_advanceable",
    }
    final = Payment.objects.get(pk=pid)
    won = winners(results)[0][0]
    assert final.status == {"captures": "captured", "cancel": "canceled"}[won]
    status_events = Event.objects.filter(
        resource_id=pid, type__in=["payment.captured", "payment.canceled"]
    )
    assert status_events.count() == 1


def test_advance_racing_itself_resolves_once(http):
    payment = http.payment("4000000000000077")
    results = race(http, [f"/v1/sandbox/advance/{payment['id']}"] * 6)
    assert len(winners(results)) == 1
    assert {code for _, status, code in results if status != 200} == {"payment_not_advanceable"}
    assert Event.objects.filter(resource_id=payment["id"], type="payment.captured").count() == 1


def test_captures_racing_take_the_money_once(http):
    payment = http.payment("4242424242424242", capture_method="manual")
    results = race(http, [f"/v1/payments/{payment['id']}/captures"] * 6)
    assert len(winners(results)) == 1
    assert Payment.objects.get(pk=payment["id"]).amount_captured == 1000
    assert Event.objects.filter(resource_id=payment["id"], type="payment.captured").count() == 1
