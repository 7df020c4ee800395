"""Payments in the admin: read-only, searchable, filterable, events on the payment's page."""

from tests.payments.support import APPROVED, created


def test_payment_page_lists_its_events_and_cannot_be_edited(staff_client, api):
    payment = created(api, APPROVED, capture_method="manual")
    api.post(f"/v1/payments/{payment['id']}/captures")
    page = staff_client.get(f"/admin/payments/payment/{payment['id']}/change/")
    html = page.content.decode()
    assert page.status_code == 200
    for event_type in ("payment.created", "payment.authorized", "payment.captured"):
        assert event_type in html
    assert 'name="_save"' not in html  # view only
    assert (
        "/admin/payments/payment/add/"
        not in staff_client.get("/admin/payments/payment/").content.decode()
    )
    assert f"/admin/payments/payment/{payment['id']}/delete/" not in html


def test_search_by_id_and_reference_and_filters(staff_client, api, merchant):
    first = created(api, APPROVED, reference="order-777")
    second = created(api, APPROVED, reference="order-888", currency="usd")
    by_reference = staff_client.get("/admin/payments/payment/", {"q": "order-777"}).content.decode()
    assert first["id"] in by_reference and second["id"] not in by_reference
    by_id = staff_client.get("/admin/payments/payment/", {"q": second["id"]}).content.decode()
    assert second["id"] in by_id and first["id"] not in by_id
    filtered = staff_client.get(
        "/admin/payments/payment/",
        {
            "merchant": merchant.id,  # filters narrow one merchant (docs/back-office.md)
            "currency": "usd",
            "status": "captured",
            "method_type": "card",
            "livemode": "0",  # test mode (a merchant's list is live unless asked)
        },
    ).content.decode()
    assert second["id"] in filtered and first["id"] not in filtered
