"""The error envelope (spec "Errors"): one exception class per error type, raised by services
and turned into `{"error": {...}}` by one handler. Views never build error bodies by hand.
"""

import math

from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.settings import api_settings

from api import metrics

QUOTED_CHARS = 40  # an error message shows at most this much of a bad value
# Backstops: no envelope grows with the input, whatever a message quotes (issue 20: errors
# quoting a whole 256 KiB value were stored for 24 hours under an Idempotency-Key).
MAX_MESSAGE_CHARS = 500
MAX_PARAM_CHARS = 200


def quoted(value) -> str:
    """A bad value as an error message shows it: a short prefix of its repr, `…` marking
    the cut, so no message (nor a stored answer holding it) grows with the input."""
    if isinstance(value, str):
        shown = repr(value[:QUOTED_CHARS])
        return shown + "…" if len(value) > QUOTED_CHARS else shown
    shown = repr(value)  # a number, a list, an object: bounded by the body size limit
    return shown[:QUOTED_CHARS] + "…" if len(shown) > QUOTED_CHARS else shown


def _cut(text: str | None, limit: int) -> str | None:
    return text if text is None or len(text) <= limit else text[: limit - 1] + "…"


class ServiceError(Exception):
    """Base of every failure the API reports. Subclasses fix `status` and `type`."""

    status = 500
    type = "api_error"
    default_code = "internal_error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        decline_code: str | None = None,
        payment: str | None = None,
        headers: dict | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.param = param
        self.decline_code = decline_code
        self.payment = payment  # the id of the payment a decline or failure was kept as
        self.headers = headers or {}

    def envelope(self, request_id: str | None) -> dict:
        message, param = _cut(self.message, MAX_MESSAGE_CHARS), _cut(self.param, MAX_PARAM_CHARS)
        body = {"type": self.type, "code": self.code, "message": message, "param": param}
        if self.decline_code is not None:
            body["decline_code"] = self.decline_code
        if self.payment is not None:
            body["payment"] = self.payment
        body["request_id"] = request_id
        return {"error": body}


class ValidationFailed(ServiceError):
    status, type, default_code = 400, "validation_error", "invalid_parameter"


class AuthenticationFailed(ServiceError):
    status, type, default_code = 401, "authentication_error", "invalid_api_key"


class CardDeclined(ServiceError):
    status, type, default_code = 402, "card_error", "card_declined"


class AuthorizationFailed(ServiceError):
    status, type, default_code = 403, "authorization_error", "secret_key_required"


class NotFound(ServiceError):
    status, type, default_code = 404, "not_found_error", "resource_not_found"


class IdempotencyFailed(ServiceError):
    status, type, default_code = 409, "idempotency_error", "idempotency_key_conflict"


class ProcessingFailed(ServiceError):
    status, type, default_code = 422, "processing_error", "payment_failed"


class RateLimited(ServiceError):
    status, type, default_code = 429, "rate_limit_error", "rate_limit_exceeded"


# Names the limit a 429 spent, for the proxy, which counts refusals and takes over from a
# caller that keeps being refused (deploy/haproxy.cfg): `key` (an API key's own rate),
# `address` (callers without a valid secret key, per client address).
RATE_LIMIT_SCOPE_HEADER = "X-RateLimit-Scope"


class ApiFailure(ServiceError):
    status, type, default_code = 500, "api_error", "internal_error"


def not_found(resource: str = "resource") -> NotFound:
    return NotFound(f"No such {resource}.")


def unrecognized_url(method: str, path: str) -> NotFound:
    return NotFound(
        f"Unrecognized request URL ({method}: {_cut(path, MAX_PARAM_CHARS)}).",
        code="unrecognized_request_url",
    )


def first_validation_problem(detail, path: tuple = ()) -> tuple[str | None, str]:
    """DRF's nested error detail -> (dotted param, message) of the first problem found."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = () if key == api_settings.NON_FIELD_ERRORS_KEY else (str(key),)
            return first_validation_problem(value, path + name)
    if isinstance(detail, list):
        for index, value in enumerate(detail):
            if isinstance(value, (dict, list)):
                if value:
                    return first_validation_problem(value, path + (str(index),))
                continue
            return (".".join(path) or None), str(value)
    return (".".join(path) or None), str(detail)


def as_service_error(exc: Exception, request=None) -> ServiceError | None:
    """Map DRF's and Django's own exceptions onto the envelope; None for anything unknown."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, drf.ValidationError):
        param, message = first_validation_problem(exc.detail)
        return ValidationFailed(message, param=param)
    if isinstance(exc, drf.ParseError):
        return ValidationFailed("The request body is not valid JSON.", code="invalid_json")
    if isinstance(exc, drf.UnsupportedMediaType):
        return ValidationFailed(str(exc.detail), code="invalid_json")
    if isinstance(exc, drf.NotAuthenticated):
        return AuthenticationFailed(
            "No API key provided: send `Authorization: Bearer <API_KEY>`.", code="api_key_missing"
        )
    if isinstance(exc, drf.AuthenticationFailed):
        return AuthenticationFailed(str(exc.detail))
    if isinstance(exc, (drf.PermissionDenied, DjangoPermissionDenied)):
        return AuthorizationFailed("This API key may not perform this request.")
    # ObjectDoesNotExist: a row deleted while the request waited for its lock (a test-data
    # reset, docs/sandbox.md) is missing, as if it had never existed.
    if isinstance(exc, (drf.NotFound, Http404, ObjectDoesNotExist)):
        return not_found()
    if isinstance(exc, drf.MethodNotAllowed):
        method = getattr(request, "method", "?")
        return unrecognized_url(method, getattr(request, "path", "?"))
    if isinstance(exc, drf.Throttled):
        wait = max(1, math.ceil(exc.wait or 0))  # whole seconds, never 0 (RFC 9110)
        return RateLimited(
            f"Too many requests with this API key; retry in {wait} s.",
            headers={"Retry-After": str(wait), RATE_LIMIT_SCOPE_HEADER: "key"},
        )
    return None


def exception_handler(exc, context):
    """DRF's EXCEPTION_HANDLER: every failure inside a view becomes the envelope."""
    request = context.get("request")
    error = as_service_error(exc, request)
    if error is None:
        return None  # unknown: re-raised, and RequestIdMiddleware answers 500 in the envelope
    metrics.error_answered(error, request)
    return Response(
        error.envelope(getattr(request, "request_id", None)),
        status=error.status,
        headers=error.headers,
    )
