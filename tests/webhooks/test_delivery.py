"""Delivery logic against a real HTTPS receiver on loopback.

How delivery is driven here: the service functions the Celery tasks call (`events_fan_out`,
`delivery_run`, `due_delivery_ids`, `undispatched_event_ids`) are called synchronously in the
test process, so each test is about the delivery logic and runs in milliseconds; time moves
with time-machine. The broker is not mocked: where the after-commit hook runs it enqueues to
the real Redis (or embedded) broker. A real Celery worker process is started only in
test_worker_e2e.py.
"""

import datetime
import hashlib
import hmac
import json

import pytest
import stripe
import time_machine
from django.core import mail
from django.db import transaction
from django.utils import timezone

from config.celery import app
from events.models import Event
from events.services import emit
from webhooks import transport
from webhooks.attempts import deliveries_drain, delivery_attempt, delivery_run
from webhooks.bulkhead import ENQUEUED_GRACE, LEASE, MAX_IN_FLIGHT_PER_ENDPOINT
from webhooks.claims import delivery_claim, due_delivery_ids
from webhooks.fanout import events_fan_out
from webhooks.models import Attempt, Delivery
from webhooks.selectors import undispatched_event_ids
from webhooks.services import endpoint_create, endpoint_delete, endpoint_roll_secret
from webhooks.tasks import QUEUES, deliver_due, dispatch_events, send_dead_letter_digests

pytestmark = pytest.mark.django_db
MAX_IN_FLIGHT = MAX_IN_FLIGHT_PER_ENDPOINT
REFUND = {"id": "ref_01J0000000000000000000000A"}


def fan_out_one(event):
    """The event's one delivery (nudged or not: an endpoint gets as many nudges as it has free
    places)."""
    events_fan_out([event.id])
    (delivery_id,) = Delivery.objects.filter(event=event).values_list("pk", flat=True)
    return delivery_id


def signatures(header: str) -> tuple[int, list[str]]:
    parts = [part.split("=", 1) for part in header.split(",")]
    timestamp = int(next(value for key, value in parts if key == "t"))
    return timestamp, [value for key, value in parts if key == "v1"]


def verifies(secret: str, header: str, body: bytes) -> bool:
    timestamp, v1s = signatures(header)
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return any(hmac.compare_digest(expected.hexdigest(), v1) for v1 in v1s)


def test_event_is_delivered_signed_with_the_spec_headers(receiver, endpoint_for, emit_event):
    endpoint, secret = endpoint_for(receiver)
    event = emit_event()
    attempt = delivery_run(fan_out_one(event))

    assert attempt.status == "delivered" and attempt.http_status == 200
    assert (attempt.attempt, attempt.response_body, attempt.error) == (1, "ok", None)
    assert attempt.next_retry_at is None and attempt.id.startswith("wha_")
    (request,) = receiver.requests
    assert request.path == "/hooks"
    headers = request.headers
    assert headers["Service-Event-Id"] == event.id == headers["Idempotency-Key"]
    assert headers["Service-Event-Type"] == "payment.captured"
    assert headers["Content-Type"] == "application/json; charset=utf-8"
    assert headers["Host"] == f"localhost:{receiver.port}"
    payload = json.loads(request.body)
    assert payload["id"] == event.id and payload["object"] == "event"
    assert payload["data"]["previous_attributes"] == {"status": "authorized"}
    assert "attempts" not in payload
    # Verified from the raw body, by hand and by an independent verifier of the scheme.
    signature = headers["Service-Signature"]
    assert verifies(secret, signature, request.body)
    assert not verifies(secret, signature, request.body + b" ")
    assert stripe.WebhookSignature.verify_header(
        request.body.decode(), signature, secret, tolerance=300
    )
    assert abs(signatures(signature)[0] - timezone.now().timestamp()) < 5
    delivery = Delivery.objects.get(pk=attempt.delivery_id)
    assert (delivery.status, delivery.next_attempt_at, delivery.claimed_until) == (
        "delivered",
        None,
        None,
    )
    assert delivery_run(delivery.id) is None  # a duplicate task finds nothing to do


