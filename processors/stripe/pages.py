"""The payer's pages in live mode through Stripe (docs/processors.md): the hosted card fields
that make a live `tok_`, and the 3-D Secure page a payment's `next_action.redirect.url` opens.
Both load Stripe.js (settings.STRIPE_JS_URL), so the card's data and the payer's
authentication go from the browser to Stripe only; plain HTML, no API key in a header."""

import secrets
from urllib.parse import urlsplit

import stripe
from django.conf import settings
from django.core import signing
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.clickjacking import xframe_options_exempt

from accounts.models import ApiKey
from accounts.services import api_key_find
from admission.address import refuse_over_address_limit
from api.currencies import normalise_currency
from api.errors import ProcessingFailed, RateLimited, ServiceError
from payments.models import Payment
from payments.services import payment_complete_action
from payments.states import Status
from processors.accounts import routed_account
from processors.objects import Kind, linked
from processors.stripe.authentication import SALT
from processors.stripe.client import call, stripe_client

# What Stripe.js itself needs besides its script's origin (Stripe's documented CSP), added
# when the script is Stripe's own rather than an emulator's.
STRIPE_OWN_SOURCES = {
    "script-src": ["https://*.js.stripe.com"],
    "frame-src": ["https://*.js.stripe.com", "https://hooks.stripe.com"],
    "connect-src": ["https://api.stripe.com"],
}
STRIPE_API = "https://api.stripe.com"


def origin_of(url: str) -> str | None:
    """`scheme://host[:port]` of an absolute http(s) URL, else None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def is_origin(value: str) -> bool:
    """An origin as browsers send it: no path, query, fragment or credentials."""
    return bool(value) and origin_of(value) == value


def content_security_policy(
    *, nonce: str, api_base: str, frame_ancestors: str, return_url: str | None
) -> str:
    """Scripts from Stripe.js's origin and our own nonce'd inline script only; requests to
    us and to Stripe; framed only by `frame_ancestors`; forms posted to us only, whose
    answer may send the payer on to the merchant's `return_url` (form-action holds for
    the redirect too)."""
    js = origin_of(settings.STRIPE_JS_URL)
    own = STRIPE_OWN_SOURCES if urlsplit(settings.STRIPE_JS_URL).hostname == "js.stripe.com" else {}
    sources = {
        "default-src": ["'none'"],
        "script-src": [js, f"'nonce-{nonce}'", *own.get("script-src", [])],
        "connect-src": ["'self'", js, origin_of(api_base or STRIPE_API)],
        "frame-src": [js, *own.get("frame-src", [])],
        "style-src": ["'self'", "'unsafe-inline'"],  # Stripe.js styles its fields inline
        "img-src": ["'self'", "data:"],
        "form-action": ["'self'", *([origin_of(return_url)] if return_url else [])],
        "base-uri": ["'none'"],
        "frame-ancestors": [frame_ancestors],
    }
    return "; ".join(
        f"{name} {' '.join(dict.fromkeys(values))}" for name, values in sources.items()
    )


class StripePage(View):
    """Shared: the page's Content-Security-Policy, and no caching (its URL carries a key or
    a credential) nor Referer to the merchant's pages."""

    template_name = ""

    def page(
        self, request, *, status, frame_ancestors="'none'", api_base="", return_url=None, **context
    ):
        nonce = secrets.token_urlsafe(16)
        context = {"nonce": nonce, "stripe_js_url": settings.STRIPE_JS_URL, **context}
        response = render(request, self.template_name, context, status=status)
        response["Content-Security-Policy"] = content_security_policy(
            nonce=nonce, api_base=api_base, frame_ancestors=frame_ancestors, return_url=return_url
        )
        response["Cache-Control"] = "no-store"
        response["Referrer-Policy"] = "same-origin"  # see sandbox.views.ChallengePage
        return response


