"""A read never fails because one due payment could not be resolved (docs/payments.md
"Reads and due payments"): it answers with what is stored, the payment stays processing and
due, beat resolves it once the connector answers, and no operation is left `started` for
recovery to retry forever. In live mode (a route to a processor that fails, or no route any
more) and in test mode (the simulator failing)."""

import datetime

from payments import tasks
from payments.models import Operation, Payment, Route
from tests.factories import PaymentFactory

SUPPORT = "tests.support.connectors."


def due_processing(merchant, clock, *, livemode: bool) -> Payment:
    payment = PaymentFactory(merchant=merchant, processing=True, livemode=livemode)
    clock.shift(datetime.timedelta(seconds=31))
    return payment


def reads_show_it_processing(client, payment: Payment) -> None:
    listed = client.get("/v1/payments")
    assert listed.status_code == 200, listed.content
    assert [(p["id"], p["status"]) for p in listed.json()["data"]] == [(payment.id, "processing")]
    filtered = client.get("/v1/payments?status=processing")
    assert filtered.status_code == 200, filtered.content
    retrieved = client.get(f"/v1/payments/{payment.id}")
    assert retrieved.status_code == 200, retrieved.content
    assert retrieved.json()["status"] == "processing"


def nothing_left_for_recovery(clock) -> None:
    assert not Operation.objects.filter(state=Operation.State.STARTED).exists()
    clock.shift(datetime.timedelta(minutes=5))
    assert tasks.recover_operations() == 0


def test_live_a_processor_that_fails_leaves_the_reads_answering(
    live_api, merchant, clock, settings
):
    settings.PAYMENT_CONNECTORS = {
        **settings.PAYMENT_CONNECTORS,
        "down": SUPPORT + "ResolveFailsConnector",
        "up": SUPPORT + "ResolvingConnector",
    }
    route = Route.objects.create(
        merchant=merchant, method_type="card", currency="eur", connector="down"
    )
    payment = due_processing(merchant, clock, livemode=True)
    reads_show_it_processing(live_api, payment)
    assert Payment.objects.get(pk=payment.pk).status == "processing"
    nothing_left_for_recovery(clock)
    route.connector = "up"
    route.save()
    assert tasks.resolve_due_payments() == 1  # beat asks again, now answered
    assert live_api.get(f"/v1/payments/{payment.id}").json()["status"] == "captured"


def test_live_a_route_removed_while_processing_leaves_the_reads_answering(
    live_api, merchant, clock, settings
):
    payment = due_processing(merchant, clock, livemode=True)  # no route serves it any more
    reads_show_it_processing(live_api, payment)
    assert not Operation.objects.exists()  # refused before any was recorded
    nothing_left_for_recovery(clock)


def test_test_mode_a_simulator_that_fails_leaves_the_reads_answering(
    api, merchant, clock, settings
):
    working = settings.PAYMENT_CONNECTORS
    settings.PAYMENT_CONNECTORS = {**working, "test": SUPPORT + "ResolveFailsSimulator"}
    payment = due_processing(merchant, clock, livemode=False)
    reads_show_it_processing(api, payment)
    nothing_left_for_recovery(clock)
    settings.PAYMENT_CONNECTORS = working
    assert tasks.resolve_due_payments() == 1
    assert Payment.objects.get(pk=payment.pk).status == "captured"
