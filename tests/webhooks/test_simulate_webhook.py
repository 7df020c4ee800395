"""POST /v1/sandbox/simulate-webhook (spec "Test-mode endpoints"): stored like a real event,
delivered inline to a real HTTPS receiver, 201 with the event and its attempts."""

import datetime
import json
from concurrent.futures import ThreadPoolExecutor

import pytest
import stripe
import time_machine
from django.db import connection

from events.models import Event
from tests.conftest import key_client
from tests.e2e.processes import wait_for
from tests.webhooks.conftest import payment_object
from webhooks import transport
from webhooks.attempts import delivery_run
from webhooks.models import Attempt, Delivery

pytestmark = pytest.mark.django_db

FAKE_PAYMENT = "pay_0000000000000000000000TEST"


def simulate(api, **body):
    return api.post("/v1/sandbox/simulate-webhook", body, format="json")


ERROR_TYPE_BY_STATUS = {
    400: "validation_error",
    403: "authorization_error",
    404: "not_found_error",
    422: "processing_error",
    429: "rate_limit_error",
}


def error_of(response, status, code):
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert (error["type"], error["code"]) == (ERROR_TYPE_BY_STATUS[status], code)
    return error


def test_delivered_inline_signed_and_stored(api, receiver, endpoint_for):
    endpoint, secret = endpoint_for(receiver)
    response = simulate(api, type="payment.captured")
    assert response.status_code == 201
    body = response.json()
    assert body["id"].startswith("evt_") and body["livemode"] is False
    assert body["type"] == "payment.captured"
    assert body["data"]["object"]["id"] == FAKE_PAYMENT
    assert body["data"]["object"]["status"] == "captured"
    (attempt,) = body["attempts"]
    assert (attempt["endpoint"], attempt["status"], attempt["http_status"]) == (
        endpoint.id,
        "delivered",
        200,
    )
    (request,) = receiver.requests
    assert json.loads(request.body)["id"] == body["id"]
    assert stripe.WebhookSignature.verify_header(
        request.body.decode(), request.headers["Service-Signature"], secret, 300
    )
    stored = Event.objects.get(pk=body["id"])
    assert stored.livemode is False and stored.dispatched_at is not None
    assert Delivery.objects.get(event=stored).status == "delivered"


def test_a_failing_receiver_shows_in_the_response_and_is_retried(api, receiver, endpoint_for):
    receiver.reply.status, receiver.reply.body = 500, b"nope"
    endpoint_for(receiver)
    (attempt,) = simulate(api, type="refund.failed").json()["attempts"]
    assert (attempt["status"], attempt["http_status"], attempt["response_body"]) == (
        "failed",
        500,
        "nope",
    )
    assert attempt["next_retry_at"] is not None


def test_a_dripping_receiver_does_not_hold_the_web_thread(api, receiver, endpoint_for, monkeypatch):
    from webhooks import transport

    monkeypatch.setattr(transport, "TIMEOUT_SECONDS", 0.3)
    receiver.reply.drip = 0.05  # 2 s for the whole answer, no read waiting more than 0.05 s
    endpoint_for(receiver)
    response = simulate(api, type="payment.captured")
    assert response.status_code == 201
    (attempt,) = response.json()["attempts"]
    assert (attempt["status"], attempt["http_status"]) == ("failed", 0)
    assert attempt["error"].startswith("timeout:")


def test_only_the_named_endpoint(api, receiver, endpoint_for):
    endpoint_for(receiver)
    chosen, _ = endpoint_for(receiver)
    attempts = simulate(api, type="payment.created", endpoint=chosen.id).json()["attempts"]
    assert [a["endpoint"] for a in attempts] == [chosen.id]


def test_without_endpoint_every_subscribed_endpoint_gets_it(api, receiver, endpoint_for):
    everything, _ = endpoint_for(receiver)
    payments, _ = endpoint_for(receiver, enabled_events=["payment.*"])
    endpoint_for(receiver, enabled_events=["refund.*"])
    endpoint_for(receiver, livemode=True)
    attempts = simulate(api, type="payment.captured").json()["attempts"]
    assert sorted(a["endpoint"] for a in attempts) == sorted([everything.id, payments.id])
    assert len(receiver.requests) == 2