def test_after_a_roll_both_secrets_sign_for_24_hours(receiver, endpoint_for, emit_event):
    endpoint, old_secret = endpoint_for(receiver)
    new_secret = endpoint_roll_secret(endpoint=endpoint).secret
    delivery_run(fan_out_one(emit_event()))
    body, header = receiver.requests[0].body, receiver.requests[0].headers["Service-Signature"]
    assert len(signatures(header)[1]) == 2
    for secret in (old_secret, new_secret):
        assert stripe.WebhookSignature.verify_header(body.decode(), header, secret, 300)

    with time_machine.travel(timezone.now() + datetime.timedelta(hours=24, seconds=1)):
        delivery_run(fan_out_one(emit_event()))
    body, header = receiver.requests[1].body, receiver.requests[1].headers["Service-Signature"]
    assert len(signatures(header)[1]) == 1
    assert verifies(new_secret, header, body) and not verifies(old_secret, header, body)


def test_fan_out_matches_patterns_mode_and_runs_once(receiver, endpoint_for, emit_event):
    payments, _ = endpoint_for(receiver, enabled_events=["payment.*"])
    endpoint_for(receiver, enabled_events=["refund.created"])
    everything, _ = endpoint_for(receiver)
    endpoint_for(receiver, livemode=True)
    deleted, _ = endpoint_for(receiver)
    endpoint_delete(endpoint=deleted)

    event = emit_event("payment.captured")
    delivery_ids = events_fan_out([event.id])
    assert {Delivery.objects.get(pk=i).endpoint_id for i in delivery_ids} == {
        payments.id,
        everything.id,
    }
    assert Event.objects.get(pk=event.id).dispatched_at is not None
    assert events_fan_out([event.id]) == []


def test_the_fan_out_hook_writes_deliveries_with_the_event_and_nudges_after_commit(
    receiver, endpoint_for, emit_event, django_capture_on_commit_callbacks
):
    endpoint_for(receiver)
    with django_capture_on_commit_callbacks() as nudges:
        event = emit_event(hooks=True)
    assert Event.objects.get(pk=event.id).dispatched_at is not None
    assert len(nudges) == 1  # one nudge for the transaction's deliveries, sent after commit
    nudges[0]()
    (delivery,) = Delivery.objects.filter(event=event, status="pending")
    assert due_delivery_ids() == []  # its nudge is in the broker: the tick adds no second one
    with time_machine.travel(timezone.now() + ENQUEUED_GRACE + datetime.timedelta(seconds=1)):
        assert due_delivery_ids() == [delivery.id]  # that nudge was lost: the tick sends another
        deliver_due()
        assert due_delivery_ids() == []


def failing_run(receiver, delivery_id):
    attempt = delivery_run(delivery_id)
    assert attempt is not None and attempt.status == "failed"
    return attempt


def test_retry_schedule_then_dead_letter_and_email(receiver, endpoint_for, emit_event, merchant):
    receiver.reply.status, receiver.reply.body = 500, b"boom"
    endpoint, _ = endpoint_for(receiver)
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        event = emit_event()
        delivery_id = fan_out_one(event)
        attempt = failing_run(receiver, delivery_id)
        delays = []
        while attempt.next_retry_at is not None:
            delay = attempt.next_retry_at - attempt.attempted_at
            delays.append(int(delay.total_seconds()))
            clock.shift(delay - datetime.timedelta(seconds=1))
            assert due_delivery_ids() == [] and delivery_run(delivery_id) is None
            clock.shift(datetime.timedelta(seconds=1))
            assert due_delivery_ids() == [delivery_id]
            attempt = failing_run(receiver, delivery_id)

    assert delays == [10, 60, 300, 1800, 7200, 21600, 86400]
    attempts = Attempt.objects.filter(delivery_id=delivery_id).order_by("attempt")
    assert [a.attempt for a in attempts] == list(range(1, 9))
    assert {(a.http_status, a.response_body) for a in attempts} == {(500, "boom")}
    assert "HTTP 500" in attempts[0].error
    assert len(receiver.requests) == 8
    assert Delivery.objects.get(pk=delivery_id).status == "dead_lettered"
    assert Event.objects.get(pk=event.id).dead_lettered_at is not None
    assert mail.outbox == []  # no email per event: the digest names it
    assert send_dead_letter_digests() == 1
    (email,) = mail.outbox
    assert email.to == [merchant.email] and endpoint.id in email.subject
    assert event.id in email.body and endpoint.url in email.body
    assert "svc_whsec_" not in email.body


