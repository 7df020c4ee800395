"""/readyz and /metrics read the database and anyone reaching a node may ask (issue 35): each
process computes one of each at a time, at most once a PROBE_REUSE_SECONDS per question, and
gives the last answer again meanwhile (config/probes.py)."""

import pytest

from config import draining, probes
from tests.observability.test_probes import beat_sent, readiness

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reused(settings):
    settings.PROBE_REUSE_SECONDS = 60
    probes.recent.forget()
    yield settings
    probes.recent.forget()


def test_readyz_is_given_again_within_the_window_not_computed(client, reused):
    beat_sent()
    assert readiness(client)[0] == 200
    draining.DRAINING.set()
    try:
        again = readiness(client)
        reused.PROBE_REUSE_SECONDS = 0
        computed = readiness(client)
    finally:
        draining.DRAINING.clear()
    assert again[0] == 200  # the checks did not run: draining is not seen yet
    assert computed[0] == 503


def test_a_metrics_scrape_is_given_again_within_the_window(client, api, reused):
    first = client.get("/metrics")
    assert api.get("/v1/payments/pay_01J0000000000000000000000A").status_code == 404  # counted
    assert client.get("/metrics").content == first.content
    reused.PROBE_REUSE_SECONDS = 0
    assert client.get("/metrics").content != first.content


def test_an_unauthorised_scrape_is_never_given_the_authorised_answer(client, reused):
    reused.METRICS_TOKEN = "scrape-token-1"
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-1").status_code == 200
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-2").status_code == 401


def test_while_one_is_computed_the_others_are_answered_at_once(client, reused):
    """Another thread computing /readyz holds its path's lock: a request without an answer to
    give again is 503 at once, one with an answer gets it, however old."""
    reused.PROBE_REUSE_SECONDS = 0
    beat_sent()
    with probes.recent._running["/readyz"]:
        busy = client.get("/readyz")
    assert (busy.status_code, busy["Retry-After"]) == (503, "1")
    status, report = readiness(client)
    with probes.recent._running["/readyz"]:
        assert readiness(client) == (status, report) == (200, report)
