"""Endpoints that can be changed and paused (docs/webhooks.md "Changing an endpoint", "Pause
and resume", "410 Gone"): POST /v1/webhook-endpoints/:id, /pause and /resume, and a receiver
answering 410 Gone, against a real HTTPS receiver on loopback."""

import datetime
import json
from io import StringIO

import pytest
import time_machine
from django.core import mail
from django.core.management import CommandError, call_command
from django.utils import timezone

from tests.webhooks.conftest import payment_object
from tests.webhooks.receiver import Reply
from tests.webhooks.test_endpoint_health import create_endpoint, endpoint_answer
from tests.webhooks.test_endpoints_api import error_code
from webhooks.attempts import deliveries_drain
from webhooks.models import Delivery, EndpointHealth, StatusChange, WebhookEndpoint

pytestmark = pytest.mark.django_db
DRAIN = 120  # seconds a drain may go on: a budget on a loaded machine, not an assertion


def update(api, endpoint_id: str, **body):
    return api.post(f"/v1/webhook-endpoints/{endpoint_id}", body, format="json")


def act(api, endpoint_id: str, action: str) -> dict:
    response = api.post(f"/v1/webhook-endpoints/{endpoint_id}/{action}")
    assert response.status_code == 200, response.content
    return response.json()


def actions(endpoint_id: str) -> list[str]:
    changes = StatusChange.objects.filter(endpoint_id=endpoint_id).order_by("at", "id")
    return list(changes.values_list("action", flat=True))


def arrived(receiver) -> list[str]:
    return [json.loads(r.body)["id"] for r in receiver.requests]


def test_an_update_changes_the_fields_given_and_keeps_the_others(api, receiver):
    created = create_endpoint(api, receiver, description="orders", enabled_events=["payment.*"])
    response = update(api, created["id"], enabled_events=["refund.*"], ordered_delivery=True)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["url"], body["description"]) == (created["url"], "orders")
    assert (body["enabled_events"], body["ordered_delivery"]) == (["refund.*"], True)
    assert "secret" not in body
    assert endpoint_answer(api, created["id"])["enabled_events"] == ["refund.*"]
    cleared = update(api, created["id"], description=None).json()
    assert cleared["description"] is None and cleared["enabled_events"] == ["refund.*"]
    assert actions(created["id"]) == ["updated", "updated"]


def test_a_new_url_goes_through_the_url_guard(api, receiver):
    created = create_endpoint(api, receiver)
    refused = update(api, created["id"], url="https://10.0.0.1/hooks")
    assert error_code(refused, 400) == "private_address"
    assert error_code(update(api, created["id"], url="http://example.com/"), 400) == (
        "https_required"
    )
    moved = update(api, created["id"], url=receiver.url("/moved"))
    assert moved.status_code == 200 and moved.json()["url"] == receiver.url("/moved")


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"enabled_events": []}, "enabled_events"),
        ({"enabled_events": ["nope.*"]}, "enabled_events"),
        ({"description": 42}, "description"),
        ({"ordered_delivery": "yes"}, "ordered_delivery"),
        ({"url": None}, "url"),
    ],
)
def test_bad_update_parameters_get_the_envelope(api, receiver, body, param):
    created = create_endpoint(api, receiver)
    response = update(api, created["id"], **body)
    assert error_code(response, 400) == "invalid_parameter"
    assert response.json()["error"]["param"] == param
    assert endpoint_answer(api, created["id"])["url"] == created["url"]  # nothing changed


def test_another_merchant_cannot_update_or_pause(api, other_api, receiver):
    created = create_endpoint(api, receiver)
    assert error_code(update(other_api, created["id"], description="mine"), 404)
    response = other_api.post(f"/v1/webhook-endpoints/{created['id']}/pause")
    assert error_code(response, 404)


def test_paused_keeps_events_counts_no_failure_and_resume_sends_them_oldest_first(
    api, receiver, emit_event
):
    created = create_endpoint(api, receiver)
    receiver.reply = Reply(status=500)  # would fail, if anything were sent
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        assert act(api, created["id"], "pause")["status"] == "paused"
        events = []
        for n in range(3):
            clock.move_to(start + datetime.timedelta(minutes=n))
            payment = payment_object(f"pay_01J0000000000000000000000{n}")
            events.append(emit_event(obj=payment, hooks=True))
        deliveries_drain(livemode=False, seconds=DRAIN)
        assert receiver.requests == []
        held = Delivery.objects.filter(endpoint_id=created["id"])
        assert set(held.values_list("status", flat=True)) == {"held"}
        assert not EndpointHealth.objects.filter(endpoint_id=created["id"]).exists()

        receiver.reply = Reply()
        clock.move_to(start + datetime.timedelta(hours=1))
        assert act(api, created["id"], "resume")["status"] == "enabled"
        deliveries_drain(livemode=False, seconds=DRAIN)
    assert arrived(receiver) == [event.id for event in events]
    assert actions(created["id"]) == ["paused", "resumed"]


