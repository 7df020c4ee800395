"""`/v1/events`, `/v1/events/:id` and `/v1/events/:id/resend` (spec "Endpoints > Events").
Deliveries are run synchronously with the task's service function (see test_delivery.py)."""

import pytest

from events.models import Event
from tests.webhooks.conftest import payment_object
from webhooks.attempts import delivery_run
from webhooks.fanout import events_fan_out
from webhooks.models import Delivery

pytestmark = pytest.mark.django_db


ERROR_TYPE_BY_STATUS = {400: "validation_error", 404: "not_found_error", 422: "processing_error"}
EVENT_FIELDS = {
    *("id", "object", "type", "api_version", "livemode", "created", "data"),
    "resource_version",  # ours, additive (docs/webhooks.md "Ordering")
}
ATTEMPT_FIELDS = {
    "id",
    "object",
    "event",
    "endpoint",
    "attempt",
    "status",
    "http_status",
    "response_body",
    "error",
    "duration_ms",
    "next_retry_at",
    "attempted_at",
    "injected",  # ours, additive: a test-mode failure profile's fault (docs/sandbox.md)
}


def error_of(response, status, code):
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert (error["type"], error["code"]) == (ERROR_TYPE_BY_STATUS[status], code)
    return error


def test_list_filters_by_type_and_resource_newest_first(api, emit_event):
    a = payment_object("pay_01J0000000000000000000000A")
    b = payment_object("pay_01J0000000000000000000000B")
    first = emit_event("payment.created", a)
    second = emit_event("payment.captured", a)
    third = emit_event("payment.created", b)
    emit_event("payment.created", a, livemode=True)

    listed = api.get("/v1/events").json()
    assert [e["id"] for e in listed["data"]] == [third.id, second.id, first.id]
    assert listed["object"] == "list" and listed["has_more"] is False
    assert set(listed["data"][0]) == EVENT_FIELDS  # attempts only on the event itself
    by_type = api.get("/v1/events", {"type": "payment.created"}).json()["data"]
    assert [e["id"] for e in by_type] == [third.id, first.id]
    by_resource = api.get("/v1/events", {"resource": a["id"]}).json()["data"]
    assert [e["id"] for e in by_resource] == [second.id, first.id]
    page = api.get("/v1/events", {"limit": 2}).json()
    assert page["has_more"] is True
    rest = api.get("/v1/events", {"limit": 2, "starting_after": page["next_cursor"]}).json()
    assert [e["id"] for e in rest["data"]] == [first.id]
    error_of(api.get("/v1/events", {"starting_after": "pay_x"}), 400, "invalid_parameter")


def test_detail_has_the_envelope_and_its_attempts(api, receiver, endpoint_for, emit_event):
    endpoint, _ = endpoint_for(receiver)
    event = emit_event()
    delivery_run(events_fan_out([event.id])[0])
    body = api.get(f"/v1/events/{event.id}").json()
    assert set(body) == EVENT_FIELDS | {"attempts"}
    assert body["id"] == event.id and body["object"] == "event"
    assert body["type"] == "payment.captured" and body["api_version"] == "2026-08-19"
    assert body["livemode"] is False and body["created"].endswith("Z")
    assert body["data"] == {
        "object": payment_object(),
        "previous_attributes": {"status": "authorized"},
    }
    (attempt,) = body["attempts"]
    assert set(attempt) == ATTEMPT_FIELDS
    assert attempt["id"].startswith("wha_") and attempt["object"] == "webhook_attempt"
    assert (attempt["event"], attempt["endpoint"], attempt["attempt"]) == (event.id, endpoint.id, 1)
    assert (attempt["status"], attempt["http_status"], attempt["response_body"]) == (
        "delivered",
        200,
        "ok",
    )
    assert attempt["error"] is None and attempt["next_retry_at"] is None
    assert isinstance(attempt["duration_ms"], int) and attempt["attempted_at"].endswith("Z")


