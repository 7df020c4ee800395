"""GET /v1/payments/:id/timeline: one payment's story (docs/sandbox.md "Timeline"). A payment
is created with a 3-D Secure card, challenged, captured and refunded; a real HTTPS receiver
refuses the capture's first delivery and takes its retry; the timeline, read a page at a time,
tells all of it in order."""

import re

import pytest
from django.contrib.admin.utils import quote
from django.test import Client

from api import request_recorder
from events.models import Event
from payments.models import Payment
from refunds.timeline import payment_timeline
from tests.payments.support import CHALLENGE, payment_body, tokenize
from webhooks.attempts import delivery_run
from webhooks.models import Delivery

pytestmark = pytest.mark.django_db


def post(api, path: str, body: dict, key: str):
    response = api.post(path, body, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert response.status_code in (200, 201), response.content
    return response.json()


def approve_challenge(payment: dict) -> None:
    """The payer approves on the challenge page, as a browser does (CSRF and all)."""
    path = payment["next_action"]["redirect"]["url"].removeprefix("http://127.0.0.1:8000")
    browser = Client(enforce_csrf_checks=True)
    page = browser.get(path).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]
    assert browser.post(path, {"action": "approve", "csrfmiddlewaretoken": token}).status_code


def deliver_due() -> None:
    """What the webhooks worker does with what is due now."""
    for delivery in Delivery.objects.filter(status=Delivery.Status.PENDING):
        delivery_run(delivery.id)


def read_timeline(api, payment_id: str, limit: int) -> list[dict]:
    """Every page, following `next_cursor` as a client does."""
    items, params = [], {"limit": limit}
    while True:
        page = api.get(f"/v1/payments/{payment_id}/timeline", params)
        assert page.status_code == 200, page.content
        body = page.json()
        assert body["object"] == "list" and len(body["data"]) <= limit
        items += body["data"]
        if not body["has_more"]:
            return items
        params = {"limit": limit, "starting_after": body["next_cursor"]}


def story(items: list[dict]) -> list[tuple]:
    """Each item in a few words."""
    told = []
    for item in items:
        kind = item["type"]
        if kind == "request":
            told.append(("request", item["request"]["method"], item["request"]["path"]))
        elif kind == "status_change":
            change = item["status_change"]
            told.append(("status", change["from"], change["to"]))
        elif kind == "event":
            told.append(("event", item["event"]["type"]))
        else:
            told.append(("attempt", item["delivery_attempt"]["http_status"]))
    return told


def page_rows(staff_client, payment_id: str) -> list[tuple[str, str]]:
    """(type, id) of each row of the timeline on the back office's payment page."""
    html = staff_client.get(f"/admin/payments/payment/{quote(payment_id)}/change/")
    section = html.content.decode().split('id="timeline"', 1)[1]
    rows = re.findall(
        r'<tr><td>[^<]*</td><td>([a-z ]+)</td><td>(?:<a href="[^"]*">)?(\w+)', section
    )
    return [(kind.replace(" ", "_"), item_id) for kind, item_id in rows]


