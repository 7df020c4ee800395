"""POST /v1/sandbox/advance-clock/:id: one test payment's timed transitions, now
(docs/sandbox.md "Time travel")."""

import datetime

import pytest
from django.conf import settings
from django.utils import timezone

from events.models import Event
from infra import failpoints
from infra.failpoints import armed
from payments.models import Payment
from tests.payments.support import APPROVED, ASYNC, created, error_of, event_types
from tests.support.connectors import Crash

HOUR, DAY = 3600, 86_400


def advance(api, payment_id: str, seconds, **headers):
    return api.post(
        f"/v1/sandbox/advance-clock/{payment_id}", {"seconds": seconds}, format="json", **headers
    )


def test_an_authorization_expires_after_its_seven_days_with_its_event(api):
    payment = created(api, APPROVED, capture_method="manual")
    assert payment["status"] == "authorized" and "clock_advanced_by" not in payment

    moved = advance(api, payment["id"], 7 * DAY)

    assert moved.status_code == 200, moved.content
    assert (moved.json()["status"], moved.json()["clock_advanced_by"]) == ("expired", 7 * DAY)
    assert event_types(payment["id"])[-1] == "payment.expired"
    expired = Event.objects.get(resource_id=payment["id"], type="payment.expired")
    assert expired.data["object"]["clock_advanced_by"] == 7 * DAY  # the event says so too
    error_of(
        api.post(f"/v1/payments/{payment['id']}/captures", {}, format="json"),
        422,
        "processing_error",
        "payment_not_capturable",
    )


def test_short_of_the_deadline_nothing_happens_but_the_deadline_comes_closer(api):
    payment = created(api, None)  # pending: no payment method yet
    assert payment["status"] == "pending"
    before = Payment.objects.get(pk=payment["id"]).due_at

    assert advance(api, payment["id"], HOUR - 60).json()["status"] == "pending"
    after = Payment.objects.get(pk=payment["id"]).due_at
    assert round((before - after).total_seconds()) == HOUR - 60

    moved = advance(api, payment["id"], 60).json()
    assert (moved["status"], moved["clock_advanced_by"]) == ("expired", HOUR)
    assert event_types(payment["id"])[-1] == "payment.expired"


def test_one_move_chains_every_transition_due_within_it(api):
    """processing resolves after 30 s into authorized, whose 7 days then run out too."""
    payment = created(api, ASYNC, capture_method="manual")
    assert payment["status"] == "processing"

    assert advance(api, payment["id"], 30 + 7 * DAY).json()["status"] == "expired"
    assert event_types(payment["id"])[-2:] == ["payment.authorized", "payment.expired"]


def test_processing_resolves_as_beat_would(api):
    payment = created(api, ASYNC)
    assert advance(api, payment["id"], 30).json()["status"] == "captured"
    assert event_types(payment["id"])[-1] == "payment.captured"


def test_a_payment_with_no_deadline_is_returned_as_it_is(api):
    payment = created(api, APPROVED)
    moved = advance(api, payment["id"], DAY).json()
    assert (moved["status"], moved["clock_advanced_by"]) == ("captured", DAY)


def test_a_replay_with_the_same_key_moves_nothing_again(api):
    payment = created(api, None)
    first = advance(api, payment["id"], 600, HTTP_IDEMPOTENCY_KEY="travel-1")
    again = advance(api, payment["id"], 600, HTTP_IDEMPOTENCY_KEY="travel-1")
    assert again.content == first.content and again["Idempotent-Replayed"] == "true"
    assert Payment.objects.get(pk=payment["id"]).clock_advanced_by == 600


def test_live_keys_publishable_keys_and_other_merchants_are_refused(
    api, live_api, publishable_api, other_api
):
    payment = created(api, None)
    error_of(advance(live_api, payment["id"], 60), 403, "authorization_error", "test_mode_required")
    error_of(
        advance(publishable_api, payment["id"], 60),
        403,
        "authorization_error",
        "secret_key_required",
    )
    error_of(advance(other_api, payment["id"], 60), 404, "not_found_error", "resource_not_found")
    assert Payment.objects.get(pk=payment["id"]).clock_advanced_by is None


@pytest.mark.parametrize("seconds", [0, -5, 30 * DAY + 1, "soon", None, 1.5])
def test_seconds_must_be_a_whole_number_up_to_thirty_days(api, seconds):
    payment = created(api, None)
    error = error_of(
        advance(api, payment["id"], seconds), 400, "validation_error", "invalid_parameter"
    )
    assert error["param"] == "seconds"
    assert Payment.objects.get(pk=payment["id"]).clock_advanced_by is None


def test_seconds_is_required(api):
    payment = created(api, None)
    response = api.post(f"/v1/sandbox/advance-clock/{payment['id']}", {}, format="json")
    assert response.status_code == 400 and response.json()["error"]["param"] == "seconds"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_advance_killed_midway_has_travelled_nowhere_and_its_retry_travels_once(
    api, time_machine
):
    """The travel, its transitions and the stored answer are one unit of work: killed after
    the simulator answered (its release failing too), nothing of it is left, and the retry
    after the key's lease travels once (the old code kept the first travel: 2x the seconds)."""
    payment = created(api, ASYNC, capture_method="manual")
    key = {"HTTP_IDEMPOTENCY_KEY": "travel-1"}
    with armed(failpoints.CONNECTOR_ANSWERED, Crash), armed(failpoints.RELEASING, Crash):
        with pytest.raises(Crash):
            advance(api, payment["id"], 30 + 7 * DAY, **key)
    stored = Payment.objects.get(pk=payment["id"])
    assert (stored.status, stored.clock_advanced_by) == ("processing", None)

    lease = datetime.timedelta(seconds=settings.IDEMPOTENCY_LEASE_SECONDS + 1)
    time_machine.move_to(timezone.now() + lease)
    retry = advance(api, payment["id"], 30 + 7 * DAY, **key)
    assert retry.status_code == 200, retry.content
    assert (retry.json()["status"], retry.json()["clock_advanced_by"]) == ("expired", 30 + 7 * DAY)
    replay = advance(api, payment["id"], 30 + 7 * DAY, **key)
    assert replay["Idempotent-Replayed"] == "true" and replay.json() == retry.json()
