"""Per-payment simulator overrides, read from payment metadata (decisions.md "Neutral names").

Every key is listed with its description in `GET /v1/sandbox/test-cards`. A malformed value is
400 naming `metadata.<key>`, and nothing is processed.
"""

from api.errors import ValidationFailed
from payments.declines import DECLINES
from refunds.states import FAILURE_CODES

OUTCOME = "_svc_test_outcome"
LATENCY_MS = "_svc_test_latency_ms"
HTTP_ERROR = "_svc_test_http_error"
REFUSE_CAPTURE = "_svc_test_refuse_capture"
REFUSE_VOID = "_svc_test_refuse_void"
REFUND_OUTCOME = "_svc_test_refund_outcome"  # in the refund's metadata, not the payment's

MAX_LATENCY_MS = 10_000
HTTP_ERROR_STATUSES = (400, 401, 402, 403, 404, 409, 422, 429, 500, 502, 503, 504)
OUTCOME_VALUES = ("approved", "failed", "requires_action") + tuple(
    f"declined:{code}" for code in DECLINES
)
REFUND_OUTCOME_VALUES = (
    "succeeded",
    "pending",
    *(f"failed:{code}" for code in FAILURE_CODES),
    *(f"pending>failed:{code}" for code in FAILURE_CODES),
)

DESCRIPTIONS: dict[str, str] = {
    OUTCOME: "Overrides the card's outcome: approved, declined:<decline_code> (any decline "
    "code), failed, or requires_action (a 3-D Secure challenge whose Approve gives the card's "
    "own outcome).",
    LATENCY_MS: f"Integer 0-{MAX_LATENCY_MS}: the authorization answers after this many "
    "milliseconds (a few such payments at once per account; one more is 429).",
    HTTP_ERROR: "HTTP status to answer instead of processing ("
    + ", ".join(map(str, HTTP_ERROR_STATUSES))
    + "), in the error envelope; a 5xx is api_error / connector_http_error. Nothing is "
    "processed and the token stays usable.",
    REFUSE_CAPTURE: "true: the processor refuses captures of this payment (422 "
    "capture_failed, payment.capture_failed; the payment stays authorized).",
    REFUSE_VOID: "true: the processor refuses to void this payment's authorisation (422 "
    "void_failed; the payment stays authorized).",
    REFUND_OUTCOME: "In a refund's metadata: succeeded, pending (succeeds 30 seconds later), "
    "failed:<failure_code> or pending>failed:<failure_code>, failure codes: "
    + ", ".join(FAILURE_CODES)
    + ".",
}


def _invalid(key: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"metadata.{key}: {message}", param=f"metadata.{key}")


def outcome(metadata: dict) -> str | None:
    value = metadata.get(OUTCOME)
    if value is not None and value not in OUTCOME_VALUES:
        raise _invalid(
            OUTCOME, "must be approved, declined:<decline_code>, failed or requires_action."
        )
    return value


def refund_outcome(metadata: dict) -> str | None:
    value = metadata.get(REFUND_OUTCOME)
    if value is not None and value not in REFUND_OUTCOME_VALUES:
        raise _invalid(REFUND_OUTCOME, DESCRIPTIONS[REFUND_OUTCOME])
    return value


def _integer(metadata: dict, key: str, allowed) -> int | None:
    value = metadata.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
        raise _invalid(key, DESCRIPTIONS[key])
    return value


def latency_ms(metadata: dict) -> int:
    return _integer(metadata, LATENCY_MS, range(MAX_LATENCY_MS + 1)) or 0


def http_error(metadata: dict) -> int | None:
    return _integer(metadata, HTTP_ERROR, HTTP_ERROR_STATUSES)


def flag(metadata: dict, key: str) -> bool:
    value = metadata.get(key, False)
    if not isinstance(value, bool):
        raise _invalid(key, "must be true or false.")
    return value
