"""The processor's references on the payment's and the refund's admin pages, linked to
Stripe's dashboard, with the connector account they went through (docs/processors.md)."""

from backoffice.toolkit import admin_url
from processors.objects import Kind, link
from tests.factories import PaymentFactory, RefundFactory


def page(client, name: str, pk: str) -> str:
    response = client.get(admin_url(name, pk))
    assert response.status_code == 200
    return response.content.decode()


def test_the_payment_page_links_the_payment_intent_and_charge(staff_client, make_account, merchant):
    account = make_account(
        merchant, publishable_key="pk_live_" + "k" * 24, secret_key="sk_live_" + "s" * 24
    )
    payment = PaymentFactory(merchant=merchant, livemode=True, captured=True)
    link(Kind.PAYMENT, payment.id, account, "pi_3Live", charge="ch_3Live")
    html = page(staff_client, "payments_payment_change", payment.id)
    assert 'href="https://dashboard.stripe.com/payments/pi_3Live"' in html
    assert 'href="https://dashboard.stripe.com/payments/ch_3Live"' in html
    assert admin_url("processors_connectoraccount_change", account.pk) in html
    assert account.keys["secret_key"] not in html


def test_a_test_mode_stripe_account_links_to_the_dashboards_test_pages(
    staff_client, make_account, merchant
):
    account = make_account(merchant)  # pk_test_ keys
    refund = RefundFactory(payment__merchant=merchant, payment__livemode=True)
    link(Kind.REFUND, refund.id, account, "re_3Test")
    html = page(staff_client, "refunds_refund_change", refund.id)
    assert 'href="https://dashboard.stripe.com/test/refunds/re_3Test"' in html


def test_an_emulators_ids_are_shown_without_a_link(staff_client, make_account, merchant):
    account = make_account(merchant, api_base="http://127.0.0.1:8420")
    payment = PaymentFactory(merchant=merchant, livemode=True, captured=True)
    link(Kind.PAYMENT, payment.id, account, "pi_emulated")
    html = page(staff_client, "payments_payment_change", payment.id)
    assert "<code>pi_emulated</code>" in html and "dashboard.stripe.com" not in html


def test_a_payment_without_a_processor_shows_none(staff_client, merchant):
    payment = PaymentFactory(merchant=merchant)
    html = page(staff_client, "payments_payment_change", payment.id)
    assert "field-payment_references" in html and "dashboard.stripe.com" not in html
