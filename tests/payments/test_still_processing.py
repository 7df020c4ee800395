"""A payment its processor still reports processing when due is not asked about again on
every beat tick or read: the next ask waits as long as the payment has existed, so the waits
double, from 1 minute up to 6 hours (docs/payments.md "Time"). So with a processor beat cannot
ask at all (down, or in doubt: then recovery's asks wait the same way, by the operation's
age)."""

import datetime

import pytest
from django.conf import settings as django_settings

from payments import tasks
from payments.models import Operation, Payment, Route
from tests.factories import PaymentFactory
from tests.support.clock import T0

pytestmark = pytest.mark.django_db

MINUTE = datetime.timedelta(minutes=1)


def live_route(merchant, settings, connector: str) -> Route:
    settings.PAYMENT_CONNECTORS = {
        **settings.PAYMENT_CONNECTORS,
        "slow": f"tests.support.connectors.{connector}",
    }
    return Route.objects.create(
        merchant=merchant, method_type="card", currency="eur", connector="slow"
    )


@pytest.fixture
def still_processing_route(merchant, settings):
    return live_route(merchant, settings, "StillProcessingConnector")


def asks(payment: Payment) -> int:
    """How often the connector was asked to resolve the payment (one operation each)."""
    return Operation.objects.filter(payment_id=payment.pk, kind=Operation.Kind.RESOLVE).count()


def test_beat_asks_again_after_doubling_waits(merchant, clock, still_processing_route):
    payment = PaymentFactory(merchant=merchant, livemode=True, processing=True)
    clock.shift(datetime.timedelta(minutes=10))  # due: the processor's first resolve time
    assert tasks.resolve_due_payments() == 1
    assert asks(payment) == 1
    payment.refresh_from_db()
    assert payment.status == "processing"
    assert payment.due_at == payment.created + 2 * datetime.timedelta(minutes=10)
    for _ in range(5):  # beat ticks every 10 s: none asks until the new due time
        clock.shift(datetime.timedelta(seconds=10))
        tasks.resolve_due_payments()
    assert asks(payment) == 1
    clock.move_to(payment.due_at)
    assert tasks.resolve_due_payments() == 1
    assert asks(payment) == 2
    payment.refresh_from_db()
    assert payment.due_at == payment.created + 4 * datetime.timedelta(minutes=10)


def test_the_wait_is_one_minute_at_least_and_six_hours_at_most(
    merchant, clock, still_processing_route
):
    young = PaymentFactory(merchant=merchant, livemode=True, processing=True)
    old = PaymentFactory(
        merchant=merchant,
        livemode=True,
        processing=True,
        created=T0 - datetime.timedelta(days=3),
    )
    clock.shift(datetime.timedelta(seconds=31))  # both due (the factory's 30 s)
    assert tasks.resolve_due_payments() == 2
    young.refresh_from_db()
    old.refresh_from_db()
    now = T0 + datetime.timedelta(seconds=31)
    assert young.due_at == now + MINUTE
    assert old.due_at == now + datetime.timedelta(hours=6)


def test_reads_do_not_ask_again_before_the_new_due_time(
    live_api, merchant, clock, still_processing_route
):
    payment = PaymentFactory(merchant=merchant, livemode=True, processing=True)
    clock.shift(datetime.timedelta(minutes=10))
    for _ in range(3):
        read = live_api.get(f"/v1/payments/{payment.id}")
        assert read.status_code == 200, read.content
        assert read.json()["status"] == "processing"
    assert asks(payment) == 1


def ticks(task, seconds: int) -> int:
    """Beat's 10-second ticks over `seconds`: how many rows `task` took in all."""
    return sum(task() for _ in range(seconds // 10))


def test_a_processor_that_cannot_be_asked_is_asked_after_the_same_waits(merchant, clock, settings):
    live_route(merchant, settings, "ResolveFailsConnector")  # 502-like: nothing processed
    payment = PaymentFactory(merchant=merchant, livemode=True, processing=True)
    clock.shift(datetime.timedelta(minutes=10))
    assert tasks.resolve_due_payments() == 1  # logged; it stays processing
    payment.refresh_from_db()
    assert payment.due_at == payment.created + 2 * datetime.timedelta(minutes=10)
    clock.shift(datetime.timedelta(seconds=5))
    assert ticks(tasks.resolve_due_payments, 590) == 0  # not on every tick, as before
    clock.move_to(payment.due_at)
    assert tasks.resolve_due_payments() == 1
    payment.refresh_from_db()
    assert payment.due_at == payment.created + 4 * datetime.timedelta(minutes=10)


def test_recovery_of_an_operation_in_doubt_waits_as_long_as_it_has_existed(
    merchant, clock, settings
):
    live_route(merchant, settings, "ResolveInDoubtConnector")
    payment = PaymentFactory(merchant=merchant, livemode=True, processing=True)
    clock.shift(datetime.timedelta(minutes=10))
    assert tasks.resolve_due_payments() == 1  # in doubt: the operation stays started
    (operation,) = Operation.objects.filter(payment_id=payment.pk, state="started")
    stale = datetime.timedelta(seconds=django_settings.OPERATION_RECOVERY_SECONDS)
    clock.move_to(operation.created + stale)
    assert tasks.recover_operations() == 1  # asked again: in doubt again
    operation.refresh_from_db()
    assert operation.retry_at == operation.created + 2 * stale
    assert ticks(tasks.recover_operations, int(stale.total_seconds()) - 10) == 0
    clock.move_to(operation.retry_at)
    assert tasks.recover_operations() == 1
    operation.refresh_from_db()
    assert operation.retry_at == operation.created + 4 * stale
    assert operation.state == "started"  # asked with the same key when the processor answers
