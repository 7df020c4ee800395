"""Recover: every failed or dead-lettered event of one endpoint since a time, requeued in one
call, bounded, idempotent, numbering continued; from the API, the admin and `manage.py
recover_endpoint` (docs/webhooks.md "Endpoint health and recovery")."""

import datetime
import json
from io import StringIO

import pytest
import time_machine
from django.contrib.admin.models import LogEntry
from django.core.management import CommandError, call_command
from django.utils import timezone

from tests.webhooks.conftest import payment_object
from webhooks.attempts import delivery_run
from webhooks.models import Attempt, Delivery, StatusChange

pytestmark = pytest.mark.django_db
HOUR = datetime.timedelta(hours=1)


@pytest.fixture
def failing(api, receiver, emit_event, endpoint_for):
    """An endpoint, and failed deliveries to it: one dead-lettered before `since`, two
    dead-lettered and one waiting for its retry after it, one delivered after it."""
    endpoint, _ = endpoint_for(receiver)
    receiver.reply.status = 500
    now = timezone.now()
    since = now - 80 * HOUR

    def delivery_at(created, n, status=500):
        receiver.reply.status = status
        with time_machine.travel(created, tick=False):
            event = emit_event(obj=payment_object(f"pay_01J0000000000000000000R{n:03d}"))
        delivery = Delivery.objects.create(event=event, endpoint=endpoint, next_attempt_at=now)
        delivery_run(delivery.id)
        return Delivery.objects.get(pk=delivery.id)

    before = delivery_at(since - HOUR, 0)
    dead = [delivery_at(since + HOUR, 1), delivery_at(since + 2 * HOUR, 2)]
    waiting = delivery_at(now - HOUR, 3)
    delivered = delivery_at(now - HOUR, 4, status=200)
    assert [d.status for d in (before, *dead, waiting, delivered)] == [
        "dead_lettered",
        "dead_lettered",
        "dead_lettered",
        "pending",
        "delivered",
    ]
    receiver.requests.clear()
    return endpoint, since, before, [*dead, waiting]


def recover(client, endpoint_id: str, **body):
    return client.post(f"/v1/webhook-endpoints/{endpoint_id}/recover", body, format="json")


def test_recover_requeues_the_failed_events_since_then_once(api, receiver, failing):
    endpoint, since, before, failed = failing
    receiver.reply.status = 200
    response = recover(api, endpoint.id, since=since.isoformat())
    assert response.status_code == 202, response.content
    body = response.json()
    assert body == {
        "object": "webhook_recovery",
        "endpoint": endpoint.id,
        "since": since.replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "requeued": 3,
        "events": [d.event_id for d in failed],
        "has_more": False,
        "next_starting_after": None,
    }
    assert all(Delivery.objects.get(pk=d.id).status == "pending" for d in failed)
    assert Delivery.objects.get(pk=before.id).status == "dead_lettered"  # before `since`
    # Idempotent: what is already due again is not picked a second time.
    assert recover(api, endpoint.id, since=since.isoformat()).json()["requeued"] == 0
    for delivery in failed:
        attempt = delivery_run(delivery.id)
        assert (attempt.attempt, attempt.status) == (2, "delivered")  # numbering continues
    assert {r.headers["Service-Event-Id"] for r in receiver.requests} == {
        d.event_id for d in failed
    }
    (change,) = StatusChange.objects.all()
    assert (change.action, change.actor) == ("recovered", "api")


def test_recover_in_a_loop_re_sends_a_failed_delivery_once_an_hour(api, receiver, failing):
    """Issue 35: 48 recovers in 25 s made 960 POSTs at one URL that kept failing."""
    endpoint, since, _, failed = failing
    ids = [d.id for d in failed]
    receiver.reply.status = 500
    for _ in range(10):  # recover, the worker tries what it requeued, it fails again
        response = recover(api, endpoint.id, since=since.isoformat())
        assert response.status_code == 202, response.content
        for delivery_id in ids:
            delivery_run(delivery_id)
    assert len(receiver.requests) == len(failed)  # once each, not ten times
    assert all(Delivery.objects.get(pk=i).attempt_count == 2 for i in ids)
    with time_machine.travel(timezone.now() + HOUR + datetime.timedelta(seconds=1)):
        body = recover(api, endpoint.id, since=since.isoformat()).json()
    # An hour after the first recover, the dead letters again; the one waiting for its retry
    # is due by its own schedule by then.
    assert body["events"] == [d.event_id for d in failed if d.status == "dead_lettered"]


