"""Bearer API-key authentication (spec "Authentication").

Missing, malformed, unknown, revoked or expired -> 401 `authentication_error`. On success the
request carries `merchant`, `api_key`, `livemode` and `api_version` (the version in force).
"""

from django.utils import timezone
from rest_framework.authentication import BaseAuthentication

from accounts.services import api_key_find, api_key_touch
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
        token = bearer_token(request)
        if token is None:
            return None  # -> NotAuthenticated -> 401 api_key_missing
        api_key = api_key_find(token)
        if api_key is None:
            raise AuthenticationFailed("Invalid API key provided.", code="invalid_api_key")
        if api_key.revoked_at is not None:
            raise AuthenticationFailed("This API key has been revoked.", code="api_key_revoked")
        if api_key.expires_at is not None and api_key.expires_at <= timezone.now():
            raise AuthenticationFailed("This API key has expired.", code="api_key_expired")
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
