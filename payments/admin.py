"""Support staff read payments here; nothing is edited by hand: status changes only through
payments.services, from the page's capture and cancel buttons (docs/back-office.md)."""

import json

from django import forms
from django.contrib import admin
from django.utils.html import format_html, format_html_join

from accounts.merchantfirst import (
    CreatedWindowFilter,
    MerchantFirstAdmin,
    ModeFilter,
    merchant_name,
)
from accounts.models import Merchant
from api.currencies import CURRENCY_EXPONENTS, AmountNotReadable, format_amount, parse_amount
from backoffice.extensions import AdminExtension, extend_admin
from backoffice.toolkit import (
    CappedPaginator,
    ConfirmForm,
    FixedChoicesFilter,
    ObjectAction,
    ReadOnlyAdmin,
    utc,
)
from payments.erasure import customer_erase, payments_of_customer
from payments.fees import InvalidSchedule, parse_schedule
from payments.methods import METHODS
from payments.models import Payment, Route
from payments.selectors import payment_search, resource_events
from payments.services import payment_cancel, payment_capture
from payments.states import Trigger, can


def shown_value(value) -> str:
    """A JSON value as a person reads it: no Python `None`, `True` or `False` on a page."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return json.dumps(value) if isinstance(value, dict | list) else str(value)


def small_table(mapping: dict | None):
    """A JSON object (the outcome) as a two-column table rather than one line of JSON."""
    if not mapping:
        return "—"
    rows = format_html_join(
        "",
        "<tr><th>{}</th><td>{}</td></tr>",
        ((key, shown_value(value)) for key, value in mapping.items()),
    )
    return format_html("<table>{}</table>", rows)


def fees_line(fees: dict | None) -> str:
    """ "2.90 EUR (mdr 2.00 EUR, fixed 0.90 EUR)": stored in minor units like every amount,
    read like the others on the page (a bare 290 reads as 290 euros)."""
    if not fees:
        return "—"
    currency = fees["currency"]
    parts = ", ".join(
        f"{name} {format_amount(value, currency)}" for name, value in fees["breakdown"].items()
    )
    return f"{format_amount(fees['amount'], currency)} ({parts})"


def card_line(card: dict | None) -> str:
    """ "visa •••• 4242 12/30, EE credit" """
    if not card:
        return "—"
    expiry = f"{card.get('exp_month', 0):02d}/{card.get('exp_year', 0) % 100:02d}"
    origin = " ".join(filter(None, (card.get("issuer_country"), card.get("funding"))))
    return f"{card.get('brand')} •••• {card.get('last4')} {expiry}, {origin}".strip(", ")


def events_table(resource):
    """The resource's events (id, type, time, previous attributes) as an HTML table."""
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
        (
            (
                event.id,
                event.type,
                utc(event.created),
                json.dumps(event.data.get("previous_attributes", {}), sort_keys=True),
            )
            for event in resource_events(resource)
        ),
    )
    return format_html(
        "<table><thead><tr><th>id</th><th>type</th><th>created</th>"
        "<th>previous attributes</th></tr></thead><tbody>{}</tbody></table>",
        rows,
    )


class CurrencyFilter(FixedChoicesFilter):
    title = parameter_name = "currency"
    choices_of = tuple(sorted(CURRENCY_EXPONENTS))


class MethodFilter(FixedChoicesFilter):
    title, parameter_name = "method", "method_type"
    choices_of = tuple(sorted(METHODS))


