"""Refunds in the admin: read-only, and listed on their payment's page."""

from tests.refunds.support import captured_payment, refunded


def test_refunds_show_on_their_payments_page_and_cannot_be_edited(staff_client, api):
    payment = captured_payment(api)
    first = refunded(api, payment["id"], amount=100, reason="damaged")
    second = refunded(api, payment["id"], amount=200)
    page = staff_client.get(f"/admin/payments/payment/{payment['id']}/change/")
    html = page.content.decode()
    assert page.status_code == 200
    assert first["id"] in html and second["id"] in html and "damaged" in html
    refund_page = staff_client.get(f"/admin/refunds/refund/{first['id']}/change/")
    refund_html = refund_page.content.decode()
    assert refund_page.status_code == 200 and 'name="_save"' not in refund_html
    assert "refund.created" in refund_html and "refund.succeeded" in refund_html
    listing = staff_client.get("/admin/refunds/refund/").content.decode()
    assert "/admin/refunds/refund/add/" not in listing


def test_search_refunds_by_payment(staff_client, api):
    one, other = captured_payment(api), captured_payment(api)
    mine, theirs = refunded(api, one["id"]), refunded(api, other["id"])
    found = staff_client.get("/admin/refunds/refund/", {"q": one["id"]}).content.decode()
    assert mine["id"] in found and theirs["id"] not in found
