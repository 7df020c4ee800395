"""Logging filters, configured in config/settings/observability.py LOGGING (so: no model
imports here)."""

import logging
import re

from api.cardnumbers import REDACTED, redact

# API keys and webhook secrets as they are issued (spec/decisions.md "Neutral names"),
# whatever their length: a key pasted into an Idempotency-Key, or quoted by an exception,
# keeps its prefix (which kind of key) and loses the rest (issue 20).
SECRET_SHAPED = re.compile(r"(svc_(?:[sp]k_(?:test|live)|whsec)_)[0-9A-Za-z]+")


def redact_log_text(text: str) -> str:
    """Text as the logs may hold it: key- and secret-shaped strings and card-shaped ones
    (the raw-card guard's rule, `api.cardnumbers.redact`) replaced."""
    if "svc_" in text:
        text = SECRET_SHAPED.sub(rf"\1{REDACTED}", text)
    return redact(text)


class RedactCardData(logging.Filter):
    """Redacts card-shaped and key-shaped strings from a record's message, traceback and
    stack before any handler formats it (an exception message can quote input)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact_log_text(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_log_text(record.exc_text)
        if record.stack_info:
            record.stack_info = redact_log_text(record.stack_info)
        return True
