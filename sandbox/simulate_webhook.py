"""POST /v1/sandbox/simulate-webhook (spec "Test-mode endpoints").

The event is stored like a real one (real id, real signature, `livemode` false) and delivered
inline, so the receiver's HTTP result is in the 201 response; failed attempts then follow the
normal retry schedule. Its `data.object` (docs/webhooks.md "simulate-webhook"):
- `resource` given: that resource as last rendered, i.e. the `data.object` of the newest
  test-mode event about it (every status change emits an event, so this is its current state);
- omitted: the resource of the newest test-mode event of that very type, as it was then (so
  its state fits the type: a captured payment for `payment.captured`);
- none exists: a synthetic sample whose ids are all `<prefix>_0000000000000000000000TEST`.
"""

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from api.errors import NotFound, ValidationFailed, quoted
from api.fields import IdField, StrictChoiceField
from api.renderers import format_timestamp
from api.validation import Input, validated
from api.views import ServiceAPIView
from events.catalogue import EVENT_TYPE_CHOICES, family_of
from events.models import Event
from sandbox import openapi
from sandbox.latency import merchant_slot
from webhooks.selectors import events_of
from webhooks.serializers import event_with_attempts
from webhooks.services import simulated_event_deliver, subscribers

FAMILY_ID_PREFIX = {
    "payment": "pay",
    "refund": "ref",
    "checkout_session": "cs",
    "dispute": "dp",
    "payout": "po",
    "customer": "cus",
    "payment_link": "pl",
}
FAKE_ULID = "0000000000000000000000TEST"  # a valid ULID shape dated 1970: obviously fake
BUSY = (
    "Too many simulate-webhook calls (or payments with _svc_test_latency_ms) are running at "
    "once on this account; nothing was sent or stored. Retry shortly."
)


def fake_id(prefix: str) -> str:
    return f"{prefix}_{FAKE_ULID}"


# The status a sample resource has when it triggers each type.
PAYMENT_STATUS_BY_TYPE = {
    "payment.created": "pending",
    "payment.requires_action": "requires_action",
    "payment.processing": "processing",
    "payment.authorized": "authorized",
    "payment.captured": "captured",
    "payment.partially_captured": "captured",
    "payment.capture_failed": "authorized",
    "payment.declined": "declined",
    "payment.failed": "failed",
    "payment.canceled": "canceled",
    "payment.expired": "expired",
}
REFUND_STATUS_BY_TYPE = {
    "refund.created": "pending",
    "refund.succeeded": "succeeded",
    "refund.failed": "failed",
}


def _payment_outcome(status: str) -> dict:
    declined = status == "declined"
    approved = status in ("authorized", "captured")
    return {
        "response_code": "05" if declined else ("00" if approved else None),
        "decline_code": "generic_decline" if declined else None,
        "decline_is_soft": False if declined else None,
        "avs_result": "Y" if approved else None,
        "cvv_result": "M" if approved else None,
        "three_ds": None,
        "sca_exemption": None,
        "risk_score": 10,
        "risk_decision": "accept",
    }


def sample_payment(event_type: str, now: str) -> dict:
    status = PAYMENT_STATUS_BY_TYPE.get(event_type, "pending")
    amount = 1000
    captured = {"payment.captured": amount, "payment.partially_captured": 600}.get(event_type, 0)
    return {
        "id": fake_id("pay"),
        "object": "payment",
        "status": status,
        "amount": amount,
        "amount_captured": captured,
        "amount_refunded": 0,
        "currency": "eur",
        "reference": "simulated-webhook",
        "description": "Sample payment made up by simulate-webhook",
        "capture_method": "automatic",
        "method": {
            "type": "card",
            "card": {
                "brand": "visa",
                "last4": "4242",
                "bin": "424242",
                "exp_month": 12,
                "exp_year": 2030,
                "issuer_country": "EE",
                "funding": "credit",
                "fingerprint": "fp_TEST",
                "network_token": False,
            },
        },
        "customer": None,
        "outcome": _payment_outcome(status),
        "fees": None,
        "return_url": None,
        "statement_descriptor": None,
        "metadata": {},
        "livemode": False,
        "created": now,
        "authorized_at": now if status in ("authorized", "captured") else None,
        "captured_at": now if status == "captured" else None,
        "canceled_at": now if status == "canceled" else None,
    }


def sample_refund(event_type: str, now: str) -> dict:
    status = REFUND_STATUS_BY_TYPE.get(event_type, "pending")
    return {
        "id": fake_id("ref"),
        "object": "refund",
        "payment": fake_id("pay"),
        "amount": 1000,
        "currency": "eur",
        "status": status,
        "reason": None,
        "failure_code": "simulated_failure" if status == "failed" else None,
        "fee": None,
        "metadata": {},
        "livemode": False,
        "created": now,
    }


def synthetic_object(event_type: str) -> dict:
    """Payloads of reserved and checkout-session types are not shown in the spec: their sample
    carries only the fields every resource has."""
    now = format_timestamp(timezone.now())
    family = family_of(event_type)
    if family == "payment":
        return sample_payment(event_type, now)
    if family == "refund":
        return sample_refund(event_type, now)
    return {
        "id": fake_id(FAMILY_ID_PREFIX[family]),
        "object": family,
        "livemode": False,
        "created": now,
    }


def resource_object(merchant, event_type: str, resource: str | None) -> dict:
    prefix = FAMILY_ID_PREFIX[family_of(event_type)]
    events = events_of(merchant, False).exclude(resource_id=fake_id(prefix))
    if resource is not None:
        if not resource.startswith(f"{prefix}_"):
            raise ValidationFailed(
                f"resource must be a {prefix}_ id for a {event_type} event.", param="resource"
            )
        events = events.filter(resource_id=resource)
    else:
        # The newest resource that fits the type: the one its newest event of this very type
        # is about, as it was then (a payment.captured carries a captured payment, never a
        # pending one that merely happens to be the newest payment).
        events = events.filter(type=event_type)
    newest: Event | None = events.order_by("-id").first()
    if newest is not None:
        return newest.data["object"]
    if resource is not None:
        raise NotFound(f"No such test-mode resource: {quoted(resource)}.", param="resource")
    return synthetic_object(event_type)


class SimulateInput(Input):
    type = StrictChoiceField(choices=EVENT_TYPE_CHOICES)
    endpoint = IdField(required=False, allow_null=True)
    resource = IdField(required=False, allow_null=True)


class SimulateWebhook(ServiceAPIView):
    test_mode_only = True
    budget_cost = 4  # delivers inline: holds a thread for seconds (admission.budgets)

    @openapi.simulate_webhook
    @extend_schema(request=SimulateInput, responses=openapi.WEBHOOK_SIMULATED)
    def post(self, request):
        body = validated(SimulateInput, request.data)
        endpoints = subscribers(
            merchant=request.merchant,
            livemode=False,
            event_type=body["type"],
            endpoint_id=body.get("endpoint") or None,
        )
        obj = resource_object(request.merchant, body["type"], body.get("resource"))
        # Inline deliveries hold this web thread up to one attempt's time (15 s): a few per
        # merchant at once, like simulated latency; one more is 429 before anything is stored.
        with merchant_slot(merchant_id=request.merchant.pk, refusal=BUSY):
            event = simulated_event_deliver(
                merchant=request.merchant, event_type=body["type"], obj=obj, endpoints=endpoints
            )
        return Response(event_with_attempts(event), status=201)
