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