def test_each_attempt_is_signed_at_its_own_time(receiver, endpoint_for, emit_event):
    # A receiver rejects a `t` more than 300 s old, so a retry must not reuse the first one.
    receiver.reply.status = 500
    _, secret = endpoint_for(receiver)
    with time_machine.travel(timezone.now(), tick=False) as clock:
        delivery_id = fan_out_one(emit_event())
        first = failing_run(receiver, delivery_id)
        clock.shift(datetime.timedelta(hours=1))
        receiver.reply.status = 200
        second = delivery_run(delivery_id)
    assert second.status == "delivered"
    for request, attempt in zip(receiver.requests, (first, second), strict=True):
        header = request.headers["Service-Signature"]
        assert signatures(header)[0] == int(attempt.attempted_at.timestamp())
        assert verifies(secret, header, request.body)


def test_the_timeout_is_10_seconds_and_the_sweeper_runs_every_5_minutes(
    receiver, endpoint_for, emit_event, settings
):
    from webhooks import transport

    endpoint_for(receiver)
    delivery_run(fan_out_one(emit_event()))
    pools = list(transport._pools._pools.values())
    assert pools and {(p.timeout.connect_timeout, p.timeout.read_timeout) for p in pools} == {
        (10, 10)
    }
    sweep = settings.CELERY_BEAT_SCHEDULE["webhooks-sweep"]
    assert (sweep["task"], sweep["schedule"]) == ("webhooks.tasks.sweep_undispatched", 300.0)


def test_no_retry_past_72_hours_after_the_event(receiver, endpoint_for, emit_event):
    receiver.reply.status = 503
    endpoint_for(receiver)
    event = emit_event()
    Event.objects.filter(pk=event.id).update(
        created=timezone.now() - datetime.timedelta(hours=72) + datetime.timedelta(seconds=5)
    )
    attempt = failing_run(receiver, fan_out_one(event))
    assert attempt.next_retry_at is None
    assert Delivery.objects.get(pk=attempt.delivery_id).status == "dead_lettered"
    assert send_dead_letter_digests() == 1 and len(mail.outbox) == 1


def test_a_redirect_is_a_failure_and_is_not_followed(receiver, endpoint_for, emit_event):
    receiver.reply.status = 302
    receiver.reply.headers = {"Location": receiver.url("/elsewhere")}
    endpoint_for(receiver)
    attempt = failing_run(receiver, fan_out_one(emit_event()))
    assert attempt.http_status == 302 and "redirect" in attempt.error
    assert [r.path for r in receiver.requests] == ["/hooks"]
    assert attempt.next_retry_at is not None


def test_only_the_first_2_kb_of_the_response_is_stored(receiver, endpoint_for, emit_event):
    receiver.reply.body = b"x" * 5000
    endpoint_for(receiver)
    attempt = delivery_run(fan_out_one(emit_event()))
    assert attempt.status == "delivered" and attempt.response_body == "x" * 2048


def test_tls_verifies_the_host_name_not_the_address(receiver, merchant, emit_event):
    from webhooks.services import endpoint_create

    # The certificate names only "localhost": the same server by IP must fail verification.
    endpoint_create(merchant=merchant, livemode=False, url=receiver.url(host="127.0.0.1"))
    attempt = failing_run(receiver, fan_out_one(emit_event()))
    # Told apart from a refused connection only in the log (issue 20: no network mapping).
    assert attempt.http_status == 0 and attempt.error == transport.CONNECTION_FAILED
    assert receiver.requests == []


def test_the_url_is_checked_again_before_every_delivery(
    receiver, endpoint_for, emit_event, settings
):
    endpoint_for(receiver)
    delivery_id = fan_out_one(emit_event())
    settings.WEBHOOK_ALLOWED_NETWORKS = []  # localhost now counts as internal again
    attempt = failing_run(receiver, delivery_id)
    assert attempt.error.startswith("private_address") and attempt.http_status == 0
    assert receiver.requests == [] and attempt.next_retry_at is not None


def test_a_dead_receiver_is_a_failed_attempt(receiver, endpoint_for, emit_event):
    endpoint_for(receiver)
    receiver.close()
    attempt = failing_run(receiver, fan_out_one(emit_event()))
    assert attempt.http_status == 0 and attempt.error == transport.CONNECTION_FAILED


