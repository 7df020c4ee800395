"""The address Stripe sends one connector account's events to (docs/processors.md "Processor
webhooks"): `POST /processors/stripe/webhooks/<cacct_id>`. No API key (Stripe has none of
ours): the signature is the credential, checked by Stripe's own library against the
account's webhook secrets (the current one, and the previous one until it expires)."""

import stripe
from django.http import JsonResponse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt

from api.errors import NotFound, ServiceError, ValidationFailed
from api.middleware import error_response
from processors.models import ConnectorAccount
from processors.stripe.events import event_receive

# Stripe's events are a few kilobytes (a charge with its refunds a few tens); anything near
# this is not Stripe's.
MAX_EVENT_BYTES = 256 * 1024


def verified_event(payload: bytes, signature: str | None, secrets: list[str]) -> dict:
    """The event, if one of `secrets` signed it within Stripe's tolerance (5 minutes), else
    400: a forged, altered or replayed body changes nothing."""
    for secret in secrets:
        try:
            return stripe.Webhook.construct_event(payload, signature, secret).to_dict()
        except stripe.SignatureVerificationError:
            continue
        except ValueError:  # signed, but not JSON (or not UTF-8)
            break
    raise ValidationFailed(
        "No valid Stripe-Signature for this account's webhook secret.",
        code="invalid_signature",
        param="Stripe-Signature",
    )


def _payload(request) -> bytes:
    """The raw body, bounded (read past Django's own limit, which is the API's)."""
    payload = request.read(MAX_EVENT_BYTES + 1)
    if len(payload) > MAX_EVENT_BYTES:
        raise ValidationFailed(
            f"An event body is at most {MAX_EVENT_BYTES} bytes.", code="request_too_large"
        )
    return payload


def _account(account_id: str) -> ConnectorAccount:
    stripe_accounts = ConnectorAccount.objects.filter(processor=ConnectorAccount.Processor.STRIPE)
    account = stripe_accounts.filter(pk=account_id, revoked_at__isnull=True).first()
    if account is None:
        raise NotFound(f"No active Stripe connector account {account_id!r}.")
    return account


@method_decorator(csrf_exempt, name="dispatch")
class StripeWebhook(View):
    http_method_names = ["post"]

    def post(self, request, account_id):
        try:
            account = _account(account_id)
            payload = _payload(request)
            signature = request.headers.get("Stripe-Signature")
            event = verified_event(payload, signature, account.webhook_secrets())
            result = event_receive(account, event)
        except ServiceError as error:
            return error_response(error, request)
        return JsonResponse({"received": True, "result": result})
