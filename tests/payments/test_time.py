"""Time-based transitions, with time travel: processing resolves after 30 s (on read and by
beat); pending and requires_action expire after 1 hour, authorized after 7 days."""

import datetime

import pytest
from celery import current_app
from django.utils.module_loading import import_string

from payments import tasks
from payments.models import Payment, Token
from tests.factories import PaymentFactory
from tests.payments.support import (
    APPROVED,
    ASYNC,
    CHALLENGE,
    confirm,
    created,
    error_of,
    event_types,
    tokenize,
)
from tests.support.clock import T0


def status_of(payment_id: str) -> str:
    return Payment.objects.get(pk=payment_id).status


def test_processing_resolves_on_read_after_30_seconds(api, clock):
    payment = created(api, ASYNC)
    clock.shift(datetime.timedelta(seconds=29))
    assert api.get(f"/v1/payments/{payment['id']}").json()["status"] == "processing"
    clock.shift(datetime.timedelta(seconds=1))
    body = api.get(f"/v1/payments/{payment['id']}").json()
    assert (body["status"], body["amount_captured"]) == ("captured", 1000)
    assert body["fees"] is not None and body["outcome"]["response_code"] == "00"
    assert event_types(payment["id"]) == [
        "payment.created",
        "payment.processing",
        "payment.captured",
    ]


def test_the_list_shows_no_processing_payment_past_its_time(api, clock):
    payment = created(api, ASYNC, capture_method="manual")
    clock.shift(datetime.timedelta(seconds=31))
    assert api.get("/v1/payments").json()["data"][0]["status"] == "authorized"
    assert status_of(payment["id"]) == "authorized"


def test_beat_resolves_due_processing_payments_once(api, clock):
    due, later = created(api, ASYNC), None
    clock.shift(datetime.timedelta(seconds=20))
    later = created(api, ASYNC)
    clock.shift(datetime.timedelta(seconds=10))
    assert tasks.resolve_due_payments() == 1
    assert (status_of(due["id"]), status_of(later["id"])) == ("captured", "processing")
    assert tasks.resolve_due_payments() == 0  # idempotent: nothing left to do
    assert event_types(due["id"]).count("payment.captured") == 1


@pytest.mark.parametrize(
    "number, fields, lifetime",
    [
        (None, {}, datetime.timedelta(hours=1)),
        (CHALLENGE, {}, datetime.timedelta(hours=1)),
        (APPROVED, {"capture_method": "manual"}, datetime.timedelta(days=7)),
    ],
)
def test_beat_expires_after_the_lifetime(api, clock, number, fields, lifetime):
    payment = created(api, number, **fields)
    clock.shift(lifetime - datetime.timedelta(seconds=1))
    tasks.expire_due_payments()
    assert status_of(payment["id"]) == payment["status"]
    clock.shift(datetime.timedelta(seconds=1))
    assert tasks.expire_due_payments() == 1
    body = api.get(f"/v1/payments/{payment['id']}").json()
    assert body["status"] == "expired" and "next_action" not in body
    assert event_types(payment["id"])[-1] == "payment.expired"
    tasks.expire_due_payments()
    assert event_types(payment["id"]).count("payment.expired") == 1


def test_captured_payments_never_expire(api, clock):
    payment = created(api, APPROVED)
    clock.shift(datetime.timedelta(days=30))
    tasks.expire_due_payments()
    assert status_of(payment["id"]) == "captured"


def test_a_confirmed_payment_gets_a_fresh_lifetime(api, clock):
    pending = created(api, None, capture_method="manual")
    clock.shift(datetime.timedelta(minutes=59))
    assert confirm(api, pending["id"]).json()["status"] == "authorized"
    clock.shift(datetime.timedelta(minutes=2))
    tasks.expire_due_payments()
    assert status_of(pending["id"]) == "authorized"


def test_expiry_works_in_batches(merchant, clock, monkeypatch):
    monkeypatch.setattr(tasks, "BATCH_SIZE", 2)
    PaymentFactory.create_batch(5, merchant=merchant, due_at=T0 - datetime.timedelta(seconds=1))
    assert tasks.expire_due_payments() == 5
    assert set(Payment.objects.values_list("status", flat=True)) == {"expired"}


