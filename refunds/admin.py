"""Support staff read refunds here, and on their payment's page (an inline added to the
payment admin from this room, since payments may not import refunds). Nothing is edited by
hand: refunds change only through refunds.services, which the payment page's Refund button
calls (docs/back-office.md)."""

from django import forms
from django.contrib import admin

from accounts.backoffice import ObjectAction
from payments.admin import AmountForm, PaymentAdmin, ReadOnlyAdmin, events_table, offered_for
from payments.models import Payment
from payments.states import Trigger
from refunds.models import Refund
from refunds.services import refund_create

REFUND_FIELDS = ("id", "status", "amount", "currency", "failure_code", "reason", "created")


@admin.register(Refund)
class RefundAdmin(ReadOnlyAdmin):
    list_display = ("id", "merchant", "payment", *REFUND_FIELDS[1:], "livemode")
    list_filter = ("status", "currency", "livemode")
    search_fields = ("=id", "=payment__id")
    list_select_related = ("merchant", "payment")
    show_full_result_count = False
    readonly_fields = ("events",)

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
    return f"Refund {made.id} of {made.amount} {made.currency}: {made.status}."


REFUND = ObjectAction(
    "refund", "Refund", "payments.refund_payment", refund, RefundForm, offered_for(Trigger.REFUND)
)

admin.site.unregister(Payment)


@admin.register(Payment)
class PaymentWithRefundsAdmin(PaymentAdmin):
    inlines = [*PaymentAdmin.inlines, RefundInline]
    object_actions = (REFUND, *PaymentAdmin.object_actions)
