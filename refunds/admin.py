"""Support staff read refunds here, and on their payment's page (an inline, the Refund button
and the timeline, added to the payment's page through backoffice.extensions, since payments
may not import refunds). Nothing is edited by hand: refunds change only through
refunds.services, which the payment page's Refund button calls (docs/back-office.md)."""

from django import forms
from django.contrib import admin
from django.utils.html import format_html, format_html_join

from accounts.merchantfirst import MerchantFirstAdmin, merchant_name
from api.currencies import format_amount
from backoffice.extensions import AdminExtension, extend_admin
from backoffice.toolkit import (
    CappedPaginator,
    ObjectAction,
    ReadOnlyAdmin,
    admin_url,
    user_may,
    utc,
)
from payments.admin import AmountForm, CurrencyFilter, events_table, fees_line, offered_for
from payments.models import Payment
from payments.states import Trigger
from refunds.models import Refund
from refunds.services import refund_create
from refunds.timeline import Item, payment_timeline
from webhooks.admin import RESPONSE_EXCERPT, with_last_attempt
from webhooks.models import Delivery


@admin.display(description="amount", ordering="amount")
def refund_amount(refund: Refund) -> str:
    """In the currency's major units, as every amount in the back office (599 eur was shown)."""
    return format_amount(refund.amount, refund.currency)


REFUND_FIELDS = ("id", "status", refund_amount, "failure_code", "reason", "created")


@admin.register(Refund)
class RefundAdmin(MerchantFirstAdmin, ReadOnlyAdmin):
    list_display = (
        "id",
        merchant_name,
        "payment_ref",
        "status",
        refund_amount,
        "failure_code",
        "reason",
        "created",
        "livemode",
    )
    list_filter = ("status", CurrencyFilter, "livemode")
    search_fields = ("=id",)  # shows the box; get_search_results reads what was typed
    search_help_text = "A refund id (ref_…) or its payment's id (pay_…); exact."
    list_select_related = ("merchant", "payment")
    show_full_result_count = False
    paginator = CappedPaginator
    # Internal scheduling fields (due_at) stay off the page, as on the payment's.
    fields = (
        "id",
        "merchant",
        "livemode",
        "payment",
        "status",
        refund_amount,
        "reason",
        "failure_code",
        "fee_display",
        "metadata",
        "created",
        "events",
    )
    readonly_fields = (refund_amount, "fee_display", "events")

    def get_search_results(self, request, queryset, search_term):
        """One condition by the id's prefix: Django's OR across the payment's join read
        every refund (issue 22)."""
        term = search_term.strip()
        if not term:
            return queryset, False
        field = "payment_id" if term.startswith("pay_") else "pk"
        return queryset.filter(**{field: term}), False

    @admin.display(description="payment", ordering="payment")
    def payment_ref(self, refund: Refund):
        return refund.payment_id  # its id: the payment's title is long

    @admin.display(description="fee")
    def fee_display(self, refund: Refund):
        return fees_line(refund.fee)

    @admin.display(description="Events (oldest first)")
    def events(self, refund: Refund):
        return events_table(refund)


class RefundInline(admin.TabularInline):
    model = Refund
    fields = REFUND_FIELDS
    readonly_fields = REFUND_FIELDS
    extra = 0
    can_delete = False
    show_change_link = True
    ordering = ("id",)

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class RefundForm(AmountForm):
    reason = forms.CharField(required=False, max_length=200, help_text="Kept on the refund.")


def refund(request, payment: Payment, data) -> str:
    made = refund_create(payment=payment, amount=data["amount"], reason=data["reason"] or None)
    return f"Refund {made.id} of {format_amount(made.amount, made.currency)}: {made.status}."


REFUND = ObjectAction(
    "refund", "Refund", "payments.refund_payment", refund, RefundForm, offered_for(Trigger.REFUND)
)


