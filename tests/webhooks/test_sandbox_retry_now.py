"""POST /v1/sandbox/retry-now/:eventId: a test event's retries made due now, so the whole
schedule runs to the dead letter in minutes (docs/sandbox.md "Time travel")."""

import pytest
from django.utils import timezone

from webhooks.attempts import delivery_run
from webhooks.models import Attempt, Delivery

pytestmark = pytest.mark.django_db

RETRIES = 7  # spec "Retries and dead letter" 1


def retry_now(api, event_id: str):
    return api.post(f"/v1/sandbox/retry-now/{event_id}")


def test_retry_now_walks_the_schedule_to_the_dead_letter(api, receiver, endpoint_for, emit_event):
    endpoint_for(receiver)
    receiver.reply.status = 500
    event = emit_event(hooks=True)
    delivery = Delivery.objects.get(event=event)
    delivery_run(delivery.id)  # the first attempt, as a worker makes it
    for attempt in range(2, RETRIES + 2):
        delivery.refresh_from_db()
        assert delivery.next_attempt_at > timezone.now()  # the schedule's wait
        response = retry_now(api, event.id)
        assert response.status_code == 202, response.content
        assert len(response.json()["attempts"]) == attempt - 1
        delivery.refresh_from_db()
        assert delivery.next_attempt_at <= timezone.now()
        delivery_run(delivery.id)  # the nudge's work, done here
    delivery.refresh_from_db()
    assert delivery.status == "dead_lettered"
    assert Attempt.objects.filter(delivery=delivery).count() == RETRIES + 1
    assert retry_now(api, event.id).status_code == 202  # nothing left to retry: no change
    assert Attempt.objects.filter(delivery=delivery).count() == RETRIES + 1


def test_retry_now_is_for_test_events_of_the_caller(api, live_api, other_api, emit_event):
    event = emit_event()
    for client, status, code in [
        (live_api, 403, "test_mode_required"),
        (other_api, 404, "resource_not_found"),
    ]:
        response = retry_now(client, event.id)
        assert (response.status_code, response.json()["error"]["code"]) == (status, code)
    assert retry_now(api, "evt_unknown").status_code == 404