def test_recover_is_bounded_and_continues_after_the_last_event(api, failing, settings):
    endpoint, since, _, failed = failing
    settings.WEBHOOK_RECOVER_MAX = 2
    first = recover(api, endpoint.id, since=int(since.timestamp())).json()
    assert (first["requeued"], first["has_more"]) == (2, True)
    assert first["next_starting_after"] == failed[1].event_id
    rest = recover(
        api, endpoint.id, since=int(since.timestamp()), starting_after=first["next_starting_after"]
    ).json()
    assert (rest["events"], rest["has_more"]) == ([failed[2].event_id], False)


def test_a_recover_in_a_loop_reads_one_page_and_says_where_to_go_on(
    api, receiver, failing, settings
):
    """Issue 35: a recover within the hour of another walked every candidate to find what it
    might requeue (300 ms for none of 50,000). It reads one page of candidates, requeues those
    of it not attempted since, and continues after the page, never past it."""
    endpoint, since, _, failed = failing  # two dead letters, then one waiting for its retry
    settings.WEBHOOK_RECOVER_MAX = 2
    receiver.reply.status = 500
    first = recover(api, endpoint.id, since=since.isoformat()).json()
    assert first["events"] == [d.event_id for d in failed[:2]]
    for delivery in failed[:2]:
        delivery_run(delivery.id)  # tried again, failed again
    again = recover(api, endpoint.id, since=since.isoformat()).json()
    assert (again["events"], again["has_more"]) == ([], True)
    assert again["next_starting_after"] == failed[1].event_id
    out = StringIO()
    call_command("recover_endpoint", endpoint.id, "--since", since.isoformat(), stdout=out)
    assert f"Would requeue 0 event(s) for {endpoint.id}. More left: run again with " in (
        out.getvalue()
    )
    assert f"--starting-after {failed[1].event_id}" in out.getvalue()
    rest = recover(
        api, endpoint.id, since=since.isoformat(), starting_after=again["next_starting_after"]
    ).json()
    assert (rest["events"], rest["has_more"]) == ([failed[2].event_id], False)
    assert rest["next_starting_after"] is None


def test_support_goes_on_after_a_page_a_recover_in_a_loop_left(
    staff_client, receiver, failing, settings
):
    endpoint, since, _, failed = failing
    settings.WEBHOOK_RECOVER_MAX = 2
    receiver.reply.status = 500
    page = f"/admin/webhooks/webhookendpoint/{endpoint.id}/recover/"
    since_text = since.strftime("%Y-%m-%d %H:%M:%S")
    assert staff_client.post(page, {"since": since_text}).status_code == 302
    for delivery in failed[:2]:
        delivery_run(delivery.id)  # tried again, failed again
    assert staff_client.post(page, {"since": since_text}).status_code == 302
    told = LogEntry.objects.order_by("-action_time", "-id").first().get_change_message()
    assert told == (
        f"Recovered 0 events of {endpoint.id}. More are left: run it again starting after "
        f"{failed[1].event_id}."
    )
    bad = staff_client.post(page, {"since": since_text, "starting_after": "pay_1"})
    assert bad.status_code == 200 and "Must be an event id" in bad.content.decode()
    on = {"since": since_text, "starting_after": failed[1].event_id}
    assert staff_client.post(page, on).status_code == 302
    assert Delivery.objects.get(pk=failed[2].id).status == "pending"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({}, "since"),
        ({"since": "yesterday"}, "since"),
        ({"since": True}, "since"),
        ({"since": "2999-01-01T00:00:00Z"}, "since"),
        ({"since": "2026-01-01T00:00:00"}, "since"),  # no zone
        ({"since": 0, "starting_after": "pay_01J0000000000000000000R001"}, "starting_after"),
    ],
)
def test_bad_input_is_400_naming_the_parameter(api, endpoint_for, receiver, body, param):
    endpoint, _ = endpoint_for(receiver)
    response = recover(api, endpoint.id, **body)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "validation_error",
        "invalid_parameter",
        param,
    )


