"""The request log: one structured record per API request, with card-shaped strings redacted,
and no card number or security code reaching the logs or the database."""

import io
import json
import logging
import re

import pytest
from django.apps import apps

from api import request_recorder
from api.logfilters import RedactCardData
from api.models import IdempotencyRecord

pytestmark = pytest.mark.urls("tests.support.urls")

VISA = "4242424242424242"
CVC = "7391"


@pytest.fixture
def console():
    """What the configured log handler (config/settings/observability.py LOGGING) writes, as
    text."""
    (handler,) = [
        handler
        for handler in logging.getLogger().handlers
        if any(isinstance(f, RedactCardData) for f in handler.filters)
    ]
    written = io.StringIO()
    previous = handler.setStream(written)
    yield written
    handler.setStream(previous)


def request_logs(caplog) -> list[dict]:
    return [record.request_log for record in caplog.records if hasattr(record, "request_log")]


def test_every_api_request_is_logged_with_its_context(api, new_merchant, caplog, console):
    caplog.set_level(logging.INFO, logger="api.request")
    response = api.post(
        "/v1/test/echo", {"amount": 1, "currency": "eur"}, format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    key = new_merchant.keys["test"]["secret"].api_key
    (entry,) = request_logs(caplog)
    assert entry == {
        "method": "POST",
        "path": "/v1/test/echo",
        "status": 201,
        "merchant": key.merchant_id,
        "key_id": key.id,
        "mode": "test",
        "request_id": response["X-Request-Id"],
        "idempotency_key": "k",
        "replayed": False,
        "duration_ms": entry["duration_ms"],
    }
    assert isinstance(entry["duration_ms"], float) and entry["duration_ms"] >= 0
    assert json.loads(console.getvalue().split(" api.request ", 1)[1]) == entry


def test_failures_are_logged_too(api, anonymous_api, caplog):
    caplog.set_level(logging.INFO, logger="api.request")
    api.raise_request_exception = False
    anonymous_api.get("/v1/test/keys")
    api.get("/v1/nowhere")
    api.get("/v1/test/boom")
    entries = request_logs(caplog)
    assert [(e["path"], e["status"]) for e in entries] == [
        ("/v1/test/keys", 401),
        ("/v1/nowhere", 404),
        ("/v1/test/boom", 500),
    ]
    assert entries[0]["merchant"] is None and entries[0]["mode"] is None


def test_a_replay_is_logged_with_the_original_request_id(api, caplog):
    caplog.set_level(logging.INFO, logger="api.request")
    original, replay = [
        api.post("/v1/test/work", {"tag": "log"}, format="json", HTTP_IDEMPOTENCY_KEY="replay")
        for _ in range(2)
    ]
    first, second = request_logs(caplog)
    assert first["replayed"] is False and "original_request_id" not in first
    assert second["replayed"] is True
    assert second["original_request_id"] == original["X-Request-Id"] == replay["X-Request-Id"]
    assert second["request_id"] != original["X-Request-Id"]  # this exchange has its own id


def test_admin_pages_are_not_in_the_api_log(client, caplog, db):
    caplog.set_level(logging.INFO, logger="api.request")
    client.get("/admin/login/")
    assert request_logs(caplog) == []


def database_values() -> list[str]:
    """Every value in every table, bytes decoded, as text."""
    values = []
    for model in apps.get_models():
        for row in model.objects.values_list():
            for value in row:
                if isinstance(value, (bytes, memoryview)):
                    value = bytes(value).decode("latin-1")
                values.append(str(value))
    return values


def test_card_data_sent_to_the_tokenizer_reaches_neither_logs_nor_database(api, caplog, console):
    caplog.set_level(logging.DEBUG)
    response = api.post(
        f"/v1/test/tokenize?number={VISA}",
        {"number": VISA, "cvc": CVC, "exp_month": 12, "exp_year": 2030},
        format="json",
        HTTP_IDEMPOTENCY_KEY=f"key-{VISA}",
    )
    assert response.status_code == 201
    (entry,) = request_logs(caplog)
    assert entry["idempotency_key"] == "key-[redacted]"
    for written in (caplog.text, console.getvalue()):
        assert written  # something was logged, and it holds neither
        # The cvc as a number of its own: a timestamp's or duration's digits may hold it.
        assert VISA not in written and not re.search(rf"(?<!\d){CVC}(?!\d)", written)
    assert request_recorder.writer.flush() == 1  # the merchant's request log, in the database too
    values = database_values()
    assert values  # the merchant and its keys at least
    assert not [value for value in values if VISA in value or value == CVC or '"cvc"' in value]
    assert not IdempotencyRecord.objects.exists()


def test_the_log_filter_redacts_any_record_and_traceback(console):
    try:
        raise ValueError(f"could not charge {VISA}")
    except ValueError:
        logging.getLogger("payments").exception("failed for card %s", "4242 4242 4242 4242")
    written = console.getvalue()
    assert "failed for card [redacted]" in written
    assert "ValueError: could not charge [redacted]" in written
    assert not re.search(r"4242.?4242", written)


LIVE_KEY = "svc_sk_live_" + "Ab3" * 7  # key-shaped (decisions.md "Neutral names")
SIGNING_SECRET = "svc_whsec_" + "Zz9" * 11


def test_an_api_key_used_as_idempotency_key_is_redacted_from_the_request_log(api, caplog, console):
    caplog.set_level(logging.INFO, logger="api.request")
    api.post("/v1/test/echo", {"amount": 1}, format="json", HTTP_IDEMPOTENCY_KEY=LIVE_KEY)
    (entry,) = request_logs(caplog)
    assert entry["idempotency_key"] == "svc_sk_live_[redacted]"
    assert LIVE_KEY not in console.getvalue() and "svc_sk_live_[redacted]" in console.getvalue()


@pytest.mark.parametrize(
    "secret", [LIVE_KEY, SIGNING_SECRET, "svc_pk_test_" + "q" * 14, "svc_sk_test_short"]
)
def test_the_log_filter_redacts_keys_and_signing_secrets(console, secret):
    try:
        raise ValueError(f"bad secret {secret}")
    except ValueError:
        logging.getLogger("webhooks").exception("could not use %s.", secret)
    written = console.getvalue()
    assert secret not in written
    assert f"could not use {secret[: secret.rindex('_') + 1]}[redacted]." in written
    assert written.count("[redacted]") == 2  # the message and the traceback
