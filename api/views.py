"""The base every API view derives from, and the envelope for Django's own 404 and 500."""

from django.conf import settings
from rest_framework.views import APIView

from api.errors import ApiFailure, unrecognized_url
from api.middleware import error_response
from api.pagination import list_envelope, paginate


class ServiceAPIView(APIView):
    """Thin views: parse with a serializer, call one service, render.

    Class attributes read by the shared request machinery:
    - `allow_publishable_key`: publishable keys may call it (tokens, test-card list);
    - `test_mode_only`: live keys get 403 `test_mode_required`;
    - `accepts_card_data`: the raw-card guard lets card data through (only the tokenizer);
    - `ignores_idempotency_key`: no idempotent replay (only the tokenizer, spec Common rules 1).
    """

    allow_publishable_key = False
    test_mode_only = False
    accepts_card_data = False
    ignores_idempotency_key = False

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Service-Version"] = getattr(request, "api_version", settings.API_VERSION)
        return response

    def paginated(self, queryset, *, id_prefix: str, serialize, **extra):
        """A list envelope of `serialize(item)` for the page the query parameters ask for."""
        items, has_more, next_cursor = paginate(
            queryset, self.request.query_params, id_prefix=id_prefix
        )
        return list_envelope([serialize(item) for item in items], has_more, next_cursor, **extra)


def unrecognized_path(request, *args, **kwargs):
    """Reserved and unknown paths: 404 in the envelope (spec "Common rules" 6)."""
    return error_response(unrecognized_url(request.method, request.path), request)


def handler404(request, exception=None):
    return unrecognized_path(request)


def handler500(request):
    return error_response(ApiFailure("An internal error occurred."), request)
