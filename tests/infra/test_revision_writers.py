"""Every write path of what processes cache changes the configuration revision in the
transaction of the write (`infra.revision.changed()`, infra/revision.py): API keys and merchants
(accounts/keycache.py), webhook endpoints (the fan-out's lists) and test-mode failure profiles
(sandbox/profiles.py), through the services, the admin and manage.py. No trigger does it for
them (api/migrations/0010).

Each test's writes are committed (a transactional test): `changed()` refuses to run outside a
transaction, so a path that wrote in autocommit would fail here, not only in production."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from accounts.models import ApiKey, Merchant
from accounts.services import api_key_find, api_key_issue, api_key_revoke, merchant_create
from infra import revision
from sandbox.models import FailureProfile
from tests.backoffice.test_issued_secret import issue
from tests.backoffice.test_permissions import revoke
from tests.conftest import key_client
from tests.payments.test_limits import form_fields
from webhooks import services
from webhooks.lifecycle import endpoint_gone
from webhooks.models import WebhookEndpoint

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

URL = "https://93.184.215.14/hooks"  # a public address: no DNS, and nothing is sent to it
ENDPOINT_PAGE = "/admin/webhooks/webhookendpoint/{}/"


def command(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def rehash(new_merchant, settings) -> None:
    """A key used after a pepper rotation is re-hashed under the new pepper."""
    issued = new_merchant.keys["test"]["secret"]
    settings.API_KEY_OLD_PEPPERS = {"1": settings.API_KEY_PEPPER}
    settings.API_KEY_PEPPER, settings.API_KEY_PEPPER_VERSION = "new-pepper", 2
    assert api_key_find(issued.secret).pepper_version == 2


def merchant_changed_in_admin(staff_client, merchant) -> None:
    page = f"/admin/accounts/merchant/{merchant.pk}/change/"
    fields = form_fields(staff_client.get(page).content.decode())
    assert staff_client.post(page, {**fields, "transaction_limit": "4000"}).status_code == 302


def merchant_deleted_in_admin(staff_client) -> None:
    keyless = Merchant.objects.create(name="Keyless", email="k@acme.test")  # keys protect one
    page = f"/admin/accounts/merchant/{keyless.pk}/delete/"
    assert staff_client.post(page, {"post": "yes"}).status_code == 302
    assert not Merchant.objects.filter(pk=keyless.pk).exists()


KEY_AND_MERCHANT_WRITES = {
    "service: merchant_create": lambda w: merchant_create(name="New", email="new@acme.test"),
    "service: api_key_issue": lambda w: api_key_issue(
        merchant=w.merchant, kind="secret", livemode=False
    ),
    "service: api_key_revoke": lambda w: api_key_revoke(api_key=w.key),
    "service: pepper re-hash": lambda w: rehash(w.new_merchant, w.settings),
    "admin: revoke_keys": lambda w: revoke(w.staff_client, w.key, confirmed="yes"),
    "admin: add a key": lambda w: issue(w.staff_client, w.merchant),
    "admin: merchant change": lambda w: merchant_changed_in_admin(w.staff_client, w.merchant),
    "admin: merchant delete": lambda w: merchant_deleted_in_admin(w.staff_client),
    "manage.py create_merchant": lambda w: command(
        "create_merchant", "--name", "N", "--email", "n@x.test"
    ),
    "manage.py issue_key": lambda w: command("issue_key", "--merchant", w.merchant.pk),
    "manage.py revoke_key": lambda w: command("revoke_key", w.key.pk, "--for-real"),
}


def disabled(endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """Disabled after failure (the write itself is one of the cases: `endpoint_gone`)."""
    endpoint_gone(endpoint, "evt_x", timezone.now())
    endpoint.refresh_from_db()
    return endpoint


def paused(endpoint: WebhookEndpoint) -> WebhookEndpoint:
    return services.endpoint_pause(endpoint=endpoint, actor="test")


def endpoint_action_in_admin(staff_client, endpoint, action: str, data=None) -> None:
    page = ENDPOINT_PAGE.format(endpoint.pk)
    assert staff_client.post(f"{page}{action}/", data or {}).status_code == 302


# name -> (how to prepare the endpoint, the write)
ENDPOINT_WRITES = {
    "service: endpoint_create": (
        None,
        lambda w, e: services.endpoint_create(merchant=w.merchant, livemode=False, url=URL),
    ),
    "service: endpoint_update": (
        None,
        lambda w, e: services.endpoint_update(endpoint=e, actor="t", description="new"),
    ),
    "service: endpoint_roll_secret": (None, lambda w, e: services.endpoint_roll_secret(endpoint=e)),
    "service: endpoint_pause": (None, lambda w, e: paused(e)),
    "service: endpoint_resume": (
        paused,
        lambda w, e: services.endpoint_resume(endpoint=e, actor="t"),
    ),
    "service: endpoint_delete": (None, lambda w, e: services.endpoint_delete(endpoint=e)),
    "service: endpoint_enable": (
        disabled,
        lambda w, e: services.endpoint_enable(endpoint=e, actor="t"),
    ),
    "lifecycle: disabled after failure or 410": (None, lambda w, e: disabled(e)),
    "admin: edit": (
        None,
        lambda w, e: endpoint_action_in_admin(w.staff_client, e, "edit", {"description": "x"}),
    ),
    "admin: pause": (None, lambda w, e: endpoint_action_in_admin(w.staff_client, e, "pause")),
    "admin: resume": (paused, lambda w, e: endpoint_action_in_admin(w.staff_client, e, "resume")),
    "admin: enable": (disabled, lambda w, e: endpoint_action_in_admin(w.staff_client, e, "enable")),
    "manage.py webhook_endpoint update": (
        None,
        lambda w, e: command("webhook_endpoint", "update", e.pk, "--description", "x"),
    ),
    "manage.py webhook_endpoint pause": (
        None,
        lambda w, e: command("webhook_endpoint", "pause", e.pk),
    ),
    "manage.py webhook_endpoint resume": (
        paused,
        lambda w, e: command("webhook_endpoint", "resume", e.pk),
    ),
}


def profile_set_in_admin(world) -> None:
    values = {"merchant": world.merchant.pk, "error_share": "0.1", "rate_limit_share": "0"}
    values |= {"latency_share": "0", "latency_ms": "0", "duplicate_share": "0"}
    values |= {"delay_share": "0", "delay_seconds": "0", "seed": "1"}
    response = world.staff_client.post("/admin/sandbox/failureprofile/add/", values)
    assert response.status_code == 302, response.content[:2000]


FAILURE_PROFILE_WRITES = {
    "API: POST /v1/sandbox/failure-profile": lambda w: key_client(w.key_secret).post(
        "/v1/sandbox/failure-profile", {"error_share": 0.1}, format="json"
    ),
    "admin: add": profile_set_in_admin,
}


class World:
    def __init__(self, new_merchant, staff_client, settings):
        self.new_merchant, self.merchant = new_merchant, new_merchant.merchant
        self.key = new_merchant.keys["test"]["secret"].api_key
        self.key_secret = new_merchant.keys["test"]["secret"].secret
        self.staff_client, self.settings = staff_client, settings


@pytest.fixture
def world(new_merchant, staff_client, settings):
    return World(new_merchant, staff_client, settings)


def changes_the_revision(write) -> bool:
    before = revision.current()
    write()
    return revision.current() != before


@pytest.mark.parametrize("path", KEY_AND_MERCHANT_WRITES)
def test_every_key_and_merchant_write_changes_the_revision(world, path):
    assert changes_the_revision(lambda: KEY_AND_MERCHANT_WRITES[path](world))


@pytest.mark.parametrize("path", ENDPOINT_WRITES)
def test_every_endpoint_write_changes_the_revision(world, path):
    prepare, write = ENDPOINT_WRITES[path]
    endpoint = services.endpoint_create(merchant=world.merchant, livemode=False, url=URL).endpoint
    if prepare is not None:
        endpoint = prepare(endpoint)
    assert changes_the_revision(lambda: write(world, endpoint))


@pytest.mark.parametrize("path", FAILURE_PROFILE_WRITES)
def test_every_failure_profile_write_changes_the_revision(world, path):
    assert changes_the_revision(lambda: FAILURE_PROFILE_WRITES[path](world))
    assert FailureProfile.objects.get(merchant=world.merchant).error_share == 0.1


def test_recording_a_use_leaves_it(world):
    """Nothing decides on `last_used_at`: each process keeps its entry's in step instead."""
    assert not changes_the_revision(
        lambda: ApiKey.objects.filter(pk=world.key.pk).update(last_used_at=timezone.now())
    )


def test_changed_outside_a_transaction_is_refused(db):
    """It would commit before the change: a read in between would keep the old rows under it."""
    assert not connection.in_atomic_block
    with pytest.raises(RuntimeError, match="inside the transaction"):
        revision.changed()
