"""Pending refunds (docs/refunds.md): they hold their amount back, and settle on read after 30
seconds or by the beat task, each exactly once."""

import datetime

from celery import current_app
from django.utils import timezone

from events.models import Event
from payments.models import Operation
from refunds import services, tasks
from refunds.models import Refund
from tests.factories import RefundFactory
from tests.payments.support import error_of, event_types
from tests.refunds.support import OUTCOME, captured_payment, payment_of, refund, refunded
from tests.support.clock import T0


def test_pending_then_succeeded_on_read_after_30_seconds(api, clock):
    payment = captured_payment(api)
    body = refunded(api, payment["id"], amount=400, metadata={OUTCOME: "pending"})
    assert (body["status"], body["fee"]) == ("pending", None)
    assert event_types(body["id"]) == ["refund.created"]
    assert payment_of(api, payment["id"])["amount_refunded"] == 0  # succeeded refunds only
    clock.shift(datetime.timedelta(seconds=29))
    assert api.get(f"/v1/refunds/{body['id']}").json()["status"] == "pending"
    clock.shift(datetime.timedelta(seconds=1))
    settled = api.get(f"/v1/refunds/{body['id']}").json()
    assert settled["status"] == "succeeded" and settled["fee"]["amount"] == 0
    after = payment_of(api, payment["id"])
    assert (after["status"], after["amount_refunded"]) == ("partially_refunded", 400)
    succeeded = Event.objects.get(resource_id=body["id"], type="refund.succeeded")
    assert succeeded.data["object"] == settled
    assert succeeded.data["previous_attributes"] == {"status": "pending", "fee": None}


def test_pending_then_failed_gives_the_amount_back(api, clock):
    payment = captured_payment(api)
    body = refunded(api, payment["id"], metadata={OUTCOME: "pending>failed:account_closed"})
    clock.shift(datetime.timedelta(seconds=30))
    settled = api.get(f"/v1/refunds/{body['id']}").json()
    assert (settled["status"], settled["failure_code"]) == ("failed", "account_closed")
    assert event_types(body["id"]) == ["refund.created", "refund.failed"]
    assert payment_of(api, payment["id"])["status"] == "captured"
    assert refunded(api, payment["id"])["amount"] == 1000


def test_a_pending_refund_holds_its_amount_back(api):
    payment = captured_payment(api, amount=1000)
    refunded(api, payment["id"], amount=700, metadata={OUTCOME: "pending"})
    error_of(
        refund(api, payment["id"], amount=301), 400, "validation_error", "amount_exceeds_refundable"
    )
    assert refunded(api, payment["id"])["amount"] == 300  # the rest, not the pending part
    assert payment_of(api, payment["id"])["status"] == "partially_refunded"
    error = error_of(refund(api, payment["id"]), 422, "processing_error", "payment_not_refundable")
    assert "700 in pending refunds" in error["message"]


def test_beat_settles_due_refunds_once(api, clock):
    payment = captured_payment(api)
    due = refunded(api, payment["id"], amount=100, metadata={OUTCOME: "pending"})
    clock.shift(datetime.timedelta(seconds=20))
    later = refunded(api, payment["id"], amount=100, metadata={OUTCOME: "pending"})
    clock.shift(datetime.timedelta(seconds=10))
    assert tasks.resolve_due_refunds() == 1
    assert tasks.resolve_due_refunds() == 0
    statuses = dict(Refund.objects.values_list("id", "status"))
    assert (statuses[due["id"]], statuses[later["id"]]) == ("succeeded", "pending")
    assert Event.objects.filter(type="refund.succeeded").count() == 1
    assert payment_of(api, payment["id"])["amount_refunded"] == 100


def test_beat_resolves_a_factory_made_pending_refund(db, clock):
    pending = RefundFactory(pending=True, metadata={OUTCOME: "pending"})
    clock.shift(datetime.timedelta(seconds=31))
    tasks.resolve_due_refunds()
    pending.refresh_from_db()
    pending.payment.refresh_from_db()
    assert (pending.status, pending.due_at) == ("succeeded", None)
    assert (pending.payment.status, pending.payment.amount_refunded) == ("refunded", 1000)


