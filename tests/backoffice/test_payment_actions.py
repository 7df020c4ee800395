"""Refund, capture and cancel from the payment's page: through the services, permission-checked,
confirmed first, logged; and `manage.py refund_payment` (docs/back-office.md)."""

import json
from io import StringIO

import pytest
from django.contrib.admin.models import LogEntry
from django.core.management import CommandError, call_command

from events.models import Event
from payments.models import Payment
from refunds.models import Refund
from tests.payments.support import APPROVED, created
from tests.refunds.support import captured_payment


def page(client, payment_id):
    return client.get(f"/admin/payments/payment/{payment_id}/change/").content.decode()


def act(client, payment_id, action, **data):
    return client.post(f"/admin/payments/payment/{payment_id}/{action}/", data)


def test_refund_from_the_payment_page_asks_then_refunds_and_logs(staff_client, api):
    payment = captured_payment(api, amount=1000)
    html = page(staff_client, payment["id"])
    assert 'id="action-refund"' in html and 'id="action-capture"' not in html
    asked = staff_client.get(f"/admin/payments/payment/{payment['id']}/refund/")
    assert asked.status_code == 200 and "Yes, refund" in asked.content.decode()
    assert not Refund.objects.exists()
    done = act(staff_client, payment["id"], "refund", amount="3.00", reason="damaged")
    assert done.status_code == 302
    refund = Refund.objects.get(payment_id=payment["id"])
    assert (refund.amount, refund.reason, refund.status) == (300, "damaged", "succeeded")
    assert Event.objects.filter(type="refund.created", resource_id=refund.id).exists()
    entry = LogEntry.objects.get(object_id=payment["id"])
    assert entry.get_change_message() == f"Refund {refund.id} of 3.00 EUR: succeeded."
    assert refund.id in page(staff_client, payment["id"])


def test_a_refused_refund_is_shown_on_the_confirmation_page(staff_client, api):
    payment = captured_payment(api, amount=1000)
    refused = act(staff_client, payment["id"], "refund", amount="50.00")
    assert refused.status_code == 200
    assert "amount_exceeds_refundable" in refused.content.decode()
    assert not Refund.objects.exists() and not LogEntry.objects.exists()


def test_capture_part_and_cancel_from_the_payment_page(staff_client, api):
    to_capture = created(api, APPROVED, capture_method="manual", amount=1000)
    to_cancel = created(api, APPROVED, capture_method="manual")
    html = page(staff_client, to_capture["id"])
    assert 'id="action-capture"' in html and 'id="action-cancel"' in html
    assert 'id="action-refund"' not in html
    assert act(staff_client, to_capture["id"], "capture", amount="4").status_code == 302
    captured = Payment.objects.get(pk=to_capture["id"])
    assert (captured.status, captured.amount_captured) == ("captured", 400)
    assert act(staff_client, to_cancel["id"], "cancel").status_code == 302
    assert Payment.objects.get(pk=to_cancel["id"]).status == "canceled"
    messages = {e.object_id: e.get_change_message() for e in LogEntry.objects.all()}
    assert messages == {to_capture["id"]: "Captured 4.00 EUR.", to_cancel["id"]: "Canceled."}


def test_support_may_refund_but_not_capture_or_cancel(agent, api):
    payment = created(api, APPROVED, capture_method="manual")
    client = agent("Support")
    html = page(client, payment["id"])
    assert 'id="action-capture"' not in html and 'id="action-cancel"' not in html
    assert act(client, payment["id"], "capture").status_code == 403
    assert act(client, payment["id"], "cancel").status_code == 403
    assert Payment.objects.get(pk=payment["id"]).status == "authorized"


def test_read_only_sees_no_buttons_and_cannot_refund(agent, api):
    payment = captured_payment(api)
    client = agent("Read-only")
    html = page(client, payment["id"])
    assert "action-refund" not in html and payment["id"] in html
    assert client.get(f"/admin/payments/payment/{payment['id']}/refund/").status_code == 403
    assert act(client, payment["id"], "refund", amount="1.00").status_code == 403
    assert not Refund.objects.exists()


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_refund_payment_command_is_a_dry_run_unless_for_real(api):
    payment = captured_payment(api, amount=1000)
    dry = run("refund_payment", payment["id"], "--amount", "250")
    assert "Would refund 250 eur" in dry and not Refund.objects.exists()
    done = json.loads(
        run("refund_payment", payment["id"], "--amount", "250", "--for-real", "--json")
    )
    refund = Refund.objects.get()
    assert done == {
        "payment": payment["id"],
        "dry_run": False,
        "refund": {"id": refund.id, "amount": 250, "status": "succeeded"},
    }


def test_refund_payment_command_refusals(api):
    payment = captured_payment(api, amount=1000)
    with pytest.raises(CommandError, match="amount_exceeds_refundable"):
        run("refund_payment", payment["id"], "--amount", "5000", "--for-real")
    with pytest.raises(CommandError, match="No payment"):
        run("refund_payment", "pay_" + "0" * 26, "--for-real")


def test_a_live_payment_needs_the_typed_word_before_the_service_is_asked(staff_client, api):
    payment = captured_payment(api)
    Payment.objects.filter(pk=payment["id"]).update(livemode=True)  # only the page is tested
    untyped = act(staff_client, payment["id"], "refund", amount="1.00")
    assert untyped.status_code == 200
    assert "live-mode objects are affected" in untyped.content.decode()
    assert not Refund.objects.exists() and not LogEntry.objects.exists()
