"""What a valid key may do (spec "Authentication" 5): a publishable key only tokenises and
reads the test-card list; a live key never reaches a test-mode endpoint. Both are 403."""

from rest_framework.permissions import BasePermission

from api.errors import AuthenticationFailed, AuthorizationFailed


class KeyMayCallView(BasePermission):
    def has_permission(self, request, view):
        api_key = request.auth
        if api_key is None:
            raise AuthenticationFailed(
                "No API key provided: send `Authorization: Bearer <API_KEY>`.",
                code="api_key_missing",
            )
        if getattr(view, "test_mode_only", False) and api_key.livemode:
            raise AuthorizationFailed(
                "This endpoint is available only with a test key.", code="test_mode_required"
            )
        if not api_key.is_secret and not getattr(view, "allow_publishable_key", False):
            raise AuthorizationFailed(
                "A publishable key may only create tokens and read the "
                "test-card list; use a secret key.",
                code="secret_key_required",
            )
        return True
