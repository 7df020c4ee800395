import pytest
from django.contrib.auth.models import Group, User
from django.test import Client


@pytest.fixture
def agent(db):
    """agent("Support") -> a test client logged in as a staff user in that group only."""

    def login(group_name: str) -> Client:
        user = User.objects.create_user(f"agent-{group_name}", password="pw", is_staff=True)
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
