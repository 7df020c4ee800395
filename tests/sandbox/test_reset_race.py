"""A reset while test payments are being created (docs/sandbox.md "Reset"): real parallel
HTTP creates against a live server race the reset's batches; afterwards no test row of the
merchant is left, no create failed with a 5xx, and every live and other merchant's row is as
it was."""

import threading
from collections import Counter

import pytest

from infra import failpoints
from sandbox.reset import BATCH_DONE, sandbox_reset
from tests.factories import WebhookEndpointFactory
from tests.racing import CARD
from tests.sandbox.test_reset import everything_but, rows_left, sandbox_of

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CREATORS = 4
BATCHES_RACED = 3  # the creators stop after the reset's third batch of payments


class Creators:
    """Threads creating test payments (a token, then a payment) until told to stop."""

    def __init__(self, http):
        self.http, self.answers, self.stop = http, Counter(), threading.Event()
        self.first = threading.Event()
        self.threads = [threading.Thread(target=self.create) for _ in range(CREATORS)]

    def create(self):
        while not self.stop.is_set():
            token = self.http.post("/v1/sandbox/tokens", CARD)
            assert token.status_code == 201, token.content
            body = {"amount": 1000, "currency": "eur", "reference": "reset-race"}
            body["payment_method"] = {"type": "card", "token": token.json()["id"]}
            response = self.http.post("/v1/payments", body)
            code = response.json().get("error", {}).get("code")
            self.answers[(response.status_code, code)] += 1
            self.first.set()

    def start(self):
        for thread in self.threads:
            thread.start()
        assert self.first.wait(timeout=120), "no create answered"

    def finish(self):
        self.stop.set()
        for thread in self.threads:
            thread.join()


def test_a_reset_racing_creates_leaves_no_test_row(http, merchant, other_merchant):
    WebhookEndpointFactory(merchant=merchant)  # so creates write deliveries too
    sandbox_of(merchant, livemode=True)
    sandbox_of(other_merchant, livemode=False)
    kept = everything_but(merchant)
    creators = Creators(http)
    creators.start()
    batches = []

    def stop_creators_midway():
        batches.append(1)
        if len(batches) == BATCHES_RACED:
            creators.finish()  # requests in flight finish; the reset then carries on

    try:
        with failpoints.armed(BATCH_DONE, stop_creators_midway):
            result = sandbox_reset(merchant=merchant, batch=2)
    finally:
        creators.finish()
    assert len(batches) > BATCHES_RACED  # creates raced several batches, then more followed
    assert result.complete, result
    assert set(rows_left(merchant).values()) == {0}
    assert everything_but(merchant) == kept
    # A create either made its payment (deleted since) or met its token deleted: never a 5xx.
    assert creators.answers[(201, None)] > 0
    assert set(creators.answers) <= {(201, None), (400, "token_invalid")}, creators.answers
