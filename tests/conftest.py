"""Shared fixtures: a merchant with its four keys, an outsider, and a DRF client per key kind."""

import pytest
from django.contrib.auth.models import User
from django.db import connection
from rest_framework.test import APIClient

from accounts.services import merchant_create
from tests.racing import Api


def key_client(secret: str | None) -> APIClient:
    client = APIClient()
    if secret:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.fixture
def new_merchant(db):
    """The merchant under test, with `.keys[mode][kind].secret` for its four keys."""
    return merchant_create(name="Acme Ltd", email="owner@acme.test")


@pytest.fixture
def merchant(new_merchant):
    return new_merchant.merchant


@pytest.fixture
def other_new_merchant(db):
    """The outsider: must get 404 for everything the merchant owns."""
    return merchant_create(name="Other Co", email="owner@other.test")


@pytest.fixture
def other_merchant(other_new_merchant):
    return other_new_merchant.merchant


@pytest.fixture
def api(new_merchant):
    """Test-mode secret key: what a merchant's server uses in test mode."""
    return key_client(new_merchant.keys["test"]["secret"].secret)


@pytest.fixture
def publishable_api(new_merchant):
    return key_client(new_merchant.keys["test"]["publishable"].secret)


@pytest.fixture
def live_api(new_merchant):
    return key_client(new_merchant.keys["live"]["secret"].secret)


@pytest.fixture
def live_publishable_api(new_merchant):
    return key_client(new_merchant.keys["live"]["publishable"].secret)


@pytest.fixture
def other_api(other_new_merchant):
    return key_client(other_new_merchant.keys["test"]["secret"].secret)


@pytest.fixture
def staff_client(client, db):
    """A support person logged in to the admin."""
    User.objects.create_superuser("support", "support@example.test", "pw")
    client.login(username="support", password="pw")
    return client


@pytest.fixture
def anonymous_api():
    return key_client(None)


@pytest.fixture
def http(live_server, new_merchant):
    """The merchant's test secret key against a live server: for real parallel requests."""
    return Api(live_server.url, new_merchant.keys["test"]["secret"].secret)


def on_postgres() -> bool:
    return connection.vendor == "postgresql"


def pytest_collection_modifyitems(config, items):
    """Tests marked `postgres` need PostgreSQL itself (row locks, its indexes, its commit
    settings); on the embedded SQLite they are skipped."""
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (row locks or its own SQL); running on embedded SQLite")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)
