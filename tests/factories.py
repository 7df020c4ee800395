import datetime

import factory
from django.utils import timezone

from accounts.models import ApiKey, Merchant
from accounts.services import api_key_issue
from api.ids import id_floor, new_ulid
from api.models import IdempotencyRecord
from events.models import Event
from payments.models import Payment, Token
from payments.states import Status
from refunds.models import Refund
from refunds.states import RefundStatus
from webhooks.models import Attempt, Delivery, WebhookEndpoint


def id_made_at(prefix: str, moment: datetime.datetime) -> str:
    """A `<prefix>_` id made at `moment`. The process's own generator never goes back in time
    (ids stay sorted), so under time-machine it would keep today's millisecond."""
    return id_floor(prefix, moment)[:-16] + new_ulid()[10:]


def id_made_now(prefix: str) -> str:
    """An id made at the current (possibly travelled) time."""
    return id_made_at(prefix, timezone.now())


class MerchantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Merchant

    name = factory.Sequence(lambda n: f"Merchant {n}")
    email = factory.LazyAttribute(lambda m: f"owner{m.name.split()[-1]}@example.test")


class ApiKeyFactory(factory.django.DjangoModelFactory):
    """Issues a key through the service; the plaintext is on `key.plaintext` for the test."""

    class Meta:
        model = ApiKey

    merchant = factory.SubFactory(MerchantFactory)
    kind = ApiKey.Kind.SECRET
    livemode = False

    class Params:
        publishable = factory.Trait(kind=ApiKey.Kind.PUBLISHABLE)
        live = factory.Trait(livemode=True)

    @classmethod
    def _create(cls, model_class, *, merchant, kind, livemode, **kwargs):
        issued = api_key_issue(merchant=merchant, kind=kind, livemode=livemode, **kwargs)
        issued.api_key.plaintext = issued.secret
        return issued.api_key


def card_details(bin_: str = "424242", last4: str = "4242", brand: str = "visa") -> dict:
    return {
        "brand": brand,
        "last4": last4,
        "bin": bin_,
        "exp_month": 12,
        "exp_year": 2099,
        "issuer_country": "EE",
        "funding": "credit",
        "fingerprint": "0" * 32,
        "network_token": False,
    }


class IdempotencyRecordFactory(factory.django.DjangoModelFactory):
    """A merchant's (`merchant_id`) claim of a test-mode Idempotency-Key on a create, its lease
    over and no response stored yet (give `status` for one)."""

    class Meta:
        model = IdempotencyRecord

    livemode = False
    key_hash = factory.Sequence(lambda n: f"{n:064}")
    fingerprint = "f"
    method = "POST"
    path = "/v1/payments"
    request_id = "req_1"
    lease_token = "t"
    lease_until = factory.LazyFunction(timezone.now)
    created = factory.LazyFunction(timezone.now)
    expires_at = factory.LazyFunction(lambda: timezone.now() + datetime.timedelta(days=1))


class TokenFactory(factory.django.DjangoModelFactory):
    """A used card token, as a payment holds it; `planned_outcome` drives the simulator."""

    class Meta:
        model = Token

    merchant = factory.SubFactory(MerchantFactory)
    livemode = False
    type = Token.Type.CARD
    brand = "visa"
    last4 = "4242"
    bin = "424242"
    exp_month = 12
    exp_year = 2099
    fingerprint = "0" * 32
    planned_outcome = "approved"
    expires_at = factory.LazyAttribute(lambda t: timezone.now() + datetime.timedelta(minutes=15))
    used_at = factory.LazyFunction(timezone.now)