def test_nothing_subscribed_is_422_and_stores_nothing(api, receiver, endpoint_for):
    endpoint, _ = endpoint_for(receiver, enabled_events=["refund.*"])
    error_of(simulate(api, type="payment.captured"), 422, "no_matching_endpoint")
    error_of(
        simulate(api, type="payment.captured", endpoint=endpoint.id), 422, "no_matching_endpoint"
    )
    assert not Event.objects.exists()


def test_the_resource_is_the_newest_rendering_of_a_real_one(
    api, receiver, endpoint_for, emit_event
):
    endpoint_for(receiver)
    older = payment_object("pay_01J0000000000000000000000A", status="authorized")
    emit_event("payment.authorized", older)
    newest = payment_object("pay_01J0000000000000000000000B", status="captured")
    emit_event("payment.captured", newest)
    emit_event("payment.captured", {**older, "status": "captured"})
    emit_event("payment.created", payment_object("pay_01J0000000000000000000000C"), livemode=True)

    omitted = simulate(api, type="payment.captured").json()
    assert omitted["data"]["object"] == {**older, "status": "captured"}
    by_id = simulate(api, type="payment.captured", resource=newest["id"]).json()
    assert by_id["data"]["object"] == newest
    error = error_of(
        simulate(api, type="payment.captured", resource="pay_01J00000000000000000000ZZZ"),
        404,
        "resource_not_found",
    )
    assert error["param"] == "resource"
    error = error_of(
        simulate(api, type="payment.captured", resource=newest["id"].replace("pay", "ref")),
        400,
        "invalid_parameter",
    )
    assert error["param"] == "resource"


def test_without_resource_the_newest_resource_that_fits_the_type(
    api, receiver, endpoint_for, emit_event
):
    """issue 24: a newer pending payment is not what a payment.captured carries."""
    endpoint_for(receiver)
    captured = payment_object("pay_01J0000000000000000000000A", status="captured")
    emit_event("payment.captured", captured)
    emit_event("payment.created", payment_object("pay_01J0000000000000000000000B", "pending"))
    refund = {"id": "ref_01J0000000000000000000000A", "object": "refund", "status": "succeeded"}
    emit_event("refund.succeeded", refund)
    emit_event("refund.created", {**refund, "id": "ref_01J0000000000000000000000B"})

    assert simulate(api, type="payment.captured").json()["data"]["object"] == captured
    assert simulate(api, type="refund.succeeded").json()["data"]["object"] == refund
    # Nothing of that type yet: the sample, in the state the type implies.
    sample = simulate(api, type="payment.failed").json()["data"]["object"]
    assert (sample["id"], sample["status"]) == (FAKE_PAYMENT, "failed")


@pytest.mark.parametrize(
    "event_type, object_type, fake_id",
    [
        ("refund.succeeded", "refund", "ref_0000000000000000000000TEST"),
        ("payout.paid", "payout", "po_0000000000000000000000TEST"),
        ("checkout_session.completed", "checkout_session", "cs_0000000000000000000000TEST"),
    ],
)
def test_synthetic_samples_have_obviously_fake_ids(
    api, receiver, endpoint_for, event_type, object_type, fake_id
):
    endpoint_for(receiver)
    sample = simulate(api, type=event_type).json()["data"]["object"]
    assert (sample["id"], sample["object"], sample["livemode"]) == (fake_id, object_type, False)


def test_type_must_be_an_event_type(api, receiver, endpoint_for):
    endpoint_for(receiver)
    assert error_of(simulate(api, type="payment.exploded"), 400, "invalid_parameter")["param"] == (
        "type"
    )
    assert error_of(simulate(api), 400, "invalid_parameter")["param"] == "type"


@pytest.mark.parametrize("param", ["endpoint", "resource"])
def test_ids_must_be_strings(api, receiver, endpoint_for, param):
    endpoint_for(receiver)
    response = simulate(api, type="payment.captured", **{param: 5})
    assert error_of(response, 400, "invalid_parameter")["param"] == param
    assert not Event.objects.exists()


