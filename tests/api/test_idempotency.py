"""Spec "Common rules" 1: idempotent replay (decisions in docs/request-safety.md)."""

import datetime
import json

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from accounts.models import Merchant
from api.idempotency import idempotency_claim
from api.models import IdempotencyRecord
from api.tasks import purge_expired_idempotency_records
from config.celery import app as celery_app
from tests.api.test_conventions import error_of

pytestmark = pytest.mark.urls("tests.support.urls")

VISA = "4242424242424242"


def post(client, body: dict | bytes, key=None, path="/v1/test/work"):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post(path, raw, content_type="application/json", **headers)


def claim_without_answering(new_merchant, body: dict, key: str):
    """What a request that claimed `key` and has not answered (still running, or dead)
    leaves behind."""
    idempotency_claim(
        merchant_id=new_merchant.merchant.id,
        livemode=False,
        key=key,
        method="POST",
        path="/v1/test/work",
        body=json.dumps(body).encode(),
        request_id="req_first",
    )


def executions(tag: str) -> int:
    return Merchant.objects.filter(name=tag).count()


def assert_replay_of(replay, original):
    assert replay["Idempotent-Replayed"] == "true"
    assert replay.status_code == original.status_code
    assert replay.content == original.content  # byte for byte
    assert replay["Content-Type"] == original["Content-Type"]
    assert replay["X-Request-Id"] == original["X-Request-Id"]


def test_same_key_and_body_replays_the_original_bytes(api):
    body = {"tag": "once"}
    original = post(api, body, key="k1")
    assert original.status_code == 201
    assert "Idempotent-Replayed" not in original
    replay = post(api, body, key="k1")
    assert_replay_of(replay, original)
    assert executions("once") == 1


def test_a_replayed_error_carries_its_original_request_id(api):
    original = post(api, {"tag": "t", "delay_ms": -1}, key="bad")  # 400 from the view
    error_of(original, 400, "validation_error", "invalid_parameter")
    replay = post(api, {"tag": "t", "delay_ms": -1}, key="bad")
    assert_replay_of(replay, original)
    assert replay.json()["error"]["request_id"] == replay["X-Request-Id"]


@pytest.mark.parametrize(
    "outcome, status, type_, code",
    [
        ("declined", 402, "card_error", "card_declined"),
        ("failed", 422, "processing_error", "payment_failed"),
    ],
)
def test_a_decline_or_failure_is_final_and_never_a_second_attempt(
    api, outcome, status, type_, code
):
    """The work is committed, then the view answers 402 or 422: that is what is replayed."""
    body = {"tag": outcome, "outcome": outcome}
    original = post(api, body, key="d1")
    error_of(original, status, type_, code)
    assert_replay_of(post(api, body, key="d1"), original)
    assert executions(outcome) == 1


def test_invalid_json_answer_is_stored_too(api):
    original = post(api, b'{"tag": ', key="j")
    error_of(original, 400, "validation_error", "invalid_json")
    assert_replay_of(post(api, b'{"tag": ', key="j"), original)


@pytest.mark.parametrize(
    "outcome, status, type_, code",
    [
        ("api_error_first", 500, "api_error", "internal_error"),
        ("crash_first", 500, "api_error", "internal_error"),
        ("rate_limited_first", 429, "rate_limit_error", "rate_limit_exceeded"),
    ],
)
def test_a_5xx_or_429_is_not_stored_and_a_retry_runs_again(api, outcome, status, type_, code):
    api.raise_request_exception = False
    body = {"tag": outcome, "outcome": outcome}
    first = post(api, body, key="r1")
    error_of(first, status, type_, code)
    # Released, not left "in use": the record stays, free at once, for the retry to take over.
    (record,) = IdempotencyRecord.objects.all()
    assert record.in_flight and record.lease_until <= timezone.now()
    retry = post(api, body, key="r1")
    assert retry.status_code == 201 and retry.json()["execution"] == 2
    assert_replay_of(post(api, body, key="r1"), retry)
    assert executions(outcome) == 2


@pytest.mark.parametrize(
    "other",
    [
        {"body": {"tag": "other"}},
        {"body": {"tag": "same"}, "path": "/v1/test/accept"},
    ],
)
def test_same_key_for_another_request_is_a_conflict(api, other):
    assert post(api, {"tag": "same"}, key="c1").status_code == 201
    response = post(api, key="c1", **other)
    error_of(response, 409, "idempotency_error", "idempotency_key_conflict")
    assert executions("other") == 0


def test_whitespace_makes_another_body(api):
    """The raw bytes are compared: a re-serialised body is another request."""
    assert post(api, {"tag": "ws"}, key="w").status_code == 201
    response = post(api, b'{"tag":"ws"}', key="w")
    error_of(response, 409, "idempotency_error", "idempotency_key_conflict")


