"""Made-up keys from many addresses, each under its address's limit (issue 35): past the fleet's
one bucket of unknown keys, they are refused without a query for the key, and a real key,
however new, is still served (admission/unknown_keys.py, accounts/keyfilter.py)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts import keyfilter
from accounts.models import ApiKey
from accounts.services import api_key_issue
from tests.admission.test_client_limits import counters_in
from tests.api.test_conventions import error_of
from tests.conftest import key_client

pytestmark = [pytest.mark.urls("tests.support.urls"), pytest.mark.postgres]

ADDRESSES = [f"203.0.113.{n}" for n in range(1, 7)]


def made_up(n: int) -> str:
    return f"svc_sk_live_{n:020d}"


@pytest.fixture(params=["redis", "locmem"])
def one_bucket(request, settings, time_machine):
    """The fleet's bound at 3 unknown keys (refilled 1 every 10 s, the clock frozen); every
    address far under its own limit, as in a flood from many addresses."""
    counters_in(request.param, settings)
    settings.API_ADDRESS_RATE_LIMIT = {"rate": 10.0, "burst": 100}
    settings.API_UNKNOWN_KEY_RATE_LIMIT = {"rate": 0.1, "burst": 3}
    time_machine.move_to("2026-11-28T00:00:00Z", tick=False)
    keyfilter.forget()
    yield
    keyfilter.forget()


def key_lookups(queries) -> list[str]:
    return [query["sql"] for query in queries if ApiKey._meta.db_table in query["sql"]]


def from_(address: str) -> dict:
    return {"REMOTE_ADDR": address}


def flood(count: int) -> list[int]:
    """`count` made-up keys, from three addresses in turn: each far under its own limit."""
    return [
        key_client(made_up(n)).get("/v1/test/keys", **from_(ADDRESSES[n % 3])).status_code
        for n in range(count)
    ]


def test_made_up_keys_from_many_addresses_cost_no_key_query_past_the_fleets_bound(
    transactional_db, new_merchant, one_bucket
):
    assert flood(4) == [401, 401, 401, 401]  # each looked up; the fourth found the bucket empty
    key_client(made_up(4)).get("/v1/test/keys", **from_(ADDRESSES[3]))  # the filter is built
    for n, address in enumerate(ADDRESSES[3:], start=5):
        with CaptureQueriesContext(connection) as queries:
            refused = key_client(made_up(n)).get("/v1/no-such-path", **from_(address))
        error_of(refused, 401, "authentication_error", "invalid_api_key")  # not the 404: no URL
        assert refused["WWW-Authenticate"] == 'Bearer realm="api"'
        assert key_lookups(queries) == []


def test_a_real_key_is_never_refused_by_the_bound_however_new(
    transactional_db, new_merchant, one_bucket
):
    flood(4)
    assert key_client(made_up(9)).get("/v1/test/keys", **from_(ADDRESSES[4])).status_code == 401
    live = new_merchant.keys["live"]["secret"].secret  # never used in this process
    assert key_client(live).get("/v1/test/keys", **from_(ADDRESSES[5])).status_code == 200
    issued = api_key_issue(merchant=new_merchant.merchant, kind="secret", livemode=True)
    assert key_client(issued.secret).get("/v1/test/keys", **from_(ADDRESSES[5])).status_code == 200
    publishable = new_merchant.keys["test"]["publishable"].secret
    answer = key_client(publishable).get("/v1/test/publishable", **from_(ADDRESSES[5]))
    assert answer.status_code == 200
