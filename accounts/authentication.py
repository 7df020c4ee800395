"""Bearer API-key authentication (spec "Authentication"): step 3 of admission/pipeline.py.

Missing, malformed, unknown, revoked or expired -> 401 `authentication_error`. On success the
request carries `merchant`, `api_key`, `livemode` and `api_version` (the version in force).

A caller without a valid secret key pays its client address's bucket (admission.address,
docs/admission.md "Callers without a secret key"): no key, a malformed or publishable one
before the lookup, a secret-shaped one that fails after it; and while that bucket is empty,
a secret-shaped key the key cache does not know is refused before the database is asked (and,
by step 2 of the pipeline, which asks `knows_without_a_query`, before the URL is resolved or
DRF runs).
"""

from django.conf import settings
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication

from accounts import keycache, keyfilter, keys
from accounts.keys import KEY_RE
from accounts.services import api_key_find, api_key_touch
from admission.address import refuse_over_address_limit, refuse_refused_address
from admission.unknown_keys import count_unknown_key
from api.errors import AuthenticationFailed
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
        if api_key is None and keys.is_well_formed(token):
            count_unknown_key()  # looked up and not found: the fleet's bound on made-up keys
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

    @staticmethod
    def knows_without_a_query(request) -> bool:
        """The request's secret key is in the key cache (valid, or revoked or expired:
        `authenticate` decides): one HMAC and a dict lookup. Admission's step 2 asks it."""
        token = _token_or_none(request)
        return token is not None and token.startswith("svc_sk_") and _cached(token)

    @staticmethod
    def surely_no_key(request) -> bool:
        """The request's key, well formed, is no stored key: not in the key cache (a key in
        use costs no more) and not in accounts.keyfilter (one HMAC per pepper, the revision's
        read, no query for the key). Admission's step 2b asks it while made-up keys flood."""
        token = _token_or_none(request)
        return token is not None and not _cached(token) and keyfilter.surely_no_key(token)


def _token_or_none(request) -> str | None:
    try:
        return bearer_token(request)
    except AuthenticationFailed:
        return None


def _cached(token: str) -> bool:
    return keys.is_well_formed(token) and keycache.lookups.holds(
        keys.hash_key(token, settings.API_KEY_PEPPER)
    )


def _failure(api_key) -> AuthenticationFailed | None:
    if api_key is None:
        return AuthenticationFailed("Invalid API key provided.", code="invalid_api_key")
    if api_key.revoked_at is not None:
        return AuthenticationFailed("This API key has been revoked.", code="api_key_revoked")
    if api_key.expires_at is not None and api_key.expires_at <= timezone.now():
        return AuthenticationFailed("This API key has expired.", code="api_key_expired")
    return None
