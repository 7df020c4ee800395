"""No route answers a success to a key that is not valid: what the proxy's known-key table
rests on (deploy/haproxy.cfg records a key as the live pool's on a 2xx answer, and every
other answer, a 400 or a 404 included, can come before authentication)."""

import re

import pytest

from tests.api.test_openapi import service_routes
from tests.conftest import key_client

pytestmark = pytest.mark.django_db

MADE_UP = [None, "svc_sk_live_" + "m" * 24, "svc_pk_live_" + "m" * 24, "svc_sk_test_" + "m" * 24]


@pytest.mark.parametrize("key", MADE_UP, ids=["none", "secret", "publishable", "test"])
def test_no_route_answers_a_success_without_a_valid_key(key):
    client = key_client(key)
    answered = []
    for path, methods in service_routes().items():
        url = re.sub(r"\{\w+\}", "x_1", path)
        for method in methods - {"options"}:
            response = getattr(client, method)(url, {}, format="json")
            answered.append((method, url, response.status_code))
    assert len(answered) > 20
    assert [answer for answer in answered if answer[2] < 400] == []