class HostedFieldsPage(StripePage):
    """GET ?key=<live publishable key>&currency=<code>&origin=<merchant page origin>
    &return_url=<optional>: Stripe's card Element; the payment method it makes is exchanged
    for our `tok_` (POST /v1/processor-tokens), handed to the merchant by postMessage to
    `origin` (when framed) and/or by sending the payer to `return_url?token=tok_…`."""

    template_name = "processors/stripe/hosted_fields.html"

    @method_decorator(xframe_options_exempt)  # framing is decided by frame-ancestors
    def dispatch(self, request, *args, **kwargs):
        return super().dispatch(request, *args, **kwargs)

    def get(self, request):
        query = request.GET
        origin, return_url = query.get("origin", ""), query.get("return_url", "")
        problem = _link_problem(origin, return_url)
        if problem:
            return self.refused(request, 400, problem)
        try:
            # As any caller without a secret key (docs/request-safety.md): the page is open
            # to anyone, and each made-up key would cost a lookup.
            refuse_over_address_limit(request)
        except RateLimited as exc:
            return self.refused(request, 429, exc.message, headers=exc.headers)
        key = _live_publishable_key(query.get("key", ""))
        if key is None:
            return self.refused(
                request, 403, "This page needs the merchant's live publishable key."
            )
        currency = normalise_currency(query.get("currency", ""))
        if currency is None:
            return self.refused(request, 400, "Name the payment's currency (for example eur).")
        try:
            account = routed_account(
                merchant_id=key.merchant_id, method_type="card", currency=currency
            )
        except ProcessingFailed as exc:
            return self.refused(request, exc.status, exc.message)
        return self.page(
            request,
            status=200,
            frame_ancestors=origin or "'none'",
            api_base=account.api_base,
            state="open",
            settings_json={
                "stripeKey": account.publishable_key,
                "key": query["key"],
                "currency": currency,
                "origin": origin,
                "returnUrl": return_url,
            },
        )

    def refused(self, request, status, message, headers=None):
        response = self.page(request, status=status, state="refused", message=message)
        for name, value in (headers or {}).items():
            response[name] = value
        return response


def _live_publishable_key(presented: str) -> ApiKey | None:
    """The merchant's key if `presented` is a live publishable key in force."""
    key = api_key_find(presented)
    if key is None or key.is_secret or not key.livemode or key.revoked_at is not None:
        return None
    if key.expires_at is not None and key.expires_at <= timezone.now():
        return None
    return key


def _link_problem(origin: str, return_url: str) -> str:
    """How the token is to reach the merchant, checked: at least one way, each well formed."""
    if not origin and not return_url:
        return "Give `origin` (the merchant page framing this one) or `return_url`, or both."
    if origin and not is_origin(origin):
        return "`origin` must be an origin such as https://shop.example (no path)."
    if return_url and origin_of(return_url) is None:
        return "`return_url` must be an absolute http or https URL."
    return ""


class AuthenticationPage(StripePage):
    """3-D Secure through Stripe: GET runs Stripe.js's `confirmCardPayment` with the
    PaymentIntent's client secret, then posts back here; POST asks Stripe how it ended (the
    connector's complete_action) and sends the payer to the merchant's `return_url`.
    The signed payment id in the URL is the credential; a payment that moved on meanwhile
    gets the same ending (a reload, a second tab)."""

    template_name = "processors/stripe/authenticate.html"

    def get(self, request, signed):
        payment = _signed_payment(signed)
        if payment is None:
            return self.gone(request)
        if payment.status != Status.REQUIRES_ACTION:
            return self.ending(request, payment)
        found = linked(Kind.PAYMENT, payment.id)
        if found is None:
            return self.gone(request)
        client = stripe_client(found.account)
        try:
            intent = call(client.v1.payment_intents.retrieve, found.processor_id)
        except (ServiceError, stripe.StripeError):
            return self.page(request, status=502, state="unreachable")
        return self.page(
            request,
            status=200,
            api_base=found.account.api_base,
            return_url=payment.return_url,
            state="open",
            payment=payment,
            settings_json={
                "stripeKey": found.account.publishable_key,
                "clientSecret": intent["client_secret"],
            },
        )

    def post(self, request, signed):
        payment = _signed_payment(signed)
        if payment is None:
            return self.gone(request)
        if payment.status == Status.REQUIRES_ACTION:
            try:
                payment = payment_complete_action(payment=payment, details={"stripe": "returned"})
            except ServiceError as exc:
                payment.refresh_from_db()  # answered meanwhile (another tab, a webhook)?
                if payment.status == Status.REQUIRES_ACTION:
                    # Not finished at Stripe, or Stripe unreachable: the payer may try again.
                    return self.page(
                        request, status=exc.status, state="retry", return_url=payment.return_url
                    )
        return self.ending(request, payment)

    def ending(self, request, payment):
        if payment.return_url:
            return HttpResponseRedirect(payment.return_url, status=303)
        return self.page(request, status=200, state="done", payment=payment)

    def gone(self, request):
        return self.page(request, status=404, state="gone")


def _signed_payment(signed: str) -> Payment | None:
    try:
        payment_id = signing.loads(signed, salt=SALT)
    except signing.BadSignature:
        return None
    return Payment.objects.filter(pk=payment_id, livemode=True).first()
