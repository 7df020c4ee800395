"""Live mode's API operations in the OpenAPI description (docs/openapi.md)."""

from drf_spectacular.utils import extend_schema

from api.openapi import error_responses, spec
from payments.openapi import Token

# No examples: they are real exchanges in test mode (tests/api/test_openapi_examples.py), and
# this operation is live only; docs/processors.md shows one.
# 400 token_invalid (Stripe knows no such card, or it was exchanged already), 403
# live_mode_required (a test key), 422 no_route, 502 connector_http_error (Stripe unreachable).
PROCESSOR_TOKEN_CREATED = {201: Token, **error_responses(400, 403, 422, 502)}
processor_token_create = extend_schema(
    **spec(
        "Exchange a processor's payment method for a live token",
        "",
        "Live keys only (test keys: 403 `live_mode_required`; test mode tokenizes test "
        "cards with POST /v1/sandbox/tokens). Callable with the live publishable key. "
        "`processor_reference` is what the processor's own fields made in the payer's "
        "browser (Stripe: a PaymentMethod `pm_` or a Token `tok_`); the processor account "
        "is the one the merchant's live card route for `currency` names. The answer is a "
        "single-use token for 15 minutes, `bin` empty (the processor does not tell it). "
        'See docs/processors.md "Hosted fields and live tokens".',
    )
)
