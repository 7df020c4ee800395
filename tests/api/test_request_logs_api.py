"""GET /v1/request-logs: a merchant's own requests, kept by a background writer that adds no
SQL to the request it records (docs/request-log.md)."""

import datetime
import threading

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from api import request_recorder
from api.models import RequestLogEntry
from tests.factories import id_made_now
from tests.payments.support import APPROVED, created

pytestmark = pytest.mark.django_db


def logs(api, **params) -> list[dict]:
    request_recorder.writer.flush()
    response = api.get("/v1/request-logs", params)
    assert response.status_code == 200, response.content
    return response.json()["data"]


def test_each_request_is_listed_newest_first_with_its_outcome(api, live_api, other_api):
    payment = created(api, APPROVED)
    declined = api.post("/v1/payments", {"amount": 5}, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    api.post("/v1/payments", {"amount": 5}, format="json", HTTP_IDEMPOTENCY_KEY="k1")  # replay
    live_api.get("/v1/payments")
    other_api.get("/v1/payments")

    entries = logs(api)

    assert [(e["method"], e["path"], e["status"]) for e in entries] == [
        ("POST", "/v1/payments", 400),
        ("POST", "/v1/payments", 400),
        ("POST", "/v1/payments", 201),
        ("POST", "/v1/sandbox/tokens", 201),
    ]
    replay, first = entries[0], entries[1]
    assert first["id"] == declined["X-Request-Id"] and not first["idempotent_replayed"]
    assert replay["idempotent_replayed"] and replay["idempotency_key"] == "k1"
    assert first["error"] == {"type": "validation_error", "code": declined.json()["error"]["code"]}
    assert entries[2]["error"] is None and entries[2]["object"] == "request_log"
    assert entries[2]["livemode"] is False and entries[2]["key_id"].startswith("key_")
    assert payment["id"]  # the request the entry records made it
    assert [e["path"] for e in logs(live_api)] == ["/v1/payments"]


def test_requests_without_a_valid_key_are_nobody_s_log(api, anonymous_api):
    anonymous_api.get("/v1/payments")
    assert logs(api) == []


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"status": "4xx"}, ["/v1/payments/pay_unknown"]),
        ({"status": "200"}, ["/v1/payments"]),
        ({"path": "/v1/payments"}, ["/v1/payments"]),
        ({"idempotency_key": "order-7"}, ["/v1/sandbox/tokens"]),
    ],
)
def test_filters(api, params, expected):
    api.get("/v1/payments")
    api.get("/v1/payments/pay_unknown")
    api.post(
        "/v1/sandbox/tokens",
        {"number": APPROVED, "exp_month": 12, "exp_year": 2099, "cvc": "123"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="order-7",
    )
    assert [entry["path"] for entry in logs(api, **params)] == expected


def test_request_id_and_a_time_window(api):
    first = api.get("/v1/payments")
    api.get("/v1/payments")
    (entry,) = logs(api, request_id=first["X-Request-Id"])
    assert entry["id"] == first["X-Request-Id"]
    created_at = entry["created"]
    assert first["X-Request-Id"] in [e["id"] for e in logs(api, **{"created[lte]": created_at})]
    later = (timezone.now() + datetime.timedelta(minutes=1)).isoformat()
    assert logs(api, **{"created[gte]": later}) == []


def test_the_id_a_replay_carried_finds_the_replay_and_the_request_it_replayed(api):
    """Issue 38 item 4 (docs/request-log.md "Replays"): a replay answers with the original
    request's X-Request-Id, the id its client holds; that id finds the replay's own entry
    and the original's, newest first, and the Idempotency-Key finds both too."""
    first = api.post("/v1/payments", {"amount": 5}, format="json", HTTP_IDEMPOTENCY_KEY="k2")
    again = api.post("/v1/payments", {"amount": 5}, format="json", HTTP_IDEMPOTENCY_KEY="k2")
    assert again["Idempotent-Replayed"] == "true"
    assert again["X-Request-Id"] == first["X-Request-Id"]
    replay, original = logs(api, request_id=again["X-Request-Id"])
    assert replay["idempotent_replayed"] and replay["replay_of"] == again["X-Request-Id"]
    assert replay["status"] == original["status"] == again.status_code
    assert not original["idempotent_replayed"] and original["replay_of"] is None
    assert original["id"] == again["X-Request-Id"] != replay["id"]
    assert logs(api, idempotency_key="k2") == [replay, original]


@pytest.mark.parametrize(
    ("name", "value"),
    [("status", "teapot"), ("status", "600"), ("created[gte]", "yesterday"), ("path", "a\x00b")],
)
def test_a_bad_filter_is_a_400_naming_it(api, name, value):
    response = api.get("/v1/request-logs", {name: value})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == name


def test_recording_adds_no_sql_to_the_request(api):
    api.get("/v1/payments")  # the key is looked up, cached or not
    with CaptureQueriesContext(connection) as queries:
        api.get("/v1/payments")
    assert not [q for q in queries.captured_queries if "requestlog" in q["sql"].lower()]
    assert request_recorder.writer.flush() == 2


@pytest.mark.django_db(transaction=True)
def test_the_writer_thread_inserts_within_its_interval(api, settings):
    settings.REQUEST_LOG_FLUSH_SECONDS = 0.05
    writer = request_recorder.RequestLogWriter()
    written = threading.Event()
    flush = writer.flush

    def watched_flush():
        count = flush()
        if count:
            written.set()
        return count

    writer.flush = watched_flush
    writer.add({**entry(), "id": id_made_now("req")})
    assert written.wait(10)
    assert RequestLogEntry.objects.count() == 1


def entry(**values) -> dict:
    return {
        "merchant_id": "mch_x",
        "livemode": False,
        "key_id": "key_x",
        "method": "GET",
        "path": "/v1/payments",
        "status": 200,
        "error_type": None,
        "error_code": None,
        "idempotency_key": None,
        "replayed": False,
        "api_version": "2026-08-19",
        "duration_ms": 1.5,
        "created": timezone.now(),
        **values,
    }


@pytest.mark.postgres
def test_a_batch_the_database_refuses_is_dropped_and_counted_never_raised():
    writer = request_recorder.RequestLogWriter()
    writer.add(entry(id="req_" + "X" * 100))  # longer than the column: a DataError
    assert writer.flush() == 0
    assert writer.dropped == 1 and not RequestLogEntry.objects.exists()


@pytest.mark.postgres
def test_a_publishable_key_cannot_blank_another_merchant_s_log(
    publishable_api, other_api, other_merchant
):
    """Issue 35 item 3: a method longer than its column or a NUL in the path, sent with a
    public key, failed the whole batch, and every merchant's entries in it were dropped."""
    publishable_api.generic("ABCDEFGHIJKLMNOP", "/v1/payments")
    publishable_api.get("/v1/payments/pay_x%00")
    for _ in range(3):
        other_api.get("/v1/payments")
    publishable_api.get("/v1/payments/pay_" + "x" * 3000)
    assert [e["path"] for e in logs(other_api)] == ["/v1/payments"] * 3
    kept = RequestLogEntry.objects.exclude(merchant_id=other_merchant.id)
    assert sorted((e.method, e.path[:21], len(e.path)) for e in kept) == [
        ("ABCDEFGHIJ", "/v1/payments", 12),  # the method's column is 10 characters
        ("GET", "/v1/payments/pay_x%00", 21),  # NUL is written as the client sent it
        ("GET", "/v1/payments/pay_xxxx", 2048),  # the path's column is 2,048
    ]


@pytest.mark.postgres
def test_an_entry_the_database_still_refuses_is_dropped_alone(caplog):
    writer = request_recorder.RequestLogWriter()
    good = [entry(id=id_made_now("req"), merchant_id=f"mch_{n}") for n in range(3)]
    writer.add(good[0])
    writer.add(entry(id="req_" + "X" * 100))  # an id longer than its column: a DataError
    writer.add(good[1])
    writer.add(good[2])
    assert writer.flush() == 3
    assert writer.dropped == 1 and "req_XXXX" in caplog.text
    assert sorted(RequestLogEntry.objects.values_list("pk", flat=True)) == sorted(
        e["id"] for e in good
    )


def test_entries_past_retention_are_purged(settings):
    settings.REQUEST_LOG_RETENTION = datetime.timedelta(days=30)
    writer = request_recorder.RequestLogWriter()
    with time_machine.travel(timezone.now() - datetime.timedelta(days=31), tick=False):
        writer.add(entry(id=id_made_now("req")))
    young = id_made_now("req")
    writer.add(entry(id=young))
    writer.flush()
    assert request_recorder.request_log_purge() == 1
    assert list(RequestLogEntry.objects.values_list("pk", flat=True)) == [young]
