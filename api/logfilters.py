"""Logging filters, configured in config/settings.py LOGGING (so: no model imports here)."""

import logging

from api.carddata import redact


class RedactCardData(logging.Filter):
    """Redacts card-shaped strings from a record's message, traceback and stack before any
    handler formats it (an exception message can quote input)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
