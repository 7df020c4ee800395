"""Connector accounts in the back office (docs/processors.md "In the back office"): keys are
write-only, rotation keeps the previous webhook secret for 24 hours, revocation, and who may
do what."""

import datetime
from importlib import import_module

import time_machine
from django.apps import apps
from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from backoffice.toolkit import admin_url
from processors.models import ConnectorAccount
from tests.processors.conftest import new_keys, route_to

ADD = "/admin/processors/connectoraccount/add/"
LIST = "/admin/processors/connectoraccount/"
SET_CREDENTIALS = "processors.set_credentials_connectoraccount"


def page_of(account, action="change") -> str:
    return admin_url(f"processors_connectoraccount_{action}", account.pk)


def every_page(client, account) -> str:
    """Every admin page that shows the account, as one string."""
    urls = [LIST, page_of(account), page_of(account, "rotate"), page_of(account, "revoke")]
    urls.append(page_of(account, "history"))
    responses = [client.get(url) for url in urls]
    assert [r.status_code for r in responses] == [200] * len(urls)
    return "".join(r.content.decode() for r in responses)


def add_form(keys, **fields) -> dict:
    return {
        "processor": "stripe",
        "name": "Stripe EU",
        "merchant": "",
        "api_base": "",
        **keys,
        **fields,
    }


def test_added_keys_are_stored_encrypted_and_never_shown_again(staff_client, keys, merchant):
    response = staff_client.post(ADD, add_form(keys, merchant=merchant.pk))
    assert response.status_code == 302, response.content.decode()[:2000]
    account = ConnectorAccount.objects.get()
    assert (account.secret_key, account.publishable_key) == (
        keys["secret_key"],
        keys["publishable_key"],
    )
    assert account.webhook_secrets() == [keys["webhook_secret"]]
    assert keys["secret_key"] not in account.secret_key_encrypted
    shown = every_page(staff_client, account)
    for secret in keys.values():
        assert secret not in shown
    assert f"set, ending …{keys['secret_key'][-4:]}" in shown
    assert f"set, ending …{keys['webhook_secret'][-4:]}" in shown
    assert f"{settings.PUBLIC_BASE_URL}/processors/stripe/webhooks/{account.pk}" in shown
    assert merchant.name in shown  # its owner


def test_an_address_typed_without_a_scheme_is_https(staff_client, keys):
    response = staff_client.post(ADD, add_form(keys, api_base="stripe-emulator.example"))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert ConnectorAccount.objects.get().api_base == "https://stripe-emulator.example"


def test_a_refused_add_form_does_not_fill_the_keys_back(staff_client, keys):
    mixed = {**keys, "publishable_key": keys["publishable_key"].replace("pk_test_", "pk_live_")}
    response = staff_client.post(ADD, add_form(mixed))
    html = response.content.decode()
    assert response.status_code == 200 and "live and test keys mixed" in html
    assert not ConnectorAccount.objects.exists()
    for secret in mixed.values():
        assert secret not in html


def test_the_secret_and_publishable_keys_are_needed_the_webhook_secret_may_come_later(
    staff_client, keys
):
    refused = staff_client.post(ADD, add_form({"secret_key": keys["secret_key"]}))
    assert refused.status_code == 200 and "Needed to create an account." in refused.content.decode()
    without_webhook = {**keys, "webhook_secret": ""}
    assert staff_client.post(ADD, add_form(without_webhook)).status_code == 302
    assert ConnectorAccount.objects.get().webhook_secrets() == []


def test_rotating_keeps_the_previous_webhook_secret_valid_for_24_hours(staff_client, make_account):
    account = make_account()
    old = account.keys
    new = new_keys()
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        response = staff_client.post(
            page_of(account, "rotate"),
            {
                "webhook_secret": new["webhook_secret"],
                "secret_key": new["secret_key"],
                "typed": "live",
            },
        )
    assert response.status_code == 302
    account.refresh_from_db()
    assert account.secret_key == new["secret_key"]
    assert account.publishable_key == old["publishable_key"]  # not given: kept
    with time_machine.travel(start + datetime.timedelta(hours=23, minutes=59)):
        assert account.webhook_secrets() == [new["webhook_secret"], old["webhook_secret"]]
    with time_machine.travel(start + datetime.timedelta(hours=24, seconds=1)):
        assert account.webhook_secrets() == [new["webhook_secret"]]
    shown = every_page(staff_client, account)
    for secret in (*old.values(), *new.values()):
        assert secret not in shown
    assert "previous webhook secret" in shown
    entry = LogEntry.objects.get(object_id=account.pk)
    assert (
        "webhook_secret" in entry.get_change_message()
        and new["secret_key"] not in entry.get_change_message()
    )


