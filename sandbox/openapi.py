"""The test-mode operations in the OpenAPI description (docs/openapi.md). The tokenizer's and
the simulator's input serializers live beside their views, which name them."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from api.openapi import PAGE_PARAMETERS, error_responses, exchange, list_of
from payments.openapi import AT, CARD, TOKEN_ID, Payment, Token
from webhooks.openapi import EventWithAttempts

TOKEN_CREATED = {201: Token}
TOKEN_CREATE_REQUEST = {
    "number": "4242424242424242",
    "exp_month": 12,
    "exp_year": 2030,
    "cvc": "123",
}
TOKEN = {
    "id": TOKEN_ID,
    "object": "token",
    "type": "card",
    "card": CARD,
    "livemode": False,
    "created": AT,
    "expires_at": "2026-11-23T21:12:58Z",
}
TOKEN_EXAMPLES = exchange("A test card", TOKEN_CREATE_REQUEST, TOKEN)
# 404: the `resource` named does not exist.
WEBHOOK_SIMULATED = {201: EventWithAttempts, **error_responses(404)}


class TestCard(serializers.Serializer):
    number = serializers.CharField()
    brand = serializers.CharField()
    outcome = serializers.CharField()
    label = serializers.CharField()
    decline_code = serializers.CharField(required=False)
    decline_is_soft = serializers.BooleanField(required=False)


test_card_list = extend_schema(
    parameters=PAGE_PARAMETERS,
    responses={
        200: list_of(
            TestCard,
            "TestCardList",
            metadata_overrides=serializers.DictField(child=serializers.CharField()),
        )
    },
)
advance = extend_schema(request=None, responses={200: Payment})
