"""Issue 21: a configuration change made on a node cut off from Redis holds on every node at
once. Node A is a real web process with Redis, which has cached the key and the merchant's
endpoint list; node B has no Redis (a closed port): the revoke_key command, or this test
process making an endpoint. Before the revision moved to PostgreSQL, A went on accepting the
revoked key and fanning out without the new endpoint for up to a minute."""

import subprocess
import sys

import pytest

from accounts.services import merchant_create
from tests.e2e.processes import ROOT, service_env, web_server
from tests.racing import Api
from tests.sick import CLOSED_PORT_URL
from webhooks.models import Delivery
from webhooks.services import endpoint_create

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

URL = "https://93.184.215.14/hooks"  # a public address: no DNS; no worker runs to send to it


def manage(*args: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=service_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def node_a_serves(api: Api) -> int:
    return api.get("/v1/payments").status_code


@pytest.fixture(scope="module")
def node_a(django_db_setup):
    with web_server() as base_url:
        yield base_url


def test_a_key_revoked_on_a_node_without_redis_is_refused_at_once_everywhere(node_a):
    created = merchant_create(name="Acme", email="ops@acme.test")
    issued = created.keys["test"]["secret"]
    api = Api(node_a, issued.secret)
    assert [node_a_serves(api) for _ in range(2)] == [200, 200]  # cached on node A
    revoked = manage("revoke_key", issued.api_key.id, "--for-real", REDIS_URL=CLOSED_PORT_URL)
    assert revoked.returncode == 0, revoked.stderr
    assert [node_a_serves(api) for _ in range(2)] == [401, 401]
    assert "Traceback" not in revoked.stderr


def test_an_endpoint_created_on_a_node_without_redis_gets_the_next_events_everywhere(
    node_a, settings
):
    created = merchant_create(name="Acme", email="ops@acme.test")
    api = Api(node_a, created.keys["test"]["secret"].secret)
    api.payment("4242424242424242")  # node A cached "no endpoint"
    settings.CACHES = {
        **settings.CACHES,
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CLOSED_PORT_URL,
        },
    }
    endpoint = endpoint_create(merchant=created.merchant, livemode=False, url=URL).endpoint
    payments = [api.payment("4242424242424242")["id"] for _ in range(3)]
    for payment_id in payments:
        deliveries = Delivery.objects.filter(event__resource_id=payment_id)
        assert deliveries.exists()
        assert set(deliveries.values_list("endpoint_id", flat=True)) == {endpoint.id}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["revoke_key", "key_01M881W0000000000000000000", "--for-real"], "The key may not be"),
        (["issue_key", "--merchant", "mch_01M881W0000000000000000000"], "No usable key was"),
        (["create_merchant", "--name", "Acme", "--email", "a@acme.test"], "No merchant was"),
    ],
    ids=["revoke_key", "issue_key", "create_merchant"],
)
def test_a_command_that_cannot_reach_the_database_says_so_in_one_line_and_fails(args, says):
    """No Redis to fail any more: a change commits with its revision or not at all."""
    result = manage(*args, DATABASE_URL="postgres://postgres@127.0.0.1:1/down")  # closed port
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"CommandError: {says}"), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
