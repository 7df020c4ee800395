from accounts import keys
from accounts.models import ApiKey


def test_issuing_a_key_in_the_admin_shows_the_secret_once(staff_client, merchant):
    response = staff_client.post(
        "/admin/accounts/apikey/add/",
        {
            "merchant": merchant.id,
            "kind": "secret",
            "livemode": "",
            "expires_at_0": "",
            "expires_at_1": "",
        },
        follow=True,
    )
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    secret = next(word for m in shown for word in m.split() if word.startswith("svc_sk_test_"))
    stored = ApiKey.objects.get(key_hash=keys.hash_key(secret, "test-only-pepper"))
    assert stored.merchant == merchant
    again = staff_client.get(f"/admin/accounts/apikey/{stored.pk}/change/")
    assert secret not in again.content.decode()


def test_merchant_page_lists_its_keys(staff_client, new_merchant):
    merchant = new_merchant.merchant
    page = staff_client.get(f"/admin/accounts/merchant/{merchant.pk}/change/").content.decode()
    for by_kind in new_merchant.keys.values():
        for issued in by_kind.values():
            assert issued.api_key.id in page
            assert issued.secret not in page


def test_a_forbidden_admin_page_is_403_not_500(staff_client):
    # Payments are read-only in the admin: the add view raises PermissionDenied.
    assert staff_client.get("/admin/payments/payment/add/").status_code == 403
