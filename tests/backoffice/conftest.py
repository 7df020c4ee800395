from importlib import import_module

import pytest
from django.apps import apps
from django.contrib.auth.models import Group, User
from django.test import Client


@pytest.fixture
def groups(db):
    """The migration's groups, made again by its own code when a transactional test (which
    empties every table when it ends) ran before this one."""
    import_module("refunds.migrations.0002_back_office_groups").create_groups(apps, None)


@pytest.fixture
def agent(groups):
    """agent("Support") -> a test client logged in as a staff user in that group only."""

    def login(group_name: str) -> Client:
        user = User.objects.create_user(
            f"agent-{group_name}", password="a long and unlikely passphrase", is_staff=True
        )
        user.groups.add(Group.objects.get(name=group_name))
        client = Client()
        client.force_login(user)
        return client

    return login


# The real HTTPS receiver and endpoints of the webhook tests, for the delivery pages.
from tests.webhooks.conftest import (  # noqa: E402, F401
    ca_bundle,
    emit_event,
    endpoint_for,
    loopback_allowed,
    receiver,
    webhook_ca,
)