def test_events_of_others_and_of_the_other_mode_are_404(api, live_api, other_api, emit_event):
    event = emit_event()
    for client in (live_api, other_api):
        error_of(client.get(f"/v1/events/{event.id}"), 404, "resource_not_found")
        error_of(client.post(f"/v1/events/{event.id}/resend"), 404, "resource_not_found")
    assert other_api.get("/v1/events").json()["data"] == []


def test_resend_continues_the_numbering(api, receiver, endpoint_for, emit_event):
    endpoint, _ = endpoint_for(receiver)
    event = emit_event()
    delivery_id = events_fan_out([event.id])[0]
    delivery_run(delivery_id)
    response = api.post(f"/v1/events/{event.id}/resend", {}, format="json")
    assert response.status_code == 202
    assert response.json()["id"] == event.id and len(response.json()["attempts"]) == 1
    assert Delivery.objects.get(pk=delivery_id).status == "pending"
    delivery_run(delivery_id)  # what the enqueued task does
    attempts = api.get(f"/v1/events/{event.id}").json()["attempts"]
    assert [a["attempt"] for a in attempts] == [1, 2]
    assert [r.headers["Service-Event-Id"] for r in receiver.requests] == [event.id, event.id]


def test_resend_to_one_endpoint_and_to_an_endpoint_added_later(
    api, receiver, endpoint_for, emit_event
):
    first, _ = endpoint_for(receiver)
    event = emit_event()
    events_fan_out([event.id])
    later, _ = endpoint_for(receiver)
    response = api.post(f"/v1/events/{event.id}/resend", {"endpoint": later.id}, format="json")
    assert response.status_code == 202
    (delivery,) = Delivery.objects.filter(event=event, endpoint=later)
    assert delivery_run(delivery.id).attempt == 1
    assert Delivery.objects.get(event=event, endpoint=first).attempt_count == 0


def test_resend_of_a_dead_letter_reopens_it(api, receiver, endpoint_for, emit_event):
    endpoint_for(receiver)
    event = emit_event()
    delivery_id = events_fan_out([event.id])[0]
    Delivery.objects.filter(pk=delivery_id).update(status="dead_lettered", next_attempt_at=None)
    Event.objects.filter(pk=event.id).update(dead_lettered_at=event.created)
    assert api.post(f"/v1/events/{event.id}/resend").status_code == 202
    assert delivery_run(delivery_id).status == "delivered"
    assert Event.objects.get(pk=event.id).dead_lettered_at is None


def test_resend_with_nothing_subscribed_is_422(api, receiver, endpoint_for, emit_event):
    refunds_only, _ = endpoint_for(receiver, enabled_events=["refund.*"])
    event = emit_event("payment.captured")
    error_of(api.post(f"/v1/events/{event.id}/resend"), 422, "no_matching_endpoint")
    error_of(
        api.post(f"/v1/events/{event.id}/resend", {"endpoint": refunds_only.id}, format="json"),
        422,
        "no_matching_endpoint",
    )
    missing = api.post(
        f"/v1/events/{event.id}/resend",
        {"endpoint": "whe_01J00000000000000000000000"},
        format="json",
    )
    assert error_of(missing, 404, "resource_not_found")["param"] == "endpoint"


@pytest.mark.parametrize("endpoint", [12, ["whe_01J00000000000000000000000"], {"id": "x"}])
def test_resend_endpoint_must_be_a_string(api, receiver, endpoint_for, emit_event, endpoint):
    endpoint_for(receiver)
    event = emit_event()
    response = api.post(f"/v1/events/{event.id}/resend", {"endpoint": endpoint}, format="json")
    assert error_of(response, 400, "invalid_parameter")["param"] == "endpoint"
    assert not Delivery.objects.filter(event=event).exists()


def test_a_deleted_endpoints_attempts_stay_on_the_event(api, receiver, endpoint_for, emit_event):
    endpoint, _ = endpoint_for(receiver)
    event = emit_event()
    delivery_run(events_fan_out([event.id])[0])
    assert api.delete(f"/v1/webhook-endpoints/{endpoint.id}").status_code == 200
    (attempt,) = api.get(f"/v1/events/{event.id}").json()["attempts"]
    assert (attempt["endpoint"], attempt["status"]) == (endpoint.id, "delivered")
