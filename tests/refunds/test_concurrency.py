"""Refunds racing on one payment never give back more than was captured: real parallel HTTP
requests against a live server, each on its own connection, serialised by the payment's row
lock and the refund operation in flight (spec "Limits": refund total at most the captured
amount). A refund that meets another one's connector call in flight is refused with 422
`payment_in_progress`, to retry (docs/refunds.md "Concurrency")."""

from collections import Counter

import pytest

from events.models import Event
from payments.models import Operation, Payment
from refunds.models import Refund
from tests.racing import race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_partial_refunds_racing_stop_at_the_captured_amount(http):
    payment = http.payment("4242424242424242", amount=1000)
    results = race(http, [f"/v1/payments/{payment['id']}/refunds"] * 8, {"amount": 300})
    outcomes = Counter((status, code) for _, status, code in results)
    # At most 3 x 300 fit in 1000; the others were refused, none half-done.
    assert set(outcomes) <= {
        (201, None),
        (400, "amount_exceeds_refundable"),
        (422, "payment_in_progress"),
    }
    succeeded = outcomes[(201, None)]
    assert succeeded in (1, 2, 3)
    final = Payment.objects.get(pk=payment["id"])
    assert (final.status, final.amount_refunded) == ("partially_refunded", 300 * succeeded)
    assert Event.objects.filter(type="refund.succeeded").count() == succeeded


def test_full_refunds_racing_refund_once(http):
    payment = http.payment("4242424242424242", amount=1000)
    results = race(http, [f"/v1/payments/{payment['id']}/refunds"] * 6)
    outcomes = Counter((status, code) for _, status, code in results)
    assert outcomes[(201, None)] == 1
    assert set(outcomes) <= {
        (201, None),
        (422, "payment_not_refundable"),
        (422, "payment_in_progress"),
    }
    final = Payment.objects.get(pk=payment["id"])
    assert (final.status, final.amount_refunded) == ("refunded", 1000)
    assert Refund.objects.get().amount == 1000
    # Exactly one refund reached the processor.
    assert Operation.objects.filter(payment_id=payment["id"], kind="refund").count() == 1
