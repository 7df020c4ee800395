"""Admission: whether a request may run, in the order it is asked (docs/admission.md).

Read top to bottom; the first step that refuses answers. Every refusal is the service's error
envelope; a 429 names the limit it spent in `X-RateLimit-Scope` where the proxy counts it.

| # | step, where                 | refuses                                  | scope    | answer   |
|---|-----------------------------|------------------------------------------|----------|----------|
| 0 | the proxy, when deployed    | an address or key the service refused    | address, | 429 (its |
|   | (deploy/haproxy.cfg)        | > 40 times in 10 s, tarpitted 1 s; test  | key      | bodies:  |
|   |                             | keys, unknown keys and large bodies go   |          | admission|
|   |                             | to the test-mode pool instead            |          | .proxy)  |
| 1 | load shedding               | a `/v1` request with no key, then a test | process  | 429,     |
|   | (AdmissionMiddleware)       | one, while the threads are nearly busy   |          | R-A 1    |
| 2 | refused address             | a `/v1` request from an address this     | address  | 429,     |
|   | (AdmissionMiddleware)       | process knows empty, unless its secret   |          | R-A wait |
|   |                             | key is in the key cache: no URL, no DRF  |          |          |
| 2b| made-up key in a flood      | while the fleet's unknown-key bucket is  | fleet    | 401      |
|   | (AdmissionMiddleware)       | empty, a key no stored key can be        |          |          |
|   |                             | (accounts.keyfilter): no URL, no query   |          |          |
| 3 | authentication (DRF,        | no, malformed, unknown, revoked, expired | -        | 401      |
|   | accounts.authentication)    | key; a caller without a valid secret key | address  | 429,     |
|   |                             | pays its address's bucket                |          | R-A wait |
| 4 | the key's rate (KeyLimits,  | a secret key over its token bucket       | key      | 429,     |
|   | DRF throttle)               | (a large body costs more tokens)         |          | R-A wait |
| 5 | concurrency (KeyLimits)     | a request beyond its merchant's units    | merchant | 429,     |
|   |                             | of concurrent work in its mode           |          | R-A 1    |

(R-A: Retry-After. Scope: what the 429's X-RateLimit-Scope names when the proxy counts it,
`address` or `key`; the others send none.)

After admission the view checks the body (size, shape, card data) and idempotency
(api.views). Counters live in one store (admission.store): Redis on Redis's clock, or this
process alone without Redis; Redis unreachable lets requests through (fails open).
"""

from django.conf import settings
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from admission import address, buckets, budgets, shedding, unknown_keys
from api.errors import AuthenticationFailed, RateLimited
from api.middleware import error_response


class AdmissionMiddleware:
    """Steps 1 to 2b, before URL resolution and DRF; and, whatever the answer, gives back the
    concurrency units step 5 took (`request.admission_hold`)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with shedding.running() as busy:
            try:
                shedding.refuse_when_busy(request, busy)  # 1
                _refuse_a_refused_address(request)  # 2
                _refuse_a_made_up_key_in_a_flood(request)  # 2b
            except (RateLimited, AuthenticationFailed) as refusal:
                return error_response(refusal, request)
            try:
                return self.get_response(request)  # 3 to 5 run inside DRF
            finally:
                hold = getattr(request, "admission_hold", None)
                if hold is not None:
                    hold.release()


def _refuse_a_refused_address(request) -> None:
    """Preflights are answered as ever (they carry no key); an unknown path from a refused
    address is 429 rather than 404. The key (an HMAC and the key cache's lookup) is asked
    only of an address known empty, so the requests of an address in good standing hash
    their key once, in authentication (issue 33)."""
    if not request.path.startswith("/v1/") or request.method == "OPTIONS":
        return
    address.refuse_refused_address(request, excused=lambda: _brings_a_known_key(request))


def _refuse_a_made_up_key_in_a_flood(request) -> None:
    """While made-up keys from anywhere have emptied the fleet's bucket (admission.unknown_keys),
    one the key filter shows to be no stored key is answered as step 3 would, without its
    query. A real key is in the filter, so it is never refused here."""
    if not request.path.startswith("/v1/") or not unknown_keys.flooding():
        return
    if any(
        authenticator.surely_no_key(request)
        for authenticator in api_settings.DEFAULT_AUTHENTICATION_CLASSES
    ):
        raise AuthenticationFailed(
            "Invalid API key provided.", headers={"WWW-Authenticate": 'Bearer realm="api"'}
        )


def _brings_a_known_key(request) -> bool:
    """Asked of step 3's authentication, the class REST_FRAMEWORK names (accounts'): this room
    sits below accounts (ARCHITECTURE.md), so it asks rather than imports."""
    return any(
        authenticator.knows_without_a_query(request)
        for authenticator in api_settings.DEFAULT_AUTHENTICATION_CLASSES
    )


class KeyLimits(BaseThrottle):
    """Steps 4 and 5, DRF's throttle (after authentication and permissions): the key's rate
    (a refusal is DRF's Throttled, answered 429 with scope `key` by api.errors), then the
    merchant's concurrency units, held on the request until AdmissionMiddleware gives them
    back. Both in one round trip to the store (admission.budgets.hold_after_tokens)."""

    def allow_request(self, request, view):
        # Before the body is read.
        self.seconds, held = budgets.admit(request, view, _key_tokens(request, view))
        if held is None:
            return False
        request._request.admission_hold = held
        return True

    def wait(self):
        return self.seconds


def _key_tokens(request, view) -> buckets.Take | None:
    """A secret key's tokens for this request; None for a publishable key, whose callers were
    counted per address by authentication instead."""
    api_key = request.auth
    if not api_key.is_secret:
        return None
    limits = settings.API_RATE_LIMITS["live" if api_key.livemode else "test"]
    cost = budgets.request_cost(request, view)  # a large body takes more tokens, as more units
    return buckets.Take(api_key.id, rate=limits["rate"], burst=limits["burst"], cost=cost)
