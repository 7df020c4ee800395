"""The services on rows made by the factory: each change checks the table, writes, emits."""

import pytest

from api.errors import ProcessingFailed
from events.models import Event
from payments import services
from payments.states import Status
from tests.factories import PaymentFactory


def events_of(payment):
    return list(Event.objects.filter(resource_id=payment.id).values_list("type", flat=True))


def test_resolve_settles_processing_by_its_capture_method(db):
    automatic = services.payment_resolve(payment=PaymentFactory(processing=True))
    manual = services.payment_resolve(
        payment=PaymentFactory(processing=True, capture_method="manual")
    )
    assert (automatic.status, automatic.amount_captured) == (Status.CAPTURED, 1000)
    assert automatic.fees["amount"] == 39 and automatic.due_at is None
    assert manual.status == Status.AUTHORIZED and manual.due_at is not None
    assert events_of(automatic) == ["payment.captured"]


def test_capture_and_cancel_emit_with_previous_attributes(db):
    captured = services.payment_capture(payment=PaymentFactory(authorized=True), amount=400)
    event = Event.objects.get(resource_id=captured.id)
    assert event.type == "payment.partially_captured"
    assert event.data["previous_attributes"]["amount_captured"] == 0
    assert event.data["object"]["amount_captured"] == 400
    canceled = services.payment_cancel(payment=PaymentFactory(requires_action=True))
    assert canceled.status == Status.CANCELED and canceled.next_action is None


def test_payer_action_on_a_payment_that_moved_on_is_refused(db):
    payment = PaymentFactory(requires_action=True)
    services.payment_cancel(payment=payment)
    with pytest.raises(ProcessingFailed) as refused:
        services.payment_complete_action(payment=payment, details={"challenge_result": "approve"})
    assert refused.value.code == "payment_not_awaiting_action"


def test_expire_is_idempotent_and_ignores_payments_not_due(db):
    not_due = PaymentFactory()
    assert services.payment_expire(payment=not_due).status == Status.PENDING
    assert events_of(not_due) == []


def test_resolve_if_due_leaves_others_alone(db):
    payment = PaymentFactory(processing=True)
    assert services.payment_resolve_if_due(payment=payment).status == Status.PROCESSING
    captured = PaymentFactory(captured=True)
    assert services.payment_resolve_if_due(payment=captured) is captured
