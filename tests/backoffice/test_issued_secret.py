"""An issued key's secret is shown once, in the response page itself: never in a message, so
never in the messages cookie or the session."""

from django.contrib.messages.storage.cookie import CookieStorage

from accounts import keys
from accounts.models import ApiKey


def issue(client, merchant, livemode=""):
    return client.post(
        "/admin/accounts/apikey/add/",
        {
            "merchant": merchant.id,
            "kind": "secret",
            "livemode": livemode,
            "expires_at_0": "",
            "expires_at_1": "",
        },
    )


def test_the_secret_is_in_the_page_and_in_no_cookie_or_session(staff_client, merchant):
    response = issue(staff_client, merchant)
    assert response.status_code == 200
    page = response.content.decode()
    secret = page.split('<code id="issued-secret">')[1].split("</code>")[0]
    assert secret.startswith("svc_sk_test_")
    stored = ApiKey.objects.get(key_hash=keys.hash_key(secret, "test-only-pepper"))
    assert stored.merchant == merchant
    assert CookieStorage.cookie_name not in response.cookies
    assert all(secret not in morsel.value for morsel in response.cookies.values())
    assert secret not in str(dict(staff_client.session))
    assert "no-store" in response["Cache-Control"]


def test_issuing_is_logged_and_the_key_page_never_shows_the_secret(staff_client, merchant):
    page = issue(staff_client, merchant, livemode="on").content.decode()
    secret = page.split('<code id="issued-secret">')[1].split("</code>")[0]
    assert secret.startswith("svc_sk_live_")
    stored = ApiKey.objects.get(key_hash=keys.hash_key(secret, "test-only-pepper"))
    assert stored.id in page
    again = staff_client.get(f"/admin/accounts/apikey/{stored.pk}/change/").content.decode()
    assert secret not in again
    history = staff_client.get(f"/admin/accounts/apikey/{stored.pk}/history/").content.decode()
    assert "Added" in history and secret not in history
