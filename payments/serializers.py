"""Payments on the wire: input serializers (kept apart) and the one renderer of a payment,
used for API responses and event payloads alike."""

import datetime

from django.core.validators import RegexValidator
from rest_framework import serializers

from api.currencies import normalise_currency
from api.errors import ValidationFailed, quoted
from api.fields import (
    AmountField,
    CurrencyField,
    IdField,
    MetadataField,
    StrictCharField,
    StrictChoiceField,
    parse_time_filter,
)
from api.ids import is_id
from api.renderers import format_timestamp
from api.validation import Input
from payments.methods import find_method, get_method
from payments.models import Payment, Token
from payments.states import Status


class HttpsUrlField(StrictCharField):
    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 2048)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        serializers.URLField().run_validators(value)
        if not value.lower().startswith("https://"):
            raise serializers.ValidationError("Must be an absolute https URL.")
        return value


class MethodTypeField(StrictCharField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if find_method(value) is None:
            raise serializers.ValidationError(f"Unknown payment method type: {quoted(value)}.")
        return value


class PaymentMethodInput(Input):
    type = MethodTypeField()
    token = IdField(required=False, allow_null=True)


class BillingAddressInput(Input):
    country = serializers.RegexField(
        r"^[A-Za-z]{2}$",
        max_length=2,
        error_messages={
            "invalid": "Must be a 2-letter country code.",
            "max_length": "Must be a 2-letter country code.",
        },
    )
    line1 = StrictCharField(required=False, allow_null=True, max_length=200)
    line2 = StrictCharField(required=False, allow_null=True, max_length=200)
    city = StrictCharField(required=False, allow_null=True, max_length=200)
    postal_code = StrictCharField(required=False, allow_null=True, max_length=20)
    state = StrictCharField(required=False, allow_null=True, max_length=200)

    def validate_country(self, value):
        return value.upper()


class CustomerIdField(IdField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not is_id(value, "cus"):
            raise serializers.ValidationError("Must be a cus_ id.")
        return value


class CustomerInput(Input):
    id = CustomerIdField(required=False, allow_null=True)
    email = serializers.EmailField(required=False, allow_null=True, max_length=254)  # RFC 5321
    name = StrictCharField(required=False, allow_null=True, max_length=200)
    phone = StrictCharField(required=False, allow_null=True, max_length=40)
    billing_address = BillingAddressInput(required=False, allow_null=True)


STATEMENT_DESCRIPTOR = r"\A[A-Za-z0-9 *.\-]{2,22}\Z"  # \Z: `$` would let "ab\n" through
STATEMENT_DESCRIPTOR_RULE = "Must be 2-22 characters: letters, digits, spaces, '*', '.', '-'."


class PaymentCreateInput(Input):
    amount = AmountField()
    currency = CurrencyField()
    reference = StrictCharField(min_length=1, max_length=64)
    payment_method = PaymentMethodInput()
    capture_method = StrictChoiceField(
        choices=Payment.CaptureMethod.choices, default=Payment.CaptureMethod.AUTOMATIC
    )
    description = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=500)
    customer = CustomerInput(required=False, allow_null=True)
    return_url = HttpsUrlField(required=False, allow_null=True)
    statement_descriptor = StrictCharField(
        required=False,
        allow_null=True,
        max_length=22,
        error_messages={"max_length": STATEMENT_DESCRIPTOR_RULE},
        validators=[RegexValidator(STATEMENT_DESCRIPTOR, STATEMENT_DESCRIPTOR_RULE)],
    )
    metadata = MetadataField(required=False)


class PaymentConfirmInput(Input):
    payment_method = PaymentMethodInput()

    def validate_payment_method(self, value):
        if not value.get("token"):
            raise serializers.ValidationError({"token": ["A token is required to confirm."]})
        return value


class CaptureInput(Input):
    amount = AmountField(required=False)


def _method_to_dict(payment: Payment) -> dict:
    method = get_method(payment.method_type)
    data = {"type": payment.method_type, "card": payment.card}
    if method is not None and method.wallet:
        data["wallet"] = method.wallet
    if method is None or not method.card_like:
        data["details"] = payment.method_details
    return data


def payment_to_dict(payment: Payment) -> dict:
    """The payment exactly as the API returns it (and as events carry it): JSON-ready."""
    data = {
        "id": payment.id,
        "object": "payment",
        "status": payment.status,
        "amount": payment.amount,
        "amount_captured": payment.amount_captured,
        "amount_refunded": payment.amount_refunded,
        "currency": payment.currency,
        "reference": payment.reference,
        "description": payment.description,
        "capture_method": payment.capture_method,
        "method": _method_to_dict(payment),
        "customer": payment.customer,
        "outcome": payment.outcome,
        "fees": payment.fees,
        "return_url": payment.return_url,
        "statement_descriptor": payment.statement_descriptor,
        "metadata": payment.metadata,
        "livemode": payment.livemode,
        "created": format_timestamp(payment.created),
        "authorized_at": format_timestamp(payment.authorized_at),
        "captured_at": format_timestamp(payment.captured_at),
        "canceled_at": format_timestamp(payment.canceled_at),
    }
    if payment.status == Status.REQUIRES_ACTION and payment.next_action:
        data["next_action"] = payment.next_action
    if payment.clock_advanced_by is not None:
        data["clock_advanced_by"] = payment.clock_advanced_by  # test mode: sandbox time travel
    return data


def token_to_dict(token: Token) -> dict:
    return {
        "id": token.id,
        "object": "token",
        "type": token.type,
        "card": {
            "brand": token.brand,
            "last4": token.last4,
            "bin": token.bin,
            "exp_month": token.exp_month,
            "exp_year": token.exp_year,
        },
        "livemode": token.livemode,
        "created": format_timestamp(token.created),
        "expires_at": format_timestamp(token.expires_at),
    }


def _statuses(value: str) -> list[str]:
    statuses = [part.strip() for part in value.split(",")]
    unknown = [status for status in statuses if status not in Status.values]
    if unknown:
        raise ValueError(f"Unknown status: {quoted(unknown[0])}.")
    return statuses


def _currency(value: str) -> str:
    code = normalise_currency(value)  # an uppercase code is accepted and normalised
    if code is None:
        raise ValueError("Must be a supported ISO 4217 code.")
    return code


def _method_type(value: str) -> str:
    if find_method(value) is None:
        raise ValueError(f"Unknown payment method type: {quoted(value)}.")
    return value


def _customer(value: str) -> str:
    if not is_id(value, "cus"):
        raise ValueError("Must be a cus_ id.")
    return value


def _time(value: str):
    parsed = parse_time_filter(value)
    if parsed is None:
        raise ValueError("Must be an RFC 3339 time with a zone, or unix seconds.")
    return parsed


def _from_second(value: str) -> datetime.datetime:
    """created[gte]: from the start of the given second (timestamps are whole seconds on the
    wire, so 12:00:00.5 names the second a payment shown as 12:00:00Z was created in)."""
    return _time(value).replace(microsecond=0)


def _after_second(value: str) -> datetime.datetime:
    """created[lte]: up to the end of the given second, as the first instant after it (a
    payment created at 12:00:00.7 is shown as 12:00:00Z and must be in `lte=12:00:00Z`)."""
    second = _from_second(value)
    try:
        return second + datetime.timedelta(seconds=1)
    except OverflowError:  # the last second datetime can hold: nothing lies beyond it
        return datetime.datetime.max.replace(tzinfo=datetime.UTC)


def _reference(value: str) -> str:
    if "\x00" in value:  # no reference holds one (they are refused on create), nor can SQL
        raise ValueError("Must not contain NUL characters.")
    return value


def _amount(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or int(value) >= 2**53:
        raise ValueError("Must be a non-negative integer in minor units, below 2^53.")
    return int(value)


# query parameter -> (ORM lookup, parser); spec "GET /v1/payments". Filters combine with AND.
LIST_FILTERS = {
    "status": ("status__in", _statuses),
    "currency": ("currency", _currency),
    "reference": ("reference", _reference),
    "customer": ("customer", _customer),
    "method_type": ("method_type", _method_type),
    "created[gte]": ("created__gte", _from_second),
    "created[lte]": ("created__lt", _after_second),
    "amount[gte]": ("amount__gte", _amount),
    "amount[lte]": ("amount__lte", _amount),
}


def parse_list_filters(params) -> dict:
    """Query parameters -> ORM filters; a bad value is 400 naming its parameter."""
    lookups = {}
    for name, (lookup, parse) in LIST_FILTERS.items():
        raw = params.get(name)
        if raw is None:
            continue
        try:
            lookups[lookup] = parse(raw)
        except ValueError as exc:
            raise ValidationFailed(f"{name}: {exc}", param=name) from exc
    return lookups