def test_rotation_needs_live_typed_and_a_credential(staff_client, make_account):
    account = make_account()
    untyped = staff_client.post(
        page_of(account, "rotate"), {"secret_key": new_keys()["secret_key"]}
    )
    empty = staff_client.post(page_of(account, "rotate"), {"typed": "live"})
    assert untyped.status_code == empty.status_code == 200
    assert "Enter at least one credential" in empty.content.decode()
    account.refresh_from_db()
    assert account.secret_key == account.keys["secret_key"]


def test_a_refused_rotation_is_shown_and_changes_nothing(staff_client, make_account):
    account = make_account()
    live_publishable = "pk_live_" + "x" * 24  # the stored secret key is a test key
    response = staff_client.post(
        page_of(account, "rotate"), {"publishable_key": live_publishable, "typed": "live"}
    )
    html = response.content.decode()
    assert response.status_code == 200 and "live and test keys mixed" in html
    assert live_publishable not in html
    account.refresh_from_db()
    assert account.publishable_key == account.keys["publishable_key"]


def test_without_set_credentials_a_user_can_neither_rotate_nor_add(staff_with, make_account):
    account = make_account()
    client = staff_with(
        "processors.view_connectoraccount",
        "processors.change_connectoraccount",
        "processors.add_connectoraccount",
    )
    assert 'id="action-rotate"' not in client.get(page_of(account)).content.decode()
    rotate = {"secret_key": new_keys()["secret_key"], "typed": "live"}
    assert client.post(page_of(account, "rotate"), rotate).status_code == 403
    assert client.get(ADD).status_code == 403
    account.refresh_from_db()
    assert account.secret_key == account.keys["secret_key"]


def test_a_viewer_reads_the_account_and_is_offered_no_action(staff_with, make_account):
    account = make_account()
    client = staff_with("processors.view_connectoraccount")
    html = client.get(page_of(account)).content.decode()
    assert account.name in html and 'id="action-revoke"' not in html
    revoke = client.post(page_of(account, "revoke"), {"typed": "live"})
    assert revoke.status_code == 403
    assert ConnectorAccount.objects.get(pk=account.pk).active


def test_revoke_needs_live_typed_then_revokes_and_names_the_routes(
    staff_with, make_account, merchant
):
    account = make_account(merchant)
    route_to(account, merchant)
    client = staff_with("processors.view_connectoraccount", "processors.change_connectoraccount")
    assert 'id="action-revoke"' in client.get(page_of(account)).content.decode()
    assert client.post(page_of(account, "revoke"), {}).status_code == 200  # asks for "live"
    assert ConnectorAccount.objects.get(pk=account.pk).active
    assert client.post(page_of(account, "revoke"), {"typed": "live"}).status_code == 302
    account.refresh_from_db()
    assert not account.active
    message = LogEntry.objects.get(object_id=account.pk).get_change_message()
    assert f"{merchant.pk} card eur" in message
    html = client.get(page_of(account)).content.decode()
    assert "revoked" in html and 'id="action-revoke"' not in html


def test_the_merchant_page_shows_each_routes_account(staff_client, make_account, merchant):
    account = make_account(merchant)
    route_to(account, merchant)
    html = staff_client.get(admin_url("accounts_merchant_change", merchant.pk)).content.decode()
    assert 'name="routes-0-account"' in html and account.pk in html


def test_support_reads_connector_accounts_and_may_not_add_one(make_account):
    """The groups as the migrations leave them (made again: a transactional test flushes)."""
    import_module("refunds.migrations.0002_back_office_groups").create_groups(apps, None)
    import_module("processors.migrations.0002_back_office_view").grant_view(apps, None)
    account = make_account()
    user = User.objects.create_user("support-agent", is_staff=True)
    user.groups.add(Group.objects.get(name="Support"))
    client = Client()
    client.force_login(user)
    assert account.name in client.get(LIST).content.decode()
    assert client.get(page_of(account)).status_code == 200
    assert client.get(ADD).status_code == 403
    assert client.post(page_of(account, "revoke"), {"typed": "live"}).status_code == 403
