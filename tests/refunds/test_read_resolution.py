"""A refund read never fails because a due pending refund could not be settled (as payments'
reads, tests/payments/test_read_resolution.py): it answers with what is stored, the refund
stays pending and due, beat settles it once the connector answers, and no operation is left
`started` for recovery to retry forever; nor does a refund of a payment no route serves."""

import datetime

from payments import tasks as payment_tasks
from payments.models import Operation
from refunds import tasks
from refunds.models import Refund
from tests.factories import PaymentFactory
from tests.payments.support import error_of
from tests.refunds.support import OUTCOME, captured_payment, refund, refunded

SUPPORT = "tests.support.connectors."


def nothing_left_for_recovery(clock) -> None:
    assert not Operation.objects.filter(state=Operation.State.STARTED).exists()
    clock.shift(datetime.timedelta(minutes=5))
    assert tasks.recover_refund_operations() == 0
    assert payment_tasks.recover_operations() == 0


def test_a_refund_the_connector_cannot_settle_is_read_as_stored(api, clock, settings, caplog):
    pending = refunded(api, captured_payment(api)["id"], metadata={OUTCOME: "pending"})
    working = settings.PAYMENT_CONNECTORS
    settings.PAYMENT_CONNECTORS = {**working, "test": SUPPORT + "RefundResolveFailsSimulator"}
    clock.shift(datetime.timedelta(seconds=31))

    read = api.get(f"/v1/refunds/{pending['id']}")

    assert read.status_code == 200, read.content
    assert read.json() == pending
    assert f"read shows {pending['id']} pending" in caplog.text
    nothing_left_for_recovery(clock)
    settings.PAYMENT_CONNECTORS = working
    assert tasks.resolve_due_refunds() == 1
    assert Refund.objects.get(pk=pending["id"]).status == "succeeded"


def test_a_refund_of_a_payment_no_route_serves_starts_no_operation(live_api, merchant, clock):
    payment = PaymentFactory(merchant=merchant, captured=True, livemode=True)  # no live route

    error_of(refund(live_api, payment.id), 422, "processing_error", "no_route")

    assert not Operation.objects.exists()
    nothing_left_for_recovery(clock)
