"""Request id on every response, and the envelope for anything that escaped a view."""

import logging

from django.core.exceptions import BadRequest, DisallowedHost, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpResponse

from api import metrics
from api.errors import ApiFailure, ServiceError, ValidationFailed
from api.ids import new_id
from api.renderers import dumps

log = logging.getLogger("api")

JSON_CONTENT_TYPE = "application/json; charset=utf-8"


def error_response(error: ServiceError, request) -> HttpResponse:
    """The envelope outside DRF (Django's 404/500 handlers, middleware)."""
    metrics.error_answered(error, request)
    response = HttpResponse(
        dumps(error.envelope(getattr(request, "request_id", None))),
        status=error.status,
        content_type=JSON_CONTENT_TYPE,
    )
    for name, value in error.headers.items():
        response[name] = value
    return response


# Exceptions that mean a client error, which Django turns into the right response itself.
HANDLED_BY_DJANGO = (Http404, PermissionDenied, BadRequest, SuspiciousOperation)


class RequestIdMiddleware:
    """Stamps `X-Request-Id: req_<ULID>` on every response, error or not, and turns an
    unhandled exception into a 500 envelope (never a stack trace, whatever DEBUG says)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = new_id("req")
        response = _refuse_unserved_host(request) or self.get_response(request)
        # An idempotent replay already carries its original request's id (request-safety.md).
        response.setdefault("X-Request-Id", request.request_id)
        return response

    def process_exception(self, request, exception):
        if _is_api(request) and isinstance(exception, (BadRequest, SuspiciousOperation)):
            return error_response(_bad_request(exception), request)  # not Django's HTML page
        if isinstance(exception, HANDLED_BY_DJANGO):
            return None  # Django answers these itself: 404 (our envelope), 403, 400
        log.exception(
            "unhandled error on %s %s request_id=%s",
            request.method,
            request.path,
            getattr(request, "request_id", None),
        )
        return error_response(
            ApiFailure("An internal error occurred; retry with the same Idempotency-Key."), request
        )


def _is_api(request) -> bool:
    return request.path.startswith("/v1")


def _bad_request(exception: Exception) -> ValidationFailed:
    if isinstance(exception, DisallowedHost):
        return ValidationFailed(
            "The Host header names a host this service does not serve.",
            code="invalid_host",
            param="Host",
        )
    return ValidationFailed("The request is malformed.", code="bad_request")


def _refuse_unserved_host(request) -> HttpResponse | None:
    """A Host outside ALLOWED_HOSTS, checked before Django's CommonMiddleware would raise it
    into an HTML 400 page (DEBUG's, with a traceback, when DEBUG is on): the envelope on /v1."""
    if not _is_api(request):
        return None
    try:
        request.get_host()
    except DisallowedHost as exc:
        return error_response(_bad_request(exc), request)
    return None