def test_create_challenge_capture_refund_read_back_in_order(
    api, receiver, endpoint_for, staff_client
):
    endpoint_for(receiver)
    body = payment_body(tokenize(api, CHALLENGE), capture_method="manual")
    payment = post(api, "/v1/payments", body, key="create-1")
    pay = payment["id"]
    assert payment["status"] == "requires_action"
    deliver_due()
    approve_challenge(payment)
    deliver_due()
    post(api, f"/v1/payments/{pay}/captures", {}, key="capture-1")
    receiver.reply.status = 500  # the capture's first delivery is refused...
    deliver_due()
    receiver.reply.status = 200
    captured = Event.objects.get(type="payment.captured", resource_id=pay)
    assert api.post(f"/v1/sandbox/retry-now/{captured.id}").status_code == 202
    deliver_due()  # ... and its retry taken
    refund = post(api, f"/v1/payments/{pay}/refunds", {"amount": 400}, key="refund-1")
    deliver_due()
    request_recorder.writer.flush()

    items = read_timeline(api, pay, limit=3)
    assert [item["at"] for item in items] == sorted(item["at"] for item in items)
    assert len({(item["type"], item["id"]) for item in items}) == len(items)  # no repeats
    told = story(items)
    expected = [
        ("request", "POST", "/v1/payments"),  # found through its Idempotency-Key
        ("status", None, "requires_action"),
        ("event", "payment.created"),
        ("event", "payment.requires_action"),
        ("status", "requires_action", "authorized"),
        ("event", "payment.authorized"),
        ("request", "POST", f"/v1/payments/{pay}/captures"),
        ("status", "authorized", "captured"),
        ("event", "payment.captured"),
        ("attempt", 500),
        ("attempt", 200),
        ("request", "POST", f"/v1/payments/{pay}/refunds"),
        ("status", None, "succeeded"),
        ("event", "refund.created"),
        ("event", "refund.succeeded"),
    ]
    # Each in this order (what else happened sits between: other events, their attempts).
    remaining = iter(told)
    assert all(step in remaining for step in expected), told
    assert told.count(("attempt", 500)) == 1
    refund_changes = [i["status_change"] for i in items if i["type"] == "status_change"]
    assert refund_changes[-1]["resource"] == refund["id"]
    # The attempts carry their answers, the request its entry as the request log keeps it.
    failed, retried = [
        i["delivery_attempt"]
        for i in items
        if i["type"] == "delivery_attempt" and i["delivery_attempt"]["event"] == captured.id
    ]
    assert (failed["status"], failed["attempt"], failed["http_status"]) == ("failed", 1, 500)
    assert (retried["status"], retried["attempt"], retried["http_status"]) == ("delivered", 2, 200)
    # The back office's payment page tells the same story, from the same code.
    assert page_rows(staff_client, pay) == [(item["type"], item["id"]) for item in items]
    create = items[0]["request"]
    assert (create["object"], create["status"], create["idempotency_key"]) == (
        "request_log",
        201,
        "create-1",
    )


def test_a_story_costs_four_queries_whatever_its_length(api, django_assert_num_queries):
    payment = post(api, "/v1/payments", payment_body(tokenize(api)), key="k")
    for number in range(3):
        post(api, f"/v1/payments/{payment['id']}/refunds", {"amount": 100}, key=f"r{number}")
    request_recorder.writer.flush()
    found = Payment.objects.get(pk=payment["id"])
    # refunds' ids, events, requests (the create's claim a subquery), attempts
    with django_assert_num_queries(4):
        items = payment_timeline(found)
    assert sum(item.type == "request" for item in items) == 4


def test_a_create_sent_without_an_idempotency_key_is_in_the_story(api):
    """No claim to find it through: the payment keeps its create's request id."""
    created = api.post("/v1/payments", payment_body(tokenize(api)), format="json")
    assert created.status_code == 201
    pay = created.json()["id"]
    post(api, f"/v1/payments/{pay}/refunds", {"amount": 100}, key="r")
    request_recorder.writer.flush()
    requests = [i["request"] for i in read_timeline(api, pay, limit=50) if i["type"] == "request"]
    assert [(r["method"], r["path"], r["idempotency_key"]) for r in requests] == [
        ("POST", "/v1/payments", None),
        ("POST", f"/v1/payments/{pay}/refunds", "r"),
    ]
    assert requests[0]["id"] == created["X-Request-Id"]


def test_the_timeline_is_the_merchant_s_own(api, other_api, live_api):
    payment = post(api, "/v1/payments", payment_body(tokenize(api)), key="k")
    for client in (other_api, live_api):
        response = client.get(f"/v1/payments/{payment['id']}/timeline")
        assert (response.status_code, response.json()["error"]["code"]) == (
            404,
            "resource_not_found",
        )


def test_a_bad_cursor_is_a_400(api):
    payment = post(api, "/v1/payments", payment_body(tokenize(api)), key="k")
    response = api.get(f"/v1/payments/{payment['id']}/timeline", {"starting_after": "nope"})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "starting_after"


def test_a_failure_profile_s_duplicate_deliveries_are_marked(api, receiver, endpoint_for):
    endpoint_for(receiver)
    api.post("/v1/sandbox/failure-profile", {"duplicate_share": 1.0}, format="json")
    pay = post(api, "/v1/payments", payment_body(tokenize(api)), key="create-1")["id"]
    deliver_due()  # each first attempt...
    deliver_due()  # ... and its duplicate
    attempts = [
        item["delivery_attempt"]
        for item in read_timeline(api, pay, limit=50)
        if item["type"] == "delivery_attempt"
    ]
    assert attempts and {a["injected"] for a in attempts} == {"duplicate"}
    assert sorted(a["attempt"] for a in attempts) == sorted([1, 2] * (len(attempts) // 2))
