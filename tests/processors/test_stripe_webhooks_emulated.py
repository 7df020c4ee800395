"""Stripe's events as the emulator (localstripe) signs and sends them to our endpoint on a
live server: the official library's check accepts its signatures and refuses another
secret's; with the connector, a payment Stripe settles is settled by its webhook through our
services (docs/processors.md "Processor webhooks")."""

import time

import pytest
import stripe

from payments.methods import get_method
from payments.states import Status
from processors.models import ConnectorAccount, ProcessorEvent
from processors.objects import Kind, link
from processors.stripe.client import stripe_client
from processors.stripe.connector import StripeConnector
from tests.factories import PaymentFactory
from tests.processors.conftest import (
    WEBHOOK_SECRET,
    event_body,
    stripe_event,
    stripe_signature,
    webhook_path,
)
from tests.support.localstripe import free_port

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CONNECTOR_READY = StripeConnector().supports(method=get_method("card"), currency="eur")
needs_connector = pytest.mark.skipif(
    not CONNECTOR_READY,
    reason="to be finished when the Stripe connector (processors/stripe/connector.py) is on main",
)


def recorded(account: ConnectorAccount, type_: str, timeout: float = 15) -> ProcessorEvent:
    """The event the emulator sent (~1 s after the change), once we have kept it (bounded
    polling for another process's effect)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if event := ProcessorEvent.objects.filter(account=account, type=type_).first():
            return event
        time.sleep(0.2)
    raise AssertionError(f"no {type_} kept for {account.pk} within {timeout} s")


def card(client: stripe.StripeClient, number: str = "4242424242424242") -> str:
    """A payment method at the emulator (the card goes to the processor, never to us)."""
    params = {
        "type": "card",
        "card": {"number": number, "exp_month": 12, "exp_year": 2030, "cvc": "123"},
    }
    return client.v1.payment_methods.create(params=params).id


def send_events_to(localstripe, live_server, account, secret=WEBHOOK_SECRET, name="svc"):
    url = live_server.url + webhook_path(account)
    localstripe.register_webhook(name, url=url, secret=secret)


@pytest.fixture
def other_account(merchant, localstripe):
    account = ConnectorAccount(processor="stripe", name="another", merchant=merchant)
    account.set_credentials(secret_key="sk_test_other", publishable_key="pk_test_other")
    account.set_credentials(webhook_secret="whsec_svc_test_other")
    account.api_base = localstripe.url
    account.save()
    return account


def test_the_emulators_signature_is_accepted_and_another_secrets_refused(
    localstripe, live_server, stripe_account, other_account
):
    # Sent in this order: the forged delivery first, the good one after it.
    send_events_to(localstripe, live_server, stripe_account, "whsec_not_ours", name="forged")
    send_events_to(localstripe, live_server, other_account, "whsec_svc_test_other")
    client = stripe_client(stripe_account)
    params = {"amount": 1000, "currency": "eur", "payment_method": card(client), "confirm": True}
    intent = client.v1.payment_intents.create(params=params)
    kept = recorded(other_account, "payment_intent.succeeded")
    assert kept.object_id == intent.id
    assert kept.result == f"unknown PaymentIntent {intent.id}"  # not linked to any payment
    assert not ProcessorEvent.objects.filter(account=stripe_account).exists()


@needs_connector
def test_a_processing_payment_is_captured_by_stripes_event(
    localstripe, live_server, stripe_account
):
    send_events_to(localstripe, live_server, stripe_account)
    client = stripe_client(stripe_account)
    params = {"amount": 1000, "currency": "eur", "payment_method": card(client)}
    intent = client.v1.payment_intents.create(params=params)
    payment = PaymentFactory(merchant=stripe_account.merchant, livemode=True, processing=True)
    link(Kind.PAYMENT, payment.id, stripe_account, intent.id)
    client.v1.payment_intents.confirm(intent.id)
    kept = recorded(stripe_account, "payment_intent.succeeded")
    payment.refresh_from_db()
    assert payment.status == Status.CAPTURED
    assert kept.result == f"{payment.id} processing -> captured"


@needs_connector
def test_a_processing_payment_is_declined_by_stripes_event(
    localstripe, live_server, stripe_account
):
    send_events_to(localstripe, live_server, stripe_account)
    client = stripe_client(stripe_account)
    params = {"amount": 1000, "currency": "eur", "payment_method": card(client, "4000000000000341")}
    intent = client.v1.payment_intents.create(params=params)
    payment = PaymentFactory(merchant=stripe_account.merchant, livemode=True, processing=True)
    link(Kind.PAYMENT, payment.id, stripe_account, intent.id)
    with pytest.raises(stripe.CardError):
        client.v1.payment_intents.confirm(intent.id)
    recorded(stripe_account, "payment_intent.payment_failed")
    payment.refresh_from_db()
    assert payment.status == Status.DECLINED


@needs_connector
def test_stripe_unreachable_while_applying_is_5xx_and_not_kept(client, stripe_account):
    """The event is Stripe's to send again: nothing recorded, the payment still processing."""
    stripe_account.api_base = f"http://127.0.0.1:{free_port()}"  # nobody listens
    stripe_account.save()
    payment = PaymentFactory(merchant=stripe_account.merchant, livemode=True, processing=True)
    link(Kind.PAYMENT, payment.id, stripe_account, "pi_1")
    body = event_body(stripe_event("payment_intent.succeeded", {"id": "pi_1"}))
    response = client.post(
        webhook_path(stripe_account),
        body,
        content_type="application/json",
        HTTP_STRIPE_SIGNATURE=stripe_signature(body, WEBHOOK_SECRET),
    )
    assert response.status_code >= 500
    assert not ProcessorEvent.objects.exists()
    payment.refresh_from_db()
    assert payment.status == Status.PROCESSING