def test_an_attempt_stored_with_a_null_status_reads_as_0(api, receiver, endpoint_for, emit_event):
    """Attempts stored before 0 meant "no response" keep their null (no table rewrite)."""
    endpoint_for(receiver)
    receiver.close()
    attempt = failing_run(receiver, fan_out_one(emit_event()))
    Attempt.objects.filter(pk=attempt.pk).update(http_status=None)
    (shown,) = api.get(f"/v1/events/{attempt.event_id}").json()["attempts"]
    assert shown["http_status"] == 0


def test_deleting_the_endpoint_cancels_what_is_pending(receiver, endpoint_for, emit_event):
    endpoint, _ = endpoint_for(receiver)
    delivery_id = fan_out_one(emit_event())
    in_flight = fan_out_one(emit_event())
    claimed = delivery_claim(in_flight)
    endpoint_delete(endpoint=endpoint)
    assert Delivery.objects.get(pk=delivery_id).status == "canceled"
    assert delivery_run(delivery_id) is None
    assert delivery_attempt(claimed).status == "delivered"  # one in flight finishes
    assert len(receiver.requests) == 1


def test_a_stuck_endpoint_does_not_take_every_worker(receiver, endpoint_for, emit_event):
    stuck, _ = endpoint_for(receiver, enabled_events=["payment.*"])
    healthy, _ = endpoint_for(receiver, enabled_events=["refund.*"])
    stuck_ids = [fan_out_one(emit_event()) for _ in range(MAX_IN_FLIGHT + 2)]
    waiting, queued_behind = stuck_ids[-2:]
    for delivery_id in stuck_ids[:MAX_IN_FLIGHT]:
        assert delivery_claim(delivery_id) is not None  # workers waiting on its receiver
    assert delivery_claim(waiting) is None  # merely busy: it stays due, without a nudge
    postponed = Delivery.objects.get(pk=waiting)
    assert (postponed.attempt_count, postponed.claimed_until) == (0, None)
    assert postponed.next_attempt_at <= timezone.now() and postponed.enqueued_until is None
    assert due_delivery_ids() == []  # nor does the beat tick nudge it while the endpoint is full
    refund = emit_event("refund.created", {"id": "ref_01J0000000000000000000000A"})
    assert delivery_claim(fan_out_one(refund)).endpoint_id == healthy.id

    with time_machine.travel(timezone.now() + datetime.timedelta(seconds=2)):
        assert delivery_claim(waiting) is None  # its workers hang: wait out the timeout
        for delivery_id in (waiting, queued_behind):  # every waiting delivery, in one go
            row = Delivery.objects.get(pk=delivery_id)
            assert row.next_attempt_at - timezone.now() >= datetime.timedelta(seconds=9)
            assert row.attempt_count == 0
        assert delivery_claim(queued_behind) is None  # its queued nudge is a no-op now

    with time_machine.travel(timezone.now() + LEASE):  # the stuck workers' leases run out
        assert delivery_run(waiting).status == "delivered"


def test_an_account_with_every_place_taken_waits_and_its_neighbours_do_not(
    receiver, endpoint_for, emit_event, other_merchant, settings
):
    """issue 20: a merchant whose endpoints all hang took every worker thread, none of its
    endpoints full. Its account (merchant and mode) has WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT
    places (12)."""
    for _ in range(3):
        endpoint_for(receiver)
    events = [emit_event() for _ in range(5)]  # three deliveries each
    deliveries = [fan_out_one_of(event) for event in events]
    taken = [d for per_event in deliveries[:4] for d in per_event]
    assert (
        len(taken) == settings.WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT
    )  # four per endpoint: none of them full
    for delivery_id in taken:
        assert delivery_claim(delivery_id) is not None  # workers waiting on its receivers
    waiting = deliveries[4][0]
    assert delivery_claim(waiting) is None  # the account is full: it stays due, un-nudged
    row = Delivery.objects.get(pk=waiting)
    assert (row.attempt_count, row.claimed_until, row.enqueued_until) == (0, None, None)
    assert row.next_attempt_at <= timezone.now()

    endpoint_create(merchant=other_merchant, livemode=False, url=receiver.url())
    with transaction.atomic():
        neighbours = emit(
            merchant=other_merchant, livemode=False, type="refund.created", obj=REFUND
        )
    (neighbour,) = fan_out_one_of(neighbours)
    assert deliveries_drain(livemode=False) is False  # the neighbour's, none of the full one's
    assert Delivery.objects.get(pk=neighbour).status == "delivered"
    assert Delivery.objects.filter(status="delivered").count() == 1


