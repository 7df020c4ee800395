"""The StripeClient kept per connector account (processors/stripe/client.py): the proxies the
environment names are read once, when the client is made, not on every call."""

import pytest
from stripe import APIConnectionError

from processors.stripe.client import _client, stripe_client
from tests.processors.conftest import connector_account

DEAD_PROXY = "http://127.0.0.1:9"  # a proxy on the discard port: nothing listens there


@pytest.fixture
def fresh_clients():
    """Clients are kept per account for the process: these tests make their own."""
    _client.cache_clear()
    yield
    _client.cache_clear()


def unproxied(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.mark.django_db
def test_a_proxy_the_environment_names_is_used(localstripe, monkeypatch, fresh_clients):
    unproxied(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", DEAD_PROXY)
    client = stripe_client(connector_account(localstripe.url))
    with pytest.raises(APIConnectionError):
        client.v1.customers.create()


@pytest.mark.django_db
def test_the_environment_is_read_when_the_client_is_made_not_on_each_call(
    localstripe, monkeypatch, fresh_clients
):
    unproxied(monkeypatch)
    client = stripe_client(connector_account(localstripe.url))
    monkeypatch.setenv("HTTP_PROXY", DEAD_PROXY)  # read per call, this would fail the call
    assert client.v1.customers.create().id.startswith("cus_")
