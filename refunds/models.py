from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Merchant
from api.currencies import format_amount
from api.ids import PrefixedIdField
from payments.models import Payment
from refunds.states import RefundStatus


class Refund(models.Model):
    """Money given back against a captured payment (spec "Refund object"). Status changes
    only through refunds.services, under the payment's row lock."""

    id = PrefixedIdField(prefix="ref")
    # Indexed by refund_merchant, which leads with it.
    merchant = models.ForeignKey(
        Merchant, on_delete=models.PROTECT, related_name="refunds", db_index=False
    )
    livemode = models.BooleanField()
    payment = models.ForeignKey(Payment, on_delete=models.PROTECT, related_name="refunds")
    amount = models.BigIntegerField()
    currency = models.CharField(max_length=3)
    status = models.CharField(max_length=16, choices=RefundStatus.choices)
    reason = models.CharField(max_length=200, null=True, blank=True)
    failure_code = models.CharField(max_length=40, null=True, blank=True)
    fee = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(default=timezone.now)
    # When a pending refund is asked about again; null once it has settled.
    due_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["due_at"], condition=Q(due_at__isnull=False), name="refund_due"),
            # The back office's list of a merchant's refunds, newest first, with its filters.
            models.Index(fields=["merchant", "-id"], name="refund_merchant"),
            models.Index(fields=["merchant", "status", "-id"], name="refund_merchant_status"),
            models.Index(fields=["merchant", "currency", "-id"], name="refund_merchant_currency"),
        ]

    def __str__(self):
        return f"{self.id} {self.status} {format_amount(self.amount, self.currency)}"