def test_each_nudge_goes_to_the_worker_pool_of_its_mode(receiver, endpoint_for, emit_event):
    """Live and test deliveries have queues (and Procfile worker pools) of their own, so live
    ones never wait behind test ones (issue 20)."""
    endpoint_for(receiver)
    endpoint_for(receiver, livemode=True)
    with app.connection_for_write() as conn:
        for queue in QUEUES.values():
            conn.default_channel.queue_purge(queue)
        events = [emit_event(), emit_event(), emit_event(livemode=True)]
        # The sweeper's fan-out, whose nudges take their mode from the rows.
        dispatch_events([event.id for event in events])
        queued = {
            livemode: conn.default_channel.queue_declare(queue).message_count
            for livemode, queue in QUEUES.items()
        }
    assert queued == {True: 1, False: 2}


def fan_out_one_of(event) -> list[str]:
    events_fan_out([event.id])
    return list(Delivery.objects.filter(event=event).order_by("id").values_list("pk", flat=True))


def test_a_lost_nudge_is_recovered_by_the_sweeper(receiver, endpoint_for, emit_event):
    endpoint_for(receiver)
    event = emit_event()  # committed, but its after-commit nudge never ran
    assert undispatched_event_ids() == []  # still within the grace of its own nudge
    with time_machine.travel(timezone.now() + datetime.timedelta(minutes=2)):
        assert undispatched_event_ids() == [event.id]
        dispatch_events([event.id])  # what the sweeper enqueues
        attempt = delivery_run(Delivery.objects.get(event=event).id)
    assert attempt.status == "delivered"
    assert receiver.requests[0].headers["Service-Event-Id"] == event.id


def test_fan_out_does_not_nudge_a_hanging_endpoint(receiver, endpoint_for, emit_event):
    hanging, _ = endpoint_for(receiver, enabled_events=["payment.*"])
    healthy, _ = endpoint_for(receiver, enabled_events=["payment.*"])
    fanned_out = [d for _ in range(MAX_IN_FLIGHT) for d in events_fan_out([emit_event().id])]
    for delivery in Delivery.objects.filter(pk__in=fanned_out):
        if delivery.endpoint_id == hanging.id:
            assert delivery_claim(delivery.id) is not None  # workers waiting on its receiver
        else:
            assert delivery_run(delivery.id).status == "delivered"
    with time_machine.travel(timezone.now() + datetime.timedelta(seconds=2)):
        event = emit_event()
        nudged = events_fan_out([event.id])
        waiting = Delivery.objects.get(event=event, endpoint=hanging)
        assert nudged == [Delivery.objects.get(event=event, endpoint=healthy).id]
        assert waiting.next_attempt_at - timezone.now() >= datetime.timedelta(seconds=9)
        assert waiting.enqueued_until is None  # the beat tick enqueues it when its wait ends


def test_an_endpoint_gets_no_more_nudges_than_it_has_free_places(
    receiver, endpoint_for, emit_event
):
    endpoint_for(receiver)
    events = [emit_event() for _ in range(MAX_IN_FLIGHT + 3)]
    nudged = [d for event in events for d in events_fan_out([event.id])]
    fanned_out = [Delivery.objects.get(event=event).id for event in events]
    assert nudged == fanned_out[:MAX_IN_FLIGHT]  # the rest wait, due, without a nudge
    assert due_delivery_ids() == []  # the tick adds none while those nudges are in the broker
    assert delivery_run(nudged[0]).status == "delivered"  # one place is free again
    assert due_delivery_ids() == [fanned_out[MAX_IN_FLIGHT]]
    with time_machine.travel(timezone.now() + ENQUEUED_GRACE + datetime.timedelta(seconds=1)):
        # The nudges sent were lost: the tick sends as many again, oldest first.
        assert due_delivery_ids() == fanned_out[1 : MAX_IN_FLIGHT + 1]