class AmountForm(ConfirmForm):
    """An amount typed as the page shows amounts, in the payment's currency's major units
    (5.99 EUR); the service gets minor units, as from the API. Blank means all."""

    amount = forms.CharField(required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        code, exponent = self.obj.currency.upper(), CURRENCY_EXPONENTS[self.obj.currency]
        field = self.fields["amount"]
        field.label = f"Amount ({code})"
        field.help_text = f"In {code}, a point for decimals ({exponent} at most); blank: all."

    def clean_amount(self) -> int | None:
        typed = self.cleaned_data["amount"]
        if not typed.strip():
            return None
        try:
            amount = parse_amount(typed, self.obj.currency)
        except AmountNotReadable as unreadable:
            raise forms.ValidationError(str(unreadable)) from unreadable
        if amount < 1:
            raise forms.ValidationError("Type more than zero, or leave it blank for all.")
        return amount


def offered_for(trigger: Trigger):
    return lambda payment: can(payment.status, trigger)


def capture(request, payment: Payment, data) -> str:
    captured = payment_capture(payment=payment, amount=data["amount"])
    return f"Captured {format_amount(captured.amount_captured, captured.currency)}."


def cancel(request, payment: Payment, data) -> str:
    payment_cancel(payment=payment)
    return "Canceled."


def erase_customer(request, payment: Payment, data) -> str:
    """An erasure request from the payment's page: this payment and every payment of that
    customer (its id, or its email in any case) at that merchant (docs/data.md "Erasure")."""
    erased = customer_erase(
        merchant_id=payment.merchant_id,
        customer_id=payment.customer,
        email=(payment.customer_details or {}).get("email"),
        payment_id=payment.pk,
        operator=request.user,
    )
    return f"Erased the customer's personal data from {len(erased)} payment(s)."


ERASE = ObjectAction(
    "erase-customer",
    "Erase customer data",
    "payments.erase_customer_data",
    erase_customer,
    offered=lambda payment: payments_of_customer(
        merchant_id=payment.merchant_id, payment_id=payment.pk
    ).exists(),
)
CAPTURE = ObjectAction(
    "capture",
    "Capture",
    "payments.capture_payment",
    capture,
    AmountForm,
    offered_for(Trigger.CAPTURE),
)
CANCEL = ObjectAction(
    "cancel", "Cancel", "payments.cancel_payment", cancel, offered=offered_for(Trigger.CANCEL)
)


@admin.register(Payment)
class PaymentAdmin(MerchantFirstAdmin, ReadOnlyAdmin):
    list_display = (
        "id",
        merchant_name,
        "status",
        "amount_display",
        "method_cell",
        "reference",
        "livemode",
        "created",
    )
    list_filter = (
        "status",
        CurrencyFilter,
        MethodFilter,
        ModeFilter,
        ("created", CreatedWindowFilter),
    )
    search_fields = ("=id",)  # shows the box; get_search_results reads what was typed
    search_help_text = (
        "An id (pay_…, cus_…), a customer's email, a card's last 4 digits, an amount with its "
        "decimal point (120.00) or a reference; exact matches."
    )
    list_select_related = ("merchant",)
    show_full_result_count = False  # no COUNT(*) over a large table on every page
    paginator = CappedPaginator
    # Internal scheduling fields (due_at) stay off the page: they are not the payment's story.
    fields = (
        "id",
        "merchant",
        "livemode",
        "status",
        "amount_display",
        "captured_display",
        "refunded_display",
        "reference",
        "description",
        "capture_method",
        "method_type",
        "card_display",
        "customer",
        "customer_details",
        "outcome_display",
        "fees_display",
        "metadata",
        "statement_descriptor",
        "created",
        "authorized_at",
        "captured_at",
        "canceled_at",
        "events",
    )
    readonly_fields = (
        "amount_display",
        "captured_display",
        "refunded_display",
        "card_display",
        "outcome_display",
        "fees_display",
        "events",
    )
    object_actions = (CAPTURE, CANCEL, ERASE)

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        return (queryset.filter(payment_search(term)) if term else queryset), False

    @admin.display(description="amount", ordering="amount")
    def amount_display(self, payment: Payment):
        return format_amount(payment.amount, payment.currency)

    @admin.display(description="method", ordering="method_type")
    def method_cell(self, payment: Payment):
        """The method, and a card's brand and last four below it: what a last4 search
        matched shows in the list."""
        card = payment.card
        if not card:
            return payment.method_type
        return format_html(
            "{}<br><small>{} •••• {}</small>",
            payment.method_type,
            card.get("brand"),
            card.get("last4"),
        )

    @admin.display(description="captured")
    def captured_display(self, payment: Payment):
        return format_amount(payment.amount_captured, payment.currency)

    @admin.display(description="refunded")
    def refunded_display(self, payment: Payment):
        return format_amount(payment.amount_refunded, payment.currency)

    @admin.display(description="card")
    def card_display(self, payment: Payment):
        return card_line(payment.card)

    @admin.display(description="outcome")
    def outcome_display(self, payment: Payment):
        return small_table(payment.outcome)

    @admin.display(description="fees")
    def fees_display(self, payment: Payment):
        return fees_line(payment.fees)

    @admin.display(description="Events (oldest first)")
    def events(self, payment: Payment):
        return events_table(payment)


class RouteInline(admin.TabularInline):
    """The merchant's live-mode routes (docs/methods.md "Routing"), edited on its page;
    added from here since accounts may not import payments. Each is checked on save by
    Route.clean, its connector's account rules included (docs/processors.md)."""

    model = Route
    fields = ("method_type", "currency", "connector", "account")
    extra = 0


class PricingChecked:
    """Mixed into the merchant page's form: the pricing schedule is checked when saved
    (payments.fees owns its shape), so a typo is a form error for the support agent, not a 500
    at the merchant's next payment."""

    def clean_pricing(self):
        pricing = self.cleaned_data["pricing"]
        try:
            parse_schedule(pricing)
        except InvalidSchedule as exc:
            raise forms.ValidationError(str(exc)) from exc
        return pricing


extend_admin(Merchant, AdminExtension(inlines=(RouteInline,), form_mixins=(PricingChecked,)))
