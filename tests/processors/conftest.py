"""A merchant going live on Stripe, with localstripe as Stripe: a platform connector account
whose API is the emulator, card routes to it, live tokens as hosted fields make them, and
Stripe's way of signing an event."""

import datetime
import hashlib
import hmac
import json
import time
import uuid

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from payments.models import Route, Token
from processors.connector_accounts import account_create
from processors.models import ConnectorAccount
from processors.objects import Kind, link
from processors.stripe.client import stripe_client
from tests.factories import id_made_now

SECRET_KEY = "sk_test_emulated_secret_key_1234"
PUBLISHABLE_KEY = "pk_test_emulated_publishable_key"
WEBHOOK_SECRET = "whsec_svc_test_current"


def stripe_signature(body: bytes, secret: str, timestamp: int | None = None) -> str:
    """`Stripe-Signature` as Stripe makes it: t=<unix time>,v1=HMAC-SHA256(secret, "<t>.<body>")."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    signed = f"{timestamp}.".encode() + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def stripe_event(type_: str, obj: dict, event_id: str | None = None) -> dict:
    return {
        "id": event_id or id_made_now("evt"),
        "object": "event",
        "type": type_,
        "created": int(time.time()),
        "livemode": True,
        "data": {"object": obj},
    }


def event_body(event: dict) -> bytes:
    return json.dumps(event).encode()


def webhook_path(account: ConnectorAccount) -> str:
    return f"/processors/stripe/webhooks/{account.pk}"


def connector_account(api_base: str, merchant=None, **values) -> ConnectorAccount:
    values = {"processor": "stripe", "name": "Stripe", **values}
    account = ConnectorAccount(merchant=merchant, api_base=api_base, **values)
    account.set_credentials(
        secret_key=SECRET_KEY, publishable_key=PUBLISHABLE_KEY, webhook_secret=WEBHOOK_SECRET
    )
    account.save()
    return account


@pytest.fixture
def stripe_account(localstripe, merchant):
    """The merchant's own Stripe account (the emulator), routed for its cards in EUR and USD."""
    account = connector_account(localstripe.url, merchant)
    for currency in ("eur", "usd"):
        route_to(account, merchant, currency)
    return account


def route_to(account: ConnectorAccount, merchant, currency: str = "eur") -> Route:
    """The merchant's live card route in `currency` to `account`."""
    return Route.objects.create(
        merchant=merchant,
        method_type="card",
        currency=currency,
        connector="stripe",
        account=account.pk,
    )


RETURN_URL = "https://shop.example/back?order=1"
NEEDS_3DS = "4000002500003155"  # a card the emulator asks to authenticate


def payment_needing_3ds(live_api, account, merchant, **fields) -> dict:
    """A live payment sent to 3-D Secure: `requires_action`, our page its redirect."""
    body = {
        "amount": 1000,
        "currency": "eur",
        "reference": "order-1",
        "return_url": RETURN_URL,
        "payment_method": {"type": "card", "token": live_token(account, merchant, NEEDS_3DS).id},
        **fields,
    }
    response = live_api.post("/v1/payments", body, format="json")
    assert response.status_code == 201, response.content
    payment = response.json()
    assert payment["status"] == "requires_action", payment
    return payment


def live_token(account: ConnectorAccount, merchant, number: str = "4242424242424242") -> Token:
    """A live token as the hosted fields leave it: the card went to the processor only (here
    straight to the emulator), we keep its payment method's reference."""
    card = {"number": number, "exp_month": 12, "exp_year": 2030, "cvc": "123"}
    method = stripe_client(account).v1.payment_methods.create(params={"type": "card", "card": card})
    token = Token.objects.create(
        merchant=merchant,
        livemode=True,
        type=Token.Type.CARD,
        brand=method.card.brand,
        last4=method.card.last4,
        bin="",
        exp_month=method.card.exp_month,
        exp_year=method.card.exp_year,
        fingerprint=method.card.fingerprint,
        planned_outcome="",
        expires_at=timezone.now() + datetime.timedelta(minutes=15),
    )
    link(Kind.TOKEN, token.id, account, method.id)
    return token


def new_keys() -> dict[str, str]:
    """Distinct test-mode keys, long enough that no page could show them by accident."""
    tail = uuid.uuid4().hex
    return {
        "secret_key": f"sk_test_{tail}SK01",
        "publishable_key": f"pk_test_{tail}PK02",
        "webhook_secret": f"whsec_{tail}WH03",
    }


@pytest.fixture
def keys():
    return new_keys()


@pytest.fixture
def make_account(db):
    """make_account(merchant=None, **fields) -> an account created through the service;
    `.keys` holds the keys it was given."""

    def make(merchant=None, *, api_base="", **credentials):
        given = {**new_keys(), **credentials}
        account = ConnectorAccount(
            processor="stripe", name="Stripe main", merchant=merchant, api_base=api_base
        )
        account = account_create(account, **given)
        account.keys = given
        return account

    return make


@pytest.fixture
def staff_with(db):
    """staff_with("processors.view_connectoraccount", ...) -> a logged-in client."""

    def login(*permissions: str) -> Client:
        user = User.objects.create_user(f"staff-{uuid.uuid4().hex[:8]}", is_staff=True)
        for permission in permissions:
            app_label, codename = permission.split(".")
            user.user_permissions.add(
                Permission.objects.get(content_type__app_label=app_label, codename=codename)
            )
        client = Client()
        client.force_login(user)
        return client

    return login
