"""Every back-office action has a permission of its own, a confirmation page, and an admin log
entry (docs/back-office.md)."""

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Group
from django.db import transaction

from accounts.models import ApiKey
from events.services import emit

ACTIONS = [
    ("/admin/accounts/apikey/", "revoke_keys"),
    ("/admin/events/event/", "resend_events"),
    ("/admin/webhooks/deadletter/", "resend_dead_letters"),
]
PAYMENT = {"id": "pay_01J0000000000000000000000A", "object": "payment", "status": "captured"}


def group_perms(name):
    return {
        f"{p.content_type.app_label}.{p.codename}"
        for p in Group.objects.get(name=name).permissions.select_related("content_type")
    }


def test_the_migration_creates_support_and_read_only_groups(groups):
    read_only, support = group_perms("Read-only"), group_perms("Support")
    assert read_only and all(".view_" in perm for perm in read_only)
    assert "payments.view_payment" in read_only and "webhooks.view_deadletter" in read_only
    assert support - read_only == {
        "payments.refund_payment",
        "events.resend_event",
        "webhooks.requeue_deadletter",
    }


@pytest.mark.parametrize(("url", "action"), ACTIONS)
def test_a_view_only_user_sees_no_action_and_gets_403_posting_one(agent, url, action):
    client = agent("Read-only")
    listing = client.get(url)
    assert listing.status_code == 200
    assert f'value="{action}"' not in listing.content.decode()
    response = client.post(
        url, {"action": action, "_selected_action": ["x"], "confirmed": "yes", "typed": "live"}
    )
    assert response.status_code == 403


def test_a_view_only_user_cannot_revoke_a_live_key(agent, new_merchant):
    live_key = new_merchant.keys["live"]["secret"].api_key
    response = agent("Read-only").post(
        "/admin/accounts/apikey/",
        {
            "action": "revoke_keys",
            "_selected_action": [live_key.pk],
            "confirmed": "yes",
            "typed": "live",
        },
    )
    assert response.status_code == 403
    assert ApiKey.objects.get(pk=live_key.pk).revoked_at is None


def test_support_may_resend_but_not_revoke(agent, new_merchant):
    client = agent("Support")
    with transaction.atomic():
        emit(
            merchant=new_merchant.merchant,
            livemode=False,
            type="payment.captured",
            obj=PAYMENT,
            fan_out=False,
        )
    assert 'value="resend_events"' in client.get("/admin/events/event/").content.decode()
    key = new_merchant.keys["test"]["secret"].api_key
    response = client.post(
        "/admin/accounts/apikey/",
        {"action": "revoke_keys", "_selected_action": [key.pk], "confirmed": "yes"},
    )
    assert response.status_code == 403


def revoke(client, key, **confirmation):
    return client.post(
        "/admin/accounts/apikey/",
        {"action": "revoke_keys", "_selected_action": [key.pk], **confirmation},
    )


def test_revoking_a_test_key_asks_first_then_revokes_and_logs(staff_client, new_merchant):
    key = new_merchant.keys["test"]["secret"].api_key
    asked = revoke(staff_client, key)
    assert asked.status_code == 200 and "Yes, revoke api keys" in asked.content.decode()
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None
    done = revoke(staff_client, key, confirmed="yes")
    assert done.status_code == 302
    assert ApiKey.objects.get(pk=key.pk).revoked_at is not None
    entry = LogEntry.objects.get(object_id=str(key.pk))
    assert entry.action_flag == CHANGE and entry.user.username == "support"
    assert "Revoked" in entry.get_change_message()


def test_revoking_a_live_key_needs_the_typed_word(staff_client, new_merchant):
    key = new_merchant.keys["live"]["secret"].api_key
    untyped = revoke(staff_client, key, confirmed="yes")
    assert untyped.status_code == 200
    assert "live-mode objects are affected" in untyped.content.decode()
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None
    assert revoke(staff_client, key, confirmed="yes", typed="LIVE").status_code == 302
    assert ApiKey.objects.get(pk=key.pk).revoked_at is not None
