"""The refunds operations in the OpenAPI description (docs/openapi.md)."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers

from api.fields import MAX_ID_LENGTH, MetadataField
from api.openapi import (
    PAGE_PARAMETERS,
    ObjectName,
    exchange,
    list_of,
    named,
    previous_attributes_of,
    spec,
)
from api.request_logs import RequestLog
from payments.openapi import AT, PAYMENT_ID, P
from refunds.serializers import RefundCreateInput
from refunds.states import FAILURE_CODES, RefundStatus
from refunds.timeline import RANKS
from webhooks.openapi_events import PaymentEvent, RefundEvent, WebhookAttempt, by_type

FAILURE_CODE_CHOICES = list(FAILURE_CODES)


class RefundFeeBreakdown(serializers.Serializer):
    fixed = serializers.IntegerField()


class RefundFee(serializers.Serializer):
    """What the refund cost (docs/payments.md "Fees"); `amount` is the sum of the breakdown."""

    amount = serializers.IntegerField()
    currency = serializers.CharField()
    breakdown = RefundFeeBreakdown()


@named
class Refund(serializers.Serializer):
    id = serializers.CharField(max_length=MAX_ID_LENGTH)
    object = ObjectName("refund")
    payment = serializers.CharField(max_length=MAX_ID_LENGTH)
    amount = serializers.IntegerField()
    currency = serializers.CharField()
    status = serializers.ChoiceField(choices=RefundStatus.choices)
    reason = serializers.CharField(allow_null=True, max_length=200)
    failure_code = serializers.ChoiceField(choices=FAILURE_CODE_CHOICES, allow_null=True)
    fee = RefundFee(allow_null=True)
    metadata = MetadataField()
    livemode = serializers.BooleanField()
    created = serializers.DateTimeField()


previous_attributes_of(Refund, "RefundPreviousAttributes")

REFUND_CREATE_REQUEST = {"amount": 500, "reason": "requested_by_customer"}
REFUND_SUCCEEDED = {
    "id": "ref_01M85371KECNZAQY3WFPDKEJYZ",
    "object": "refund",
    "payment": PAYMENT_ID,
    "amount": 500,
    "currency": "eur",
    "status": "succeeded",
    "reason": "requested_by_customer",
    "failure_code": None,
    "fee": {"amount": 0, "currency": "eur", "breakdown": {"fixed": 0}},
    "metadata": {},
    "livemode": False,
    "created": AT,
}

refund_create = extend_schema(
    **spec(
        "Refund a payment",
        P + "POST /v1/payments/:id/refunds",
        "Refunds a captured payment in full (no `amount`) or in part; several refunds may "
        "add up to the amount captured.",
    ),
    request=RefundCreateInput,
    responses={201: Refund},
    examples=exchange("A partial refund", REFUND_CREATE_REQUEST, REFUND_SUCCEEDED),
)
refund_retrieve = extend_schema(
    **spec("Retrieve a refund", P + "GET /v1/refunds/:id"), responses={200: Refund}
)


# Inline: "from" is a Python keyword, so no class attribute can name it.
TimelineStatusChange = inline_serializer(
    "TimelineStatusChange",
    fields={
        "resource": serializers.CharField(help_text="The payment's or a refund's id."),
        "from": serializers.CharField(allow_null=True, help_text="null: its first status."),
        "to": serializers.CharField(),
        "event": serializers.CharField(help_text="The event that reports it."),
    },
    required=False,
)


class TimelineItem(serializers.Serializer):
    """One thing that happened to the payment; the member named by `type` holds it."""

    object = ObjectName("timeline_item")
    type = serializers.ChoiceField(choices=list(RANKS))
    id = serializers.CharField(help_text="The request's, event's or attempt's id.")
    at = serializers.DateTimeField(help_text="When it happened (a request: when it began).")
    request = RequestLog(required=False)
    status_change = TimelineStatusChange
    event = by_type("Event", PaymentEvent, RefundEvent, required=False)
    delivery_attempt = WebhookAttempt(required=False)


payment_timeline = extend_schema(
    **spec(
        "Read a payment's timeline",
        "",
        "One payment, one story: every request that touched the payment or its refunds (from "
        "the request log, redacted as it is stored; the create found through its "
        "Idempotency-Key for 24 hours), every status change, every event of the payment and "
        "its refunds, and every webhook delivery attempt with its answer, oldest first. "
        "Paginated like every list (`limit`, `starting_after`, `ending_before` with the "
        "opaque `next_cursor`), in time order rather than newest first: a story is read "
        "forward. Reads of the timeline itself are not in it.",
    ),
    parameters=PAGE_PARAMETERS,
    responses={200: list_of(TimelineItem, "PaymentTimeline")},
)
