"""Real concurrency on PostgreSQL: one Idempotency-Key sent by many threads at once runs the
work exactly once; every other request is told the key is in use, or gets the replay."""

import json
import threading

import pytest
from django.db import connection

from accounts.models import Merchant
from api.models import IdempotencyRecord
from tests.conftest import key_client

pytestmark = [
    pytest.mark.urls("tests.support.urls"),
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]

THREADS = 8


def send_together(secret: str, raw: bytes, key: str, count: int, path="/v1/test/work") -> list:
    """`count` threads, released at once by a barrier, each with its own client and
    database connection, POSTing `raw` to `path`."""
    barrier = threading.Barrier(count)
    responses = [None] * count

    def send(index):
        client = key_client(secret)
        try:
            barrier.wait(timeout=30)
            responses[index] = client.post(
                path, raw, content_type="application/json", HTTP_IDEMPOTENCY_KEY=key
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return responses


@pytest.mark.parametrize("outcome", ["created", "declined"])
def test_one_key_sent_at_once_runs_the_work_once(new_merchant, outcome, settings):
    settings.API_RATE_LIMITS = {mode: {"rate": 1000.0, "burst": 1000} for mode in ("test", "live")}
    tag = f"race-{outcome}"
    raw = json.dumps({"tag": tag, "delay_ms": 300, "outcome": outcome}).encode()
    secret = new_merchant.keys["test"]["secret"].secret

    responses = send_together(secret, raw, f"race-{outcome}", THREADS)

    assert Merchant.objects.filter(name=tag).count() == 1
    originals = [r for r in responses if r.status_code != 409 and "Idempotent-Replayed" not in r]
    assert len(originals) == 1, [r.status_code for r in responses]
    (original,) = originals
    for response in responses:
        if response.status_code == 409:
            assert response.json()["error"]["code"] == "idempotency_key_in_use"
        elif response is not original:
            assert response.content == original.content
    assert IdempotencyRecord.objects.get().status == original.status_code