def test_beat_entries_name_real_tasks_and_expire_before_the_next_run(settings):
    entries = settings.CELERY_BEAT_SCHEDULE
    assert {
        "payments-resolve-due",
        "payments-expire-due",
        "payments-purge-unused-tokens",
        "sandbox-purge-challenge-sessions",
    } <= set(entries)
    for entry in entries.values():
        task = import_string(entry["task"])  # imports its module, as the worker's discovery does
        assert task.name == entry["task"] and task.name in current_app.tasks
        assert 0 < entry["options"]["expires"] < entry["schedule"]


def test_a_payment_the_connector_cannot_serve_does_not_stop_the_sweep(merchant, clock, caplog):
    stuck = PaymentFactory(merchant=merchant, processing=True, livemode=True)
    fine = PaymentFactory(merchant=merchant, processing=True)
    clock.shift(datetime.timedelta(seconds=31))
    tasks.resolve_due_payments()
    assert (status_of(stuck.id), status_of(fine.id)) == ("processing", "captured")
    assert stuck.id in caplog.text and "no_route" in caplog.text


@pytest.mark.parametrize(
    "number, fields, lifetime, action, refusal",
    [
        (
            APPROVED,
            {"capture_method": "manual"},
            datetime.timedelta(days=7),
            "captures",
            "capturable",
        ),
        (
            APPROVED,
            {"capture_method": "manual"},
            datetime.timedelta(days=7),
            "cancel",
            "cancelable",
        ),
        (None, {}, datetime.timedelta(hours=1), "cancel", "cancelable"),
        (CHALLENGE, {}, datetime.timedelta(hours=1), "cancel", "cancelable"),
    ],
)
def test_a_lapsed_payment_is_expired_before_the_sweep_comes_and_the_action_refused(
    api, clock, number, fields, lifetime, action, refusal
):
    """Spec "Payment statuses": authorized expires after 7 days, pending and requires_action
    after 1 hour. Between that moment and the next sweep a capture used to take the lapsed
    authorisation (and a cancel void it)."""
    payment = created(api, number, **fields)
    clock.shift(lifetime)
    response = api.post(f"/v1/payments/{payment['id']}/{action}", {}, format="json")
    error = error_of(response, 422, "processing_error", f"payment_not_{refusal}")
    assert "expired" in error["message"]
    body = api.get(f"/v1/payments/{payment['id']}").json()
    assert (body["status"], body["amount_captured"], body["canceled_at"]) == ("expired", 0, None)
    assert event_types(payment["id"])[-1] == "payment.expired"
    assert tasks.expire_due_payments() == 0  # nothing left for the sweep


def test_a_lapsed_pending_payment_is_not_confirmed_and_the_token_stays_unspent(api, clock):
    pending = created(api, None)
    clock.shift(datetime.timedelta(hours=1))
    token = tokenize(api)  # made after the lapse: itself valid
    body = {"payment_method": {"type": "card", "token": token}}
    response = api.post(f"/v1/payments/{pending['id']}/confirm", body, format="json")
    error_of(response, 422, "processing_error", "payment_not_confirmable")
    assert status_of(pending["id"]) == "expired"
    assert Token.objects.get(pk=token).used_at is None


def test_a_read_after_the_lifetime_shows_the_payment_expired(api, clock):
    authorized = created(api, APPROVED, capture_method="manual")
    pending = created(api, None)
    clock.shift(datetime.timedelta(hours=1))
    assert api.get(f"/v1/payments/{pending['id']}").json()["status"] == "expired"
    listed = {item["id"]: item["status"] for item in api.get("/v1/payments").json()["data"]}
    assert listed == {authorized["id"]: "authorized", pending["id"]: "expired"}
    clock.shift(datetime.timedelta(days=7))
    assert api.get(f"/v1/payments/{authorized['id']}").json()["status"] == "expired"
    assert event_types(pending["id"]).count("payment.expired") == 1
    assert event_types(authorized["id"])[-1] == "payment.expired"
    assert tasks.expire_due_payments() == 0
