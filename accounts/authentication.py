"""Bearer API-key authentication (spec "Authentication").

Missing, malformed, unknown, revoked or expired -> 401 `authentication_error`. On success the
request carries `merchant`, `api_key`, `livemode` and `api_version` (the version in force).

A caller without a valid secret key pays its client address's bucket (api.ratelimit, docs/
request-safety.md "Callers without a secret key"): no key, a malformed or publishable one
before the lookup, a secret-shaped one that fails after it; and while that bucket is empty,
a secret-shaped key the key cache does not know is refused before the database is asked, and
before the URL is resolved or DRF runs (`RefusedAddressMiddleware`).
"""

from django.conf import settings
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication

from accounts import keycache, keys
from accounts.keys import KEY_RE
from accounts.services import api_key_find, api_key_touch
from api.errors import AuthenticationFailed, RateLimited
from api.middleware import error_response
from api.ratelimit import refuse_over_address_limit, refuse_refused_address
from api.versioning import version_in_force


def bearer_token(request) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthenticationFailed(
            "Malformed Authorization header: use `Bearer <API_KEY>`.", code="invalid_api_key"
        )
    return token.strip()


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        try:
            token = bearer_token(request)
        except AuthenticationFailed:
            refuse_over_address_limit(request)
            raise
        if token is None:
            refuse_over_address_limit(request)
            return None  # -> NotAuthenticated -> 401 api_key_missing
        match = KEY_RE.match(token)
        paid = match is None or match["kind"] != "sk"
        if paid:
            refuse_over_address_limit(request)
        api_key = api_key_find(token, before_query=lambda: refuse_refused_address(request))
        failure = _failure(api_key)
        if failure is not None:
            if not paid:
                refuse_over_address_limit(request)
            raise failure
        api_key_touch(api_key)
        django_request = request._request
        for target in (request, django_request):
            target.merchant = api_key.merchant
            target.api_key = api_key
            target.livemode = api_key.livemode
            target.api_version = version_in_force(request, api_key.api_version)
        return (api_key.merchant, api_key)

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


def _failure(api_key) -> AuthenticationFailed | None:
    if api_key is None:
        return AuthenticationFailed("Invalid API key provided.", code="invalid_api_key")
    if api_key.revoked_at is not None:
        return AuthenticationFailed("This API key has been revoked.", code="api_key_revoked")
    if api_key.expires_at is not None and api_key.expires_at <= timezone.now():
        return AuthenticationFailed("This API key has expired.", code="api_key_expired")
    return None


class RefusedAddressMiddleware:
    """While this process knows a client address's bucket to be empty, its `/v1` requests are
    refused here (429, as authentication would refuse them) unless they present a secret key
    the key cache holds: a flood of made-up keys then costs no URL resolution, no DRF and
    none of the middleware below this one. Preflights are answered as before (they carry no
    key); an unknown path from that address is 429 rather than 404."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/v1/") and request.method != "OPTIONS":
            if not _presents_a_cached_secret_key(request):
                try:
                    refuse_refused_address(request)
                except RateLimited as refusal:
                    return error_response(refusal, request)
        return self.get_response(request)


def _presents_a_cached_secret_key(request) -> bool:
    """The key may be served without a query (valid, or revoked or expired: authentication
    decides): one HMAC and a dict lookup."""
    try:
        token = bearer_token(request)
    except AuthenticationFailed:
        return False
    if token is None or not token.startswith("svc_sk_"):
        return False
    return keys.is_well_formed(token) and keycache.lookups.holds(
        keys.hash_key(token, settings.API_KEY_PEPPER)
    )