def test_modes_and_merchants_stay_apart(api, live_api, other_api, endpoint_for, receiver):
    test_endpoint, _ = endpoint_for(receiver)
    live_endpoint, _ = endpoint_for(receiver, livemode=True)
    since = {"since": 0}
    for client, endpoint in [
        (live_api, test_endpoint),
        (api, live_endpoint),
        (other_api, test_endpoint),
        (api, type("Unknown", (), {"id": "whe_unknown"})),
    ]:
        response = recover(client, endpoint.id, **since)
        assert response.status_code == 404
        assert response.json()["error"]["type"] == "not_found_error"
    assert recover(live_api, live_endpoint.id, **since).status_code == 202


def test_a_disabled_endpoint_must_be_re_enabled_first(api, failing):
    endpoint, since, _, _ = failing
    type(endpoint).objects.filter(pk=endpoint.pk).update(disabled_at=timezone.now())
    response = recover(api, endpoint.id, since=since.isoformat())
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "endpoint_disabled"


def test_the_command_dry_runs_then_recovers(failing):
    endpoint, since, _, failed = failing
    out = StringIO()
    call_command("recover_endpoint", endpoint.id, "--since", since.isoformat(), stdout=out)
    assert "Would requeue 3 event(s)" in out.getvalue()
    assert all(Delivery.objects.get(pk=d.id).status != "pending" for d in failed[:2])
    out = StringIO()
    call_command(
        "recover_endpoint",
        endpoint.id,
        "--since",
        since.isoformat(),
        "--limit",
        "2",
        "--for-real",
        "--json",
        stdout=out,
    )
    printed = json.loads(out.getvalue())
    assert printed["events"] == [d.event_id for d in failed[:2]] and printed["has_more"]
    assert StatusChange.objects.get().actor == "command"
    with pytest.raises(CommandError, match="--since"):
        call_command("recover_endpoint", endpoint.id, "--since", "soon")
    with pytest.raises(CommandError, match="No webhook endpoint"):
        call_command("recover_endpoint", "whe_unknown", "--since", "0")


def test_support_recovers_and_re_enables_from_the_endpoint_page(staff_client, failing):
    endpoint, since, _, failed = failing
    page = f"/admin/webhooks/webhookendpoint/{endpoint.id}/"
    html = staff_client.get(f"{page}change/").content.decode()
    assert 'id="action-recover"' in html and 'id="action-enable"' not in html
    assert "last hour: 1/5 delivered; last day: 1/5 delivered" in html  # health counters
    refused = staff_client.post(f"{page}recover/", {"since": "2999-01-01 00:00"})
    assert refused.status_code == 200 and "future" in refused.content.decode()
    done = staff_client.post(f"{page}recover/", {"since": since.strftime("%Y-%m-%d %H:%M:%S")})
    assert done.status_code == 302
    assert all(Delivery.objects.get(pk=d.id).status == "pending" for d in failed)
    assert LogEntry.objects.get().get_change_message() == f"Recovered 3 events of {endpoint.id}."
    assert StatusChange.objects.get().actor == "staff:support"

    type(endpoint).objects.filter(pk=endpoint.pk).update(disabled_at=timezone.now())
    html = staff_client.get(f"{page}change/").content.decode()
    assert 'id="action-enable"' in html and 'id="action-recover"' not in html
    assert staff_client.post(f"{page}enable/").status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.disabled_at is None
    assert not Attempt.objects.filter(attempt=2).exists()  # the workers make the attempts