def delivery_line(delivery: Delivery):
    retry = utc(delivery.next_attempt_at) if delivery.next_attempt_at else "none"
    return format_html(
        "<li>{} <code>{}</code>: <strong>{}</strong>, {} attempt(s), last HTTP {}, "
        "next retry {}{}</li>",
        delivery.endpoint_id,
        delivery.endpoint.url,
        delivery.status,
        delivery.attempt_count,
        delivery.last_status or "—",
        retry,
        format_html(" <q>{}</q>", (delivery.last_body or "")[:RESPONSE_EXCERPT])
        if delivery.last_body
        else "",
    )


def event_cells(event: dict, deliveries: list[Delivery], may_resend: bool):
    resend = (
        format_html(
            ' <a class="button" href="{}">Resend</a>',
            admin_url("events_event_resend", event["id"]),
        )
        if may_resend
        else ""
    )
    return format_html(
        '<a href="{}">{}</a></td><td>{} of {}<ul>{}</ul>{}',
        admin_url("events_event_change", event["id"]),
        event["id"],
        event["type"],
        event["data"]["object"].get("id"),
        format_html_join("", "{}", ((delivery_line(d),) for d in deliveries)) or "no delivery",
        resend,
    )


def request_cells(request: dict):
    error = request["error"]
    return format_html(
        "{}</td><td><code>{} {}</code> answered {}{}{}",
        request["id"],
        request["method"],
        request["path"],
        request["status"],
        format_html(" ({})", error["code"]) if error else "",
        format_html(", Idempotency-Key <code>{}</code>", request["idempotency_key"])
        if request["idempotency_key"]
        else "",
    )


def status_change_cells(change: dict):
    return format_html(
        "{}</td><td>{}: {} &rarr; <strong>{}</strong>",
        change["event"],
        change["resource"],
        change["from"] or "(new)",
        change["to"],
    )


def attempt_cells(attempt: dict):
    answer = attempt["error"] or attempt["response_body"][:RESPONSE_EXCERPT]
    return format_html(
        "{}</td><td>#{} of {} to {}: <strong>{}</strong>, HTTP {}{}",
        attempt["id"],
        attempt["attempt"],
        attempt["event"],
        attempt["endpoint"],
        attempt["status"],
        attempt["http_status"] or "none",
        format_html(" <q>{}</q>", answer) if answer else "",
    )


def item_row(item: Item, deliveries: dict[str, list[Delivery]], may_resend: bool):
    if item.type == "event":
        cells = event_cells(item.body, deliveries.get(item.id, []), may_resend)
    elif item.type == "request":
        cells = request_cells(item.body)
    elif item.type == "status_change":
        cells = status_change_cells(item.body)
    else:
        cells = attempt_cells(item.body)
    kind = item.type.replace("_", " ")
    return format_html("<tr><td>{}</td><td>{}</td><td>{}</td></tr>", utc(item.at), kind, cells)


def timeline_table(payment: Payment, *, may_resend: bool):
    """The payment's timeline as GET /v1/payments/:id/timeline tells it (refunds.timeline),
    one row per item, oldest first; an event's row adds its deliveries per endpoint and the
    Resend button."""
    items = payment_timeline(payment)
    deliveries = with_last_attempt(
        Delivery.objects.filter(event__in=[i.id for i in items if i.type == "event"])
        .select_related("endpoint")
        .order_by("endpoint_id")
    )
    by_event: dict[str, list[Delivery]] = {}
    for delivery in deliveries:
        by_event.setdefault(delivery.event_id, []).append(delivery)
    rows = format_html_join("", "{}", ((item_row(i, by_event, may_resend),) for i in items))
    return format_html(
        "<table><thead><tr><th>time</th><th>what</th><th>id</th><th>detail</th></tr></thead>"
        "<tbody>{}</tbody></table>",
        rows,
    )


def timeline_context(request, payment: Payment | None) -> dict:
    may_resend = user_may(request, "events.resend_event")
    return {"timeline": timeline_table(payment, may_resend=may_resend) if payment else ""}


# The events table gives way to the timeline, which also has the refunds' events, the
# requests, the status changes and the delivery attempts.
extend_admin(
    Payment,
    AdminExtension(
        inlines=(RefundInline,),
        object_actions=(REFUND,),
        hidden_fields=("events",),
        change_form_template="admin/payments/payment/timeline_change_form.html",
        context=timeline_context,
    ),
)
