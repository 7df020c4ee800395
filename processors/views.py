"""Live tokens over the API (docs/processors.md "Hosted fields and live tokens"): a processor's
payment-method reference, made in the payer's browser by the processor's own fields,
exchanged for our `tok_` with the merchant's live publishable key."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from api.errors import AuthorizationFailed
from api.fields import CurrencyField, StrictCharField
from api.validation import Input, validated
from api.views import ServiceAPIView
from payments.serializers import token_to_dict
from processors import openapi
from processors.tokens import live_token_exchange


class ProcessorTokenInput(Input):
    processor_reference = StrictCharField(max_length=255)
    currency = CurrencyField()


def refuse_test_mode(request) -> None:
    """Test mode keeps the simulator's tokenizer: a test key never reaches a processor."""
    if not request.livemode:
        raise AuthorizationFailed(
            "This endpoint exchanges a processor's reference for a live token; with a test "
            "key, tokenize a test card with POST /v1/sandbox/tokens.",
            code="live_mode_required",
        )


class ProcessorTokenCreate(ServiceAPIView):
    allow_publishable_key = True  # the hosted-fields page, or the merchant's own Stripe.js

    @openapi.processor_token_create
    @extend_schema(request=ProcessorTokenInput, responses=openapi.PROCESSOR_TOKEN_CREATED)
    def post(self, request):
        refuse_test_mode(request)
        data = validated(ProcessorTokenInput, request.data)
        token = live_token_exchange(
            merchant=request.merchant,
            currency=data["currency"],
            reference=data["processor_reference"],
        )
        return Response(token_to_dict(token), status=201)