def in_the_background(call, *args, **kwargs):
    """Runs `call` on another thread (its own database connection: the tests that use it
    commit), while the test looks at what it holds; `.result()` waits for it."""

    def run():
        try:
            return call(*args, **kwargs)
        finally:
            connection.close()  # the thread's own: the test database is dropped at the end

    pool = ThreadPoolExecutor(1)
    future = pool.submit(run)
    pool.shutdown(wait=False)
    return future


@pytest.mark.django_db(transaction=True)
def test_every_endpoint_is_attempted_at_once(api, receiver, endpoint_for, monkeypatch):
    """issue 20: one endpoint after another, n hanging endpoints held the web thread n times
    15 s (16 of them: 4 minutes). Now all are asked at once: the call lasts one attempt.
    The attempt's timeout is longer than the wait, so one after another never reaches four
    (the wait is long only so that a loaded machine does not fail it)."""
    monkeypatch.setattr(transport, "TIMEOUT_SECONDS", 120)
    receiver.reply.hold = True
    endpoints = sorted(endpoint_for(receiver)[0].id for _ in range(4))
    call = in_the_background(simulate, api, type="payment.captured")
    try:
        wait_for(lambda: len(receiver.requests) == 4, timeout=60)  # none answered yet
    finally:
        receiver.release.set()
    response = call.result(30)
    assert response.status_code == 201
    attempts = response.json()["attempts"]
    assert sorted(a["endpoint"] for a in attempts) == endpoints
    assert {(a["attempt"], a["status"]) for a in attempts} == {(1, "delivered")}


@pytest.mark.django_db(transaction=True)
def test_one_call_over_the_merchants_cap_is_429_and_stores_nothing(
    api, new_merchant, receiver, endpoint_for, settings, monkeypatch
):
    """issue 20: eight calls at once held eight web threads for minutes. The calls share
    simulated latency's per-merchant slots (SANDBOX_LATENCY_CONCURRENCY)."""
    monkeypatch.setattr(transport, "TIMEOUT_SECONDS", 2)
    settings.SANDBOX_LATENCY_CONCURRENCY = 1
    receiver.reply.hold = True
    endpoint_for(receiver)
    other_client = key_client(new_merchant.keys["test"]["secret"].secret)  # the same key
    call = in_the_background(simulate, other_client, type="payment.captured")
    try:
        assert receiver.arrived.wait(5)
        refused = simulate(api, type="payment.captured")
    finally:
        receiver.release.set()
    assert call.result(30).status_code == 201
    assert error_of(refused, 429, "rate_limit_exceeded") and refused["Retry-After"] == "1"
    assert Event.objects.count() == 1 and len(receiver.requests) == 1  # nothing more
    receiver.reply.hold = False
    assert simulate(api, type="payment.captured").status_code == 201  # the slot came back


@pytest.mark.django_db(transaction=True)
def test_an_attempt_taken_over_by_the_worker_is_recorded_once(api, receiver, endpoint_for):
    """issue 20: when the inline attempts outlived their lease, the worker sent attempt #1
    again and the web side then failed on the unique attempt number (500). Now the one whose
    lease is no longer its own records nothing: one attempt #1, and a 201."""
    receiver.reply.hold = True
    endpoint_for(receiver)
    call = in_the_background(simulate, api, type="payment.captured")
    try:
        assert receiver.arrived.wait(5)
        delivery = Delivery.objects.get()
        receiver.reply.hold = False  # the worker's request is answered at once
        with time_machine.travel(delivery.claimed_until + datetime.timedelta(seconds=1)):
            taken_over = delivery_run(delivery.id)  # what the beat tick's nudge does
    finally:
        receiver.release.set()
    response = call.result(30)
    assert response.status_code == 201, response.content
    assert (taken_over.attempt, taken_over.status) == (1, "delivered")
    assert [a["id"] for a in response.json()["attempts"]] == [taken_over.id]
    assert Attempt.objects.count() == 1 and len(receiver.requests) == 2


def test_live_keys_are_refused(live_api):
    error_of(simulate(live_api, type="payment.captured"), 403, "test_mode_required")