def test_key_in_flight_is_in_use(api, new_merchant):
    claim_without_answering(new_merchant, {"tag": "busy"}, "busy")
    response = post(api, {"tag": "busy"}, key="busy")
    error_of(response, 409, "idempotency_error", "idempotency_key_in_use")
    assert executions("busy") == 0


def test_a_crashed_claim_frees_the_key_when_its_lease_ends(api, new_merchant, time_machine):
    """A request that died without answering (no response stored, no release) holds the key
    only until its lease ends; then a retry runs."""
    time_machine.move_to(timezone.now(), tick=False)
    claim_without_answering(new_merchant, {"tag": "crashed"}, "lost")
    time_machine.shift(datetime.timedelta(seconds=django_settings.IDEMPOTENCY_LEASE_SECONDS - 1))

    def send():
        return post(api, {"tag": "crashed"}, key="lost")

    error_of(send(), 409, "idempotency_error", "idempotency_key_in_use")
    time_machine.shift(datetime.timedelta(seconds=1))
    retried = send()
    assert retried.status_code == 201
    assert_replay_of(send(), retried)
    assert executions("crashed") == 1


def test_the_window_is_24_hours(api, time_machine):
    time_machine.move_to(timezone.now(), tick=False)
    original = post(api, {"tag": "day"}, key="d")
    time_machine.shift(datetime.timedelta(hours=24) - datetime.timedelta(seconds=1))
    assert_replay_of(post(api, {"tag": "day"}, key="d"), original)
    time_machine.shift(datetime.timedelta(seconds=1))
    assert post(api, {"tag": "another day"}, key="d").status_code == 201  # no conflict
    assert executions("day") == 1 and executions("another day") == 1


def test_keys_are_scoped_per_merchant_and_mode(api, live_api, other_api):
    for client in (api, live_api, other_api):
        response = post(client, {"tag": "scoped"}, key="shared")
        assert response.status_code == 201 and "Idempotent-Replayed" not in response
    assert executions("scoped") == 3


def test_post_without_the_header_runs_every_time(api):
    post(api, {"tag": "plain"})
    post(api, {"tag": "plain"})
    assert executions("plain") == 2
    assert not IdempotencyRecord.objects.exists()


def test_only_posts_are_idempotent(api):
    api.get("/v1/test/keys", HTTP_IDEMPOTENCY_KEY="g")
    assert not IdempotencyRecord.objects.exists()


def test_the_tokenizer_ignores_the_header(api):
    for _ in range(2):
        response = post(api, {"number": VISA, "cvc": "123"}, key="t", path="/v1/test/tokenize")
        assert response.status_code == 201 and "Idempotent-Replayed" not in response
    assert not IdempotencyRecord.objects.exists()


def test_card_data_is_refused_before_anything_is_stored(api):
    response = post(api, {"tag": "t", "note": VISA}, key="card")
    error_of(response, 400, "validation_error", "raw_card_data_not_allowed")
    assert not IdempotencyRecord.objects.exists()
    assert post(api, {"tag": "clean"}, key="card").status_code == 201  # the key is unused


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9", "tab\there"])
def test_malformed_key_is_400_naming_the_header(api, key):
    body = error_of(post(api, {"tag": "k"}, key=key), 400, "validation_error", "invalid_parameter")
    assert body["param"] == "Idempotency-Key"
    assert executions("k") == 0


def test_the_longest_key_is_accepted(api):
    assert post(api, {"tag": "long"}, key="k" * 255).status_code == 201


def test_records_never_hold_a_card_number_from_the_path_or_key(api):
    assert post(api, {"tag": "path"}, key=VISA, path=f"/v1/test/work/{VISA}").status_code == 201
    (record,) = IdempotencyRecord.objects.values()
    assert VISA not in repr(record)
    assert record["path"] == "/v1/test/work/[redacted]"


def test_purge_deletes_records_past_their_window(api, time_machine):
    time_machine.move_to(timezone.now(), tick=False)
    post(api, {"tag": "old"}, key="old")
    time_machine.shift(datetime.timedelta(hours=23))
    newer = post(api, {"tag": "new"}, key="new")
    time_machine.shift(datetime.timedelta(hours=1))
    assert purge_expired_idempotency_records.apply().get() == 1
    assert [record.request_id for record in IdempotencyRecord.objects.all()] == [
        newer["X-Request-Id"]
    ]


def test_purge_runs_on_beat():
    entry = django_settings.CELERY_BEAT_SCHEDULE["api-purge-idempotency-records"]
    assert entry["task"] in celery_app.tasks
    assert entry["schedule"] <= 3600
