"""Races on one payment leave exactly one winner: real parallel HTTP requests against a live
server, each on its own database connection, serialised only by the payment's row lock."""

from collections import Counter

import pytest

from events.models import Event
from payments.models import Operation, Payment, Token
from tests.racing import race, race_each

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
        "payment_in_progress",  # the winner's connector call was still in flight
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
    # Exactly one call reached the processor: the winner's capture or void.
    reached = Operation.objects.filter(payment_id=pid).exclude(kind="create")
    assert list(reached.values_list("kind", flat=True)) == [
        {"captures": "capture", "cancel": "void"}[won]
    ]


def test_advance_racing_itself_resolves_once(http):
    payment = http.payment("4000000000000077")
    results = race(http, [f"/v1/sandbox/advance/{payment['id']}"] * 6)
    assert len(winners(results)) == 1
    losers = {code for _, status, code in results if status != 200}
    assert losers <= {"payment_not_advanceable", "payment_in_progress"}
    assert Event.objects.filter(resource_id=payment["id"], type="payment.captured").count() == 1


def test_captures_racing_take_the_money_once(http):
    payment = http.payment("4242424242424242", capture_method="manual")
    results = race(http, [f"/v1/payments/{payment['id']}/captures"] * 6)
    assert len(winners(results)) == 1
    assert Payment.objects.get(pk=payment["id"]).amount_captured == 1000
    assert Event.objects.filter(resource_id=payment["id"], type="payment.captured").count() == 1


def confirm_body(token: str) -> dict:
    return {"payment_method": {"type": "card", "token": token}}


def test_confirms_racing_authorize_once_and_spend_one_token(http):
    pid = http.payment(None)["id"]
    tokens = [http.token() for _ in range(4)]
    results = race_each(http, [(f"/v1/payments/{pid}/confirm", confirm_body(t)) for t in tokens])
    assert len(winners(results)) == 1
    losers = {code for _, status, code in results if status != 200}
    assert losers <= {"payment_not_confirmable", "payment_in_progress"}
    # Only the winner's token was spent: no loser reached the processor.
    assert Token.objects.filter(pk__in=tokens, used_at__isnull=False).count() == 1
    assert Operation.objects.filter(payment_id=pid).count() == 1
    assert Event.objects.filter(resource_id=pid, type="payment.captured").count() == 1


def test_confirm_racing_cancel_never_orphans_an_authorization(http):
    # The issuer answers after 300 ms: long enough for the cancel to land meanwhile.
    pid = http.payment(None, metadata={"_svc_test_latency_ms": 300})["id"]
    token = http.token()
    results = race_each(
        http,
        [(f"/v1/payments/{pid}/confirm", confirm_body(token)), (f"/v1/payments/{pid}/cancel", {})],
    )
    assert len(winners(results)) == 1, results
    final = Payment.objects.get(pk=pid)
    spent = Token.objects.get(pk=token).used_at is not None
    # Canceled: the token was never spent (nothing authorized); captured: the cancel refused.
    assert (final.status, spent) in {("canceled", False), ("captured", True)}
    reached = Operation.objects.filter(payment_id=pid).exclude(state="abandoned").count()
    assert reached == (1 if spent else 0)