def test_the_beat_entry_names_the_real_task(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["refunds-resolve-due"]
    assert entry["task"] in current_app.tasks
    assert 0 < entry["options"]["expires"] < entry["schedule"]


def test_a_refund_the_connector_cannot_serve_does_not_stop_the_sweep(db, clock, caplog):
    stuck = RefundFactory(pending=True, payment__livemode=True)  # no live route
    fine = RefundFactory(pending=True)
    clock.shift(datetime.timedelta(seconds=31))
    assert tasks.resolve_due_refunds() == 2
    stuck.refresh_from_db()
    fine.refresh_from_db()
    assert (stuck.status, fine.status) == ("pending", "succeeded")
    assert stuck.id in caplog.text and "no_route" in caplog.text


def test_a_connector_answering_pending_again_asks_later(db, clock, settings):
    # The simulator never answers pending twice; a slow processor may.
    settings.PAYMENT_CONNECTORS = {"test": "tests.support.connectors.SlowRefundsConnector"}
    pending = RefundFactory(pending=True)
    clock.shift(datetime.timedelta(seconds=31))
    settled = services.refund_resolve(refund=pending)
    # Not the processor's 30 s again but as long as the refund has existed, 1 minute at least
    assert settled.status == "pending" and settled.due_at == T0 + datetime.timedelta(seconds=91)
    assert not Event.objects.filter(resource_id=pending.id).exists()


def resolve_asks(refund) -> int:
    return Operation.objects.filter(refund_id=refund.pk, kind="resolve_refund").count()


def test_a_refund_still_pending_is_asked_after_doubling_waits(db, clock, settings):
    """Issue 32: a pending refund was asked about every 10 minutes for ever."""
    settings.PAYMENT_CONNECTORS = {"test": "tests.support.connectors.SlowRefundsConnector"}
    pending = RefundFactory(pending=True, created=T0 - datetime.timedelta(minutes=10))
    clock.shift(datetime.timedelta(seconds=31))
    assert tasks.resolve_due_refunds() == 1
    pending.refresh_from_db()
    age = timezone.now() - pending.created
    assert pending.due_at == timezone.now() + age
    clock.shift(datetime.timedelta(seconds=5))
    for _ in range(60):  # 10 minutes of beat ticks: none asks
        assert tasks.resolve_due_refunds() == 0
        clock.shift(datetime.timedelta(seconds=10))
    clock.move_to(pending.due_at)
    assert tasks.resolve_due_refunds() == 1
    pending.refresh_from_db()
    assert pending.due_at == pending.created + 4 * age  # the wait doubled
    assert resolve_asks(pending) == 2
    old = RefundFactory(pending=True, created=T0 - datetime.timedelta(days=3))
    clock.move_to(old.due_at)
    tasks.resolve_due_refunds()
    old.refresh_from_db()
    assert old.due_at == timezone.now() + datetime.timedelta(hours=6)  # the longest wait


def test_a_refund_the_processor_cannot_be_asked_about_waits_too(db, clock, settings, caplog):
    settings.PAYMENT_CONNECTORS = {
        **settings.PAYMENT_CONNECTORS,
        "test": "tests.support.connectors.RefundResolveFailsSimulator",
    }
    pending = RefundFactory(pending=True)
    clock.shift(datetime.timedelta(seconds=31))
    assert tasks.resolve_due_refunds() == 1
    assert f"could not settle {pending.id}" in caplog.text
    pending.refresh_from_db()
    assert pending.due_at == timezone.now() + datetime.timedelta(minutes=1)  # the shortest
    assert sum(tasks.resolve_due_refunds() for _ in range(5)) == 0  # ticks within the minute
    clock.move_to(pending.due_at)
    assert tasks.resolve_due_refunds() == 1
    pending.refresh_from_db()
    assert (pending.status, pending.due_at) == (
        "pending",
        pending.created + 2 * (timezone.now() - pending.created),
    )