def test_pause_and_resume_are_no_ops_when_repeated_and_a_disabled_endpoint_cannot_pause(
    api, receiver
):
    created = create_endpoint(api, receiver)
    assert act(api, created["id"], "resume")["status"] == "enabled"
    act(api, created["id"], "pause")
    assert act(api, created["id"], "pause")["paused_at"] is not None
    assert actions(created["id"]) == ["paused"]
    act(api, created["id"], "resume")
    assert actions(created["id"]) == ["paused", "resumed"]
    WebhookEndpoint.objects.filter(pk=created["id"]).update(disabled_at=timezone.now())
    response = api.post(f"/v1/webhook-endpoints/{created['id']}/pause")
    assert error_code(response, 422) == "endpoint_disabled"


def test_a_410_gone_disables_the_endpoint_at_once_recorded_and_its_owner_told(
    api, receiver, emit_event, merchant
):
    created = create_endpoint(api, receiver)
    receiver.reply = Reply(status=410, body=b"gone")
    first = emit_event(obj=payment_object("pay_01J0000000000000000000000A"), hooks=True)
    deliveries_drain(livemode=False, seconds=DRAIN)
    answer = endpoint_answer(api, created["id"])
    assert answer["status"] == "disabled"
    (change,) = StatusChange.objects.filter(endpoint_id=created["id"])
    assert change.action == "disabled" and f"410 Gone to {first.id}" in change.detail
    (email,) = mail.outbox
    assert email.to == [merchant.email] and "410 Gone" in email.subject
    # Its retry is held, and later events get no delivery at all: it is sent nothing.
    assert Delivery.objects.get(event=first).status == "held"
    emit_event(obj=payment_object("pay_01J0000000000000000000000B"), hooks=True)
    assert Delivery.objects.filter(endpoint_id=created["id"]).count() == 1
    assert len(receiver.requests) == 1


def test_support_edits_pauses_and_resumes_from_the_endpoint_page(staff_client, api, receiver):
    created = create_endpoint(api, receiver)
    page = f"/admin/webhooks/webhookendpoint/{created['id']}/"
    html = staff_client.get(f"{page}change/").content.decode()
    assert 'id="action-edit"' in html and 'id="action-pause"' in html
    assert 'id="action-resume"' not in html
    refused = staff_client.post(f"{page}edit/", {"url": "https://10.0.0.1/hooks"})
    assert refused.status_code == 200 and "private_address" in refused.content.decode()
    bad = staff_client.post(f"{page}edit/", {"enabled_events": "payment.*, nope.*"})
    assert bad.status_code == 200 and "nope.*" in bad.content.decode()
    edited = {"enabled_events": "refund.*", "ordered_delivery": "on", "description": "orders"}
    assert staff_client.post(f"{page}edit/", edited).status_code == 302
    answer = endpoint_answer(api, created["id"])
    assert (answer["enabled_events"], answer["ordered_delivery"]) == (["refund.*"], True)
    assert (answer["url"], answer["description"]) == (created["url"], "orders")  # blank: kept

    assert staff_client.post(f"{page}pause/").status_code == 302
    assert endpoint_answer(api, created["id"])["status"] == "paused"
    assert 'id="action-resume"' in staff_client.get(f"{page}change/").content.decode()
    assert staff_client.post(f"{page}resume/").status_code == 302
    assert endpoint_answer(api, created["id"])["status"] == "enabled"
    changes = StatusChange.objects.filter(endpoint_id=created["id"])
    assert set(changes.values_list("actor", flat=True)) == {"staff:support"}


def test_manage_py_updates_pauses_and_resumes(api, receiver):
    created = create_endpoint(api, receiver)

    def run(*args) -> dict:
        out = StringIO()
        call_command("webhook_endpoint", args[0], created["id"], *args[1:], stdout=out)
        return json.loads(out.getvalue())

    shown = run("update", "--enabled-events", "payment.*,refund.*", "--ordered-delivery", "on")
    assert shown["enabled_events"] == ["payment.*", "refund.*"] and shown["ordered_delivery"]
    assert "secret" not in shown
    assert run("pause")["status"] == "paused"
    assert run("resume")["status"] == "enabled"
    assert actions(created["id"]) == ["updated", "paused", "resumed"]
    with pytest.raises(CommandError, match="private_address"):
        run("update", "--url", "https://10.0.0.1/hooks")
    with pytest.raises(CommandError, match="Nothing to update"):
        run("update")
    with pytest.raises(CommandError, match="nope"):
        run("update", "--enabled-events", "nope.*")