class PaymentFactory(factory.django.DjangoModelFactory):
    """A payment row as the service would leave it; traits pick the status."""

    class Meta:
        model = Payment

    merchant = factory.SubFactory(MerchantFactory)
    livemode = False
    created = factory.LazyFunction(timezone.now)
    # Made at its `created`, as the service makes them (payments.services._create_pending).
    id = factory.LazyAttribute(lambda p: id_made_at("pay", p.created))
    status = Status.PENDING
    amount = 1000
    currency = "eur"
    reference = factory.Sequence(lambda n: f"order-{n}")
    capture_method = Payment.CaptureMethod.AUTOMATIC
    method_type = "card"
    card = factory.LazyFunction(card_details)
    token = factory.SubFactory(
        TokenFactory,
        merchant=factory.SelfAttribute("..merchant"),
        livemode=factory.SelfAttribute("..livemode"),
    )
    due_at = factory.LazyAttribute(lambda p: timezone.now() + datetime.timedelta(hours=1))

    class Params:
        authorized = factory.Trait(
            status=Status.AUTHORIZED,
            capture_method=Payment.CaptureMethod.MANUAL,
            authorized_at=factory.LazyFunction(timezone.now),
            due_at=factory.LazyAttribute(lambda p: timezone.now() + datetime.timedelta(days=7)),
        )
        captured = factory.Trait(
            status=Status.CAPTURED,
            amount_captured=factory.SelfAttribute("amount"),
            authorized_at=factory.LazyFunction(timezone.now),
            captured_at=factory.LazyFunction(timezone.now),
            due_at=None,
        )
        processing = factory.Trait(
            status=Status.PROCESSING,
            card=factory.LazyFunction(lambda: card_details("400000", "0077")),
            token__planned_outcome="processing>approved",
            due_at=factory.LazyAttribute(lambda p: timezone.now() + datetime.timedelta(seconds=30)),
        )
        requires_action = factory.Trait(
            status=Status.REQUIRES_ACTION,
            card=factory.LazyFunction(lambda: card_details("400000", "3220")),
            token__planned_outcome="requires_action>approved",
        )


class RefundFactory(factory.django.DjangoModelFactory):
    """A refund row of a captured payment; `succeeded` by default, traits for the others."""

    class Meta:
        model = Refund

    payment = factory.SubFactory(PaymentFactory, captured=True)
    merchant = factory.SelfAttribute("payment.merchant")
    livemode = factory.SelfAttribute("payment.livemode")
    amount = factory.SelfAttribute("payment.amount_captured")
    currency = factory.SelfAttribute("payment.currency")
    status = RefundStatus.SUCCEEDED
    fee = factory.LazyAttribute(
        lambda r: {"amount": 0, "currency": r.currency, "breakdown": {"fixed": 0}}
    )

    class Params:
        pending = factory.Trait(
            status=RefundStatus.PENDING,
            fee=None,
            due_at=factory.LazyFunction(lambda: timezone.now() + datetime.timedelta(seconds=30)),
        )
        failed = factory.Trait(status=RefundStatus.FAILED, fee=None, failure_code="declined")


class WebhookEndpointFactory(factory.django.DjangoModelFactory):
    """An endpoint row (its secret never read: nothing is signed with it)."""

    class Meta:
        model = WebhookEndpoint

    merchant = factory.SubFactory(MerchantFactory)
    livemode = False
    url = "https://hooks.example.test/svc"
    enabled_events = factory.LazyFunction(lambda: ["*"])
    secret_encrypted = "-"
    secret_last4 = "abcd"


class EventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Event

    merchant = factory.SubFactory(MerchantFactory)
    livemode = False
    type = "payment.captured"
    api_version = "2026-08-19"
    resource_id = "pay_01J0000000000000000000000A"
    data = factory.LazyAttribute(lambda e: {"object": {"id": e.resource_id}})


class AttemptFactory(factory.django.DjangoModelFactory):
    """A failed first attempt of a delivery of an event (made with it), as a worker leaves it."""

    class Meta:
        model = Attempt

    delivery = factory.SubFactory("tests.factories.DeliveryFactory")
    event = factory.SelfAttribute("delivery.event")
    endpoint = factory.SelfAttribute("delivery.endpoint")
    attempt = 1
    status = Attempt.Status.FAILED
    http_status = 500
    duration_ms = 3
    attempted_at = factory.LazyFunction(timezone.now)


class DeliveryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Delivery

    event = factory.SubFactory(EventFactory)
    endpoint = factory.SubFactory(
        WebhookEndpointFactory,
        merchant=factory.SelfAttribute("..event.merchant"),
        livemode=factory.SelfAttribute("..event.livemode"),
    )
    attempt_count = 1