def test_a_nudge_goes_on_to_whatever_is_due_except_to_full_endpoints(
    receiver, endpoint_for, emit_event
):
    full, _ = endpoint_for(receiver, enabled_events=["payment.*"])
    endpoint_for(receiver, enabled_events=["refund.*"])
    payments = [fan_out_one(emit_event()) for _ in range(MAX_IN_FLIGHT + 1)]
    for delivery_id in payments[:MAX_IN_FLIGHT]:
        assert delivery_claim(delivery_id) is not None  # in flight: the endpoint is full

    def refunds(count):
        return [fan_out_one(emit_event("refund.created", REFUND)) for _ in range(count)]

    due = refunds(3)
    assert deliveries_drain(livemode=False) is False  # nothing left that it may take
    delivered = Delivery.objects.filter(status="delivered").values_list("pk", flat=True)
    assert sorted(delivered) == sorted(due)
    assert Delivery.objects.get(pk=payments[-1]).attempt_count == 0  # waits for a free place

    due = refunds(2)
    out_of_time = deliveries_drain(livemode=False, seconds=0)
    assert out_of_time is True  # after one: the task nudges again
    assert Delivery.objects.filter(pk__in=due, status="delivered").count() == 1


def test_the_beat_tick_postpones_a_hanging_endpoint(receiver, endpoint_for, emit_event):
    endpoint_for(receiver)
    deliveries = [fan_out_one(emit_event()) for _ in range(MAX_IN_FLIGHT + 2)]
    for delivery_id in deliveries[:MAX_IN_FLIGHT]:
        assert delivery_claim(delivery_id) is not None  # workers waiting on its receiver
    assert due_delivery_ids() == []  # full, perhaps only busy: its workers take the rest
    with time_machine.travel(timezone.now() + datetime.timedelta(seconds=2)):
        assert due_delivery_ids() == []  # hanging: the rest wait out the timeout
        for waiting in Delivery.objects.filter(pk__in=deliveries[MAX_IN_FLIGHT:]):
            assert waiting.next_attempt_at - timezone.now() >= datetime.timedelta(seconds=9)


def test_a_dripping_receiver_ends_as_a_timed_out_attempt(
    receiver, endpoint_for, emit_event, monkeypatch
):
    from webhooks import transport

    monkeypatch.setattr(transport, "TIMEOUT_SECONDS", 0.3)
    receiver.reply.drip = 0.05  # 2 s for the whole answer, no read waiting more than 0.05 s
    endpoint_for(receiver)
    attempt = delivery_run(fan_out_one(emit_event()))
    assert attempt.status == "failed" and attempt.http_status == 0
    assert attempt.error.startswith("timeout:")
    delivery = Delivery.objects.get(pk=attempt.delivery_id)
    assert delivery.claimed_until is None and delivery.status == "pending"  # the place is free


def test_a_response_with_a_nul_byte_is_stored(receiver, endpoint_for, emit_event):
    # PostgreSQL text cannot hold NUL: unstored, the delivery was claimed again after every
    # lease, forever.
    receiver.reply.status, receiver.reply.body = 500, b"bad\x00byte"
    endpoint_for(receiver)
    attempt = failing_run(receiver, fan_out_one(emit_event()))
    stored = Attempt.objects.get(pk=attempt.id)
    assert stored.response_body == "bad\ufffdbyte" and stored.http_status == 500
    assert Delivery.objects.get(pk=attempt.delivery_id).attempt_count == 1


def test_a_secret_that_cannot_be_decrypted_is_a_failed_attempt(
    receiver, endpoint_for, emit_event, settings
):
    settings.WEBHOOK_ENCRYPTION_KEYS = []  # the key is derived from SECRET_KEY
    endpoint_for(receiver)
    delivery_id = fan_out_one(emit_event())
    settings.SECRET_KEY = "rotated-" + settings.SECRET_KEY
    attempt = failing_run(receiver, delivery_id)
    assert attempt.http_status == 0 and attempt.error.startswith("signing secret:")
    assert "WEBHOOK_ENCRYPTION_KEYS" in attempt.error
    assert receiver.requests == []  # nothing is sent unsigned
    delivery = Delivery.objects.get(pk=delivery_id)
    assert (delivery.attempt_count, delivery.claimed_until) == (1, None)
    assert delivery.next_attempt_at == attempt.next_retry_at  # on the schedule, to a dead letter
