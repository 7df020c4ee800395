"""No route answers a success to a key that is not valid, nor to a live publishable key: what
the proxy's known-key table rests on (deploy/haproxy.cfg records a key as the live pool's on a
2xx answer, and every other answer, a 400 or a 404 included, can come before authentication)."""

import re

import pytest

from tests.api.test_openapi import service_routes
from tests.conftest import key_client

pytestmark = pytest.mark.django_db

MADE_UP = [None, "svc_sk_live_" + "m" * 24, "svc_pk_live_" + "m" * 24, "svc_sk_test_" + "m" * 24]


def successes(client) -> list[tuple[str, str, int]]:
    """Every route and method (but the preflight) with an empty body: those answered < 400."""
    answered = []
    for path, methods in service_routes().items():
        url = re.sub(r"\{\w+\}", "x_1", path)
        for method in methods - {"options"}:
            response = getattr(client, method)(url, {}, format="json")
            answered.append((method, url, response.status_code))
    assert len(answered) > 20
    return [answer for answer in answered if answer[2] < 400]


@pytest.mark.parametrize("key", MADE_UP, ids=["none", "secret", "publishable", "test"])
def test_no_route_answers_a_success_without_a_valid_key(key):
    assert successes(key_client(key)) == []


def test_no_route_answers_a_success_to_a_live_publishable_key(live_publishable_api):
    """Every route a publishable key may call is test-mode only (403 test_mode_required) but
    the live token exchange (POST /v1/processor-tokens), which needs a processor's reference
    in its body: with an empty one it is 400. A successful exchange does make the proxy learn
    the key (docs/processors.md "Hosted fields and live tokens")."""
    assert successes(live_publishable_api) == []
    assert live_publishable_api.get("/v1/sandbox/test-cards").status_code == 403
