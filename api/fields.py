"""Serializer fields for the conventions every resource shares: amounts, currencies,
metadata, strings, and time filters."""

import datetime
import math
import re

from rest_framework import serializers
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from api.currencies import normalise_currency
from api.errors import quoted

MAX_AMOUNT = 2**53 - 1  # "any value at or above 2^53 is refused"

# Every string input has a maximum length (docs/api-conventions.md "String lengths"): the
# spec's where it gives one, else this, Stripe's for most strings. An unbounded string was
# stored, and echoed whole in errors kept 24 hours under an Idempotency-Key (issue 20).
MAX_STRING_LENGTH = 500
MAX_ID_LENGTH = 64  # spec "Limits": ids are up to 64 characters


_SURROGATE = re.compile("[\ud800-\udfff]")


class _NoSurrogates(ProhibitSurrogateCharactersValidator):
    """DRF's check by one search instead of a generator step per character (a 500-character
    description: 500 steps); what it finds gets DRF's own error."""

    def __call__(self, value):
        found = _SURROGATE.search(str(value))
        if found is not None:
            super().__call__(found.group())


class StrictCharField(serializers.CharField):
    """A JSON string only (DRF's CharField would turn 42 into "42"), of at most
    MAX_STRING_LENGTH characters unless the field says otherwise."""

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("max_length", MAX_STRING_LENGTH)
        super().__init__(**kwargs)
        self.validators = [
            _NoSurrogates() if type(v) is ProhibitSurrogateCharactersValidator else v
            for v in self.validators
        ]

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError("Must be a string.")
        return super().to_internal_value(data)


class StrictChoiceField(serializers.ChoiceField):
    """One of `choices`; DRF's own message would quote a bad value whole."""

    def to_internal_value(self, data):
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError:
            raise serializers.ValidationError(f"{quoted(data)} is not a valid choice.") from None


class IdField(StrictCharField):
    """An id as a request names one: a string of at most MAX_ID_LENGTH characters."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", MAX_ID_LENGTH)
        super().__init__(**kwargs)


class AmountField(serializers.Field):
    """A JSON integer in minor units: never a float (not even 10.0), a string or a boolean."""

    def __init__(self, *, min_value: int = 1, **kwargs):
        self.min_value = min_value
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail_with("must be an integer amount in minor units (a JSON number, no decimals).")
        if data >= 2**53:
            self.fail_with("must be below 2^53.")
        if data < self.min_value:
            self.fail_with(f"must be at least {self.min_value}.")
        return data

    def to_representation(self, value):
        return value

    def fail_with(self, message):
        raise serializers.ValidationError(f"{self.field_name} {message}")


class CurrencyField(serializers.Field):
    def to_internal_value(self, data):
        code = normalise_currency(data)
        if code is None:
            raise serializers.ValidationError(f"Unsupported currency: {quoted(data)}.")
        return code

    def to_representation(self, value):
        return value


MAX_METADATA_KEYS = 50
MAX_METADATA_KEY_LENGTH = 40
MAX_METADATA_VALUE_LENGTH = 500


class MetadataField(serializers.Field):
    """Up to 50 keys of at most 40 characters; values: string (<=500), number, boolean, null."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("metadata must be an object.")
        if len(data) > MAX_METADATA_KEYS:
            raise serializers.ValidationError(f"metadata has more than {MAX_METADATA_KEYS} keys.")
        if any("\x00" in key for key in data):
            # Named as `metadata`, not `metadata.<key>`: the key itself is what cannot be stored.
            raise serializers.ValidationError("metadata keys must not contain NUL characters.")
        for key in data:
            if not key or len(key) > MAX_METADATA_KEY_LENGTH:
                # Named as `metadata` too: `param` would otherwise echo a key of any length.
                raise serializers.ValidationError(
                    f"metadata keys must be 1-{MAX_METADATA_KEY_LENGTH} characters: {quoted(key)}."
                )
        errors = {}
        for key, value in data.items():
            problem = _metadata_problem(value)
            if problem:
                errors[key] = [problem]
                break
        if errors:
            raise serializers.ValidationError(errors)
        return data

    def to_representation(self, value):
        return value


def _metadata_problem(value) -> str | None:
    if isinstance(value, str):
        if len(value) > MAX_METADATA_VALUE_LENGTH:
            return f"metadata values must be at most {MAX_METADATA_VALUE_LENGTH} characters."
        if "\x00" in value:  # PostgreSQL's jsonb cannot hold U+0000 (and no other field takes it)
            return "metadata values must not contain NUL characters."
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "metadata numbers must be finite."  # 1e400 parses as infinity: not storable
    if value is None or isinstance(value, (bool, int, float)):
        return None
    return "metadata values must be a string, a number, a boolean or null."


def parse_time_filter(value: str) -> datetime.datetime | None:
    """An RFC 3339 string or unix seconds -> aware UTC datetime; None if neither."""
    value = value.strip()
    if value.lstrip("-").isdigit():
        try:
            return datetime.datetime.fromtimestamp(int(value), tz=datetime.UTC)
        except (OverflowError, OSError, ValueError):
            return None
    try:
        parsed = datetime.datetime.fromisoformat(
            value.replace("Z", "+00:00").replace("z", "+00:00")
        )
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    try:
        return parsed.astimezone(datetime.UTC)
    except OverflowError:  # 9999-12-31T23:00:00-14:00 has no UTC form within datetime's range
        return None
