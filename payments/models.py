from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Lower
from django.utils import timezone

from accounts.models import Merchant
from api.currencies import CURRENCY_EXPONENTS, format_amount
from api.ids import PrefixedIdField
from payments.methods import find_method
from payments.states import Status


class Token(models.Model):
    """A single-use payment token (spec "Token object"), made by the sandbox tokenizer.

    Holds what may be kept of a card: never the number, never the security code.
    """

    class Type(models.TextChoices):
        CARD = "card"
        APPLE_PAY = "apple_pay"
        GOOGLE_PAY = "google_pay"

    id = PrefixedIdField(prefix="tok")
    # No index of its own: a token is read by its id (with its merchant), never by merchant.
    merchant = models.ForeignKey(
        Merchant, on_delete=models.PROTECT, related_name="tokens", db_index=False
    )
    livemode = models.BooleanField()
    type = models.CharField(max_length=16, choices=Type.choices)
    brand = models.CharField(max_length=16)
    last4 = models.CharField(max_length=4)
    bin = models.CharField(max_length=6)
    exp_month = models.PositiveSmallIntegerField()
    exp_year = models.PositiveSmallIntegerField()
    # Keyed hash of the number, stable per card per merchant (never reversible to the number).
    fingerprint = models.CharField(max_length=64)
    # What the connector will answer for this card, in its own words (opaque to payments).
    planned_outcome = models.CharField(max_length=80)
    created = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # The hourly purge of unused tokens reads only them, oldest first (docs/data.md).
            models.Index(
                fields=["expires_at"], condition=Q(used_at__isnull=True), name="token_unused"
            )
        ]

    def __str__(self):
        return f"{self.brand} •••• {self.last4} ({self.id})"


def empty_outcome() -> dict:
    return {
        "response_code": None,
        "decline_code": None,
        "decline_is_soft": None,
        "avs_result": None,
        "cvv_result": None,
        "three_ds": None,
        "sca_exemption": None,
        "risk_score": None,
        "risk_decision": None,
    }


class Payment(models.Model):
    """One charge, its whole life (spec "Payment object"). Status changes only through
    payments.services, which checks them against payments.states.TRANSITIONS."""

    class CaptureMethod(models.TextChoices):
        AUTOMATIC = "automatic"
        MANUAL = "manual"

    id = PrefixedIdField(prefix="pay")
    # No index of its own: payment_list leads with the merchant.
    merchant = models.ForeignKey(
        Merchant, on_delete=models.PROTECT, related_name="payments", db_index=False
    )
    livemode = models.BooleanField()
    status = models.CharField(max_length=24, choices=Status.choices)
    amount = models.BigIntegerField()
    amount_captured = models.BigIntegerField(default=0)
    amount_refunded = models.BigIntegerField(default=0)
    currency = models.CharField(max_length=3)
    reference = models.CharField(max_length=64)
    description = models.CharField(max_length=500, null=True, blank=True)
    capture_method = models.CharField(max_length=16, choices=CaptureMethod.choices)
    method_type = models.CharField(max_length=32)
    card = models.JSONField(null=True, blank=True, help_text="method.card")
    method_details = models.JSONField(default=dict, blank=True, help_text="method.details")
    customer = models.CharField(max_length=64, null=True, blank=True, help_text="cus_ id")
    # The customer object as the merchant sent it (email, name, phone, billing address).
    customer_details = models.JSONField(null=True, blank=True)
    outcome = models.JSONField(default=empty_outcome)
    fees = models.JSONField(null=True, blank=True)
    return_url = models.CharField(max_length=2048, null=True, blank=True)
    statement_descriptor = models.CharField(max_length=22, null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    next_action = models.JSONField(null=True, blank=True)
    token = models.OneToOneField(
        Token, on_delete=models.PROTECT, null=True, blank=True, related_name="payment"
    )
    created = models.DateTimeField(default=timezone.now)
    authorized_at = models.DateTimeField(null=True, blank=True)
    captured_at = models.DateTimeField(null=True, blank=True)
    canceled_at = models.DateTimeField(null=True, blank=True)
    # When time acts on the payment next: expiry of pending / requires_action / authorized, or
    # resolution of processing. Null when nothing is scheduled.
    due_at = models.DateTimeField(null=True, blank=True)
    # Test mode: seconds this payment's clock was moved forward (sandbox time travel); null
    # when never. Nullable and unchecked: adding it rewrites and scans nothing, and code of the
    # previous release still inserts payments (docs/production.md "Upgrading").
    clock_advanced_by = models.IntegerField(null=True, blank=True)
    # The X-Request-Id of the create: its timeline finds the request through it, sent with an
    # Idempotency-Key or without (refunds.timeline). Nullable: adding it rewrites nothing.
    request_id = models.CharField(max_length=64, null=True, blank=True)

    class Meta:
        permissions = [
            ("refund_payment", "Can refund payments"),
            ("capture_payment", "Can capture payments"),
            ("cancel_payment", "Can cancel payments"),
            ("erase_customer_data", "Can erase a customer's personal data"),
        ]
        indexes = [
            models.Index(fields=["merchant", "livemode", "-id"], name="payment_list"),
            # The list's filters (docs/data.md "Reads at scale"): a status, currency or method
            # the merchant has few payments in is found at once, not by walking all of them.
            models.Index(fields=["merchant", "livemode", "status", "-id"], name="payment_status"),
            models.Index(
                fields=["merchant", "livemode", "currency", "-id"], name="payment_currency"
            ),
            models.Index(
                fields=["merchant", "livemode", "method_type", "-id"], name="payment_method"
            ),
            models.Index(fields=["merchant", "livemode", "reference"], name="payment_reference"),
            models.Index(
                fields=["status", "due_at"], condition=Q(due_at__isnull=False), name="payment_due"
            ),
            # What support searches by and filters on, across merchants (docs/back-office.md
            # "Finding"); each is what one kind of search term reads, never a scan.
            models.Index(fields=["reference"], name="payment_reference_any"),
            models.Index(KeyTransform("last4", "card"), name="payment_card_last4"),
            models.Index(
                fields=["customer"], condition=Q(customer__isnull=False), name="payment_customer"
            ),
            # The previous release's exact-email search; dropped by a later release's contract
            # step, once no running release reads it (docs/production.md, upgrading).
            # Emails are typed by people, in any case (payments.selectors.customer_email).
            models.Index(
                Lower(KeyTextTransform("email", "customer_details")),
                name="payment_customer_email_ci",
            ),
            models.Index(fields=["amount"], name="payment_amount"),
        ]

    def __str__(self):
        """The admin's title: "pay_… captured 20.00 EUR of 40.00 EUR" when part was captured."""
        amount = format_amount(self.amount, self.currency)
        if 0 < self.amount_captured < self.amount:
            captured = format_amount(self.amount_captured, self.currency)
            return f"{self.id} {self.status} {captured} of {amount}"
        return f"{self.id} {self.status} {amount}"


TEST_CONNECTOR = "test"  # the connector test mode routes to; never reachable from live mode


class Route(models.Model):
    """One live-mode route of a merchant's account: the connector (a name in
    settings.PAYMENT_CONNECTORS) that serves a method in a currency (docs/methods.md
    "Routing"). Test mode needs none: the sandbox serves every catalogue method."""

    merchant = models.ForeignKey(Merchant, on_delete=models.CASCADE, related_name="routes")
    method_type = models.CharField(max_length=32, help_text="a wire method name")
    currency = models.CharField(max_length=3, help_text="lowercase ISO 4217")
    connector = models.CharField(max_length=64, help_text="a name in PAYMENT_CONNECTORS")
    account = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_default="",  # the previous release inserts routes without it
        help_text="the connector account (cacct_ id) whose credentials serve it, if its "
        "connector takes one (docs/processors.md)",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["merchant", "method_type", "currency"], name="route_unique"
            )
        ]

    def __str__(self):
        return f"{self.method_type} {self.currency} -> {self.connector}"

    def clean(self):
        method = find_method(self.method_type)
        problems = {}
        if method is None:
            problems["method_type"] = "Not a method of the catalogue (docs/methods.md)."
        elif self.currency not in CURRENCY_EXPONENTS or not method.serves(self.currency):
            problems["currency"] = f"{self.method_type} does not serve {self.currency!r}."
        if self.connector == TEST_CONNECTOR or self.connector not in settings.PAYMENT_CONNECTORS:
            problems["connector"] = "Not a live connector named in PAYMENT_CONNECTORS."
        elif not problems:
            # Late: payments.connectors reads this model.
            from payments.connectors import live_connector

            connector = live_connector(self.connector)
            if not connector.supports(method=method, currency=self.currency):
                problems["method_type"] = (
                    f"{self.connector} does not serve {self.method_type} in {self.currency} "
                    "(docs/processors.md)."
                )
            else:
                problems.update(connector.route_problems(self))
        if problems:
            raise ValidationError(problems)


class Operation(models.Model):
    """One call to a connector about a payment or one of its refunds (docs/payments.md
    "Connector operations"), recorded in a short transaction before the call is made.

    Its id is the connector's idempotency key: asking again with it (recovery, after the
    process died between the call and recording its answer) gets the same answer, never a
    second charge. While it is `started` the payment is busy: no other status change may
    begin, so exactly one caller reaches the connector.
    """

    class Kind(models.TextChoices):
        CREATE = "create"  # authorize while creating the payment
        CONFIRM = "confirm"  # authorize a pending payment
        PAYER_ACTION = "payer_action"
        RESOLVE = "resolve"
        CAPTURE = "capture"
        VOID = "void"
        REFUND = "refund"
        RESOLVE_REFUND = "resolve_refund"

    class State(models.TextChoices):
        STARTED = "started"  # recorded; the connector may or may not have answered
        APPLIED = "applied"  # the answer is written, with its events
        ABANDONED = "abandoned"  # the connector could not be asked: nothing was processed

    id = PrefixedIdField(prefix="op")
    # Plain columns, not foreign keys: a create's payment (and a refund) is inserted only
    # with the connector's answer, after its operation.
    payment_id = models.CharField(max_length=64)
    refund_id = models.CharField(max_length=64, null=True, blank=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.STARTED)
    # What is asked, enough to ask again and apply the answer without the original request.
    request = models.JSONField(default=dict)
    api_version = models.CharField(max_length=32, null=True, blank=True)
    # The Idempotency-Key claim (api.IdempotencyRecord) of the request that started it: a
    # retry of that request resumes this operation instead of running again.
    idempotency_record_id = models.BigIntegerField(null=True, blank=True)
    created = models.DateTimeField(default=timezone.now)
    # Recovery could not ask the connector (it was down): not asked again before this
    # (payments.operations.ask_again_at); null: as soon as it is stale.
    retry_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # The backstop of the busy check: one operation in flight per payment.
            models.UniqueConstraint(
                fields=["payment_id"],
                condition=Q(state="started"),
                name="operation_one_started_per_payment",
            )
        ]
        indexes = [
            models.Index(
                fields=["created"], condition=Q(state="started"), name="operation_started"
            ),
            # A retry of a request that died mid-operation finds its operation by its claim.
            models.Index(
                fields=["idempotency_record_id"],
                condition=Q(idempotency_record_id__isnull=False),
                name="operation_claim",
            ),
        ]

    def __str__(self):
        return f"{self.id} {self.kind} {self.payment_id} {self.state}"


class Dispute(models.Model):
    """A chargeback the processor reported against a captured payment (docs/processors.md
    "Disputes"). Written by payments.disputes only, with its payment's move to `disputed`."""

    class Status(models.TextChoices):
        NEEDS_RESPONSE = "needs_response"
        UNDER_REVIEW = "under_review"
        WON = "won"
        LOST = "lost"

    id = PrefixedIdField(prefix="dp")
    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="disputes")
    livemode = models.BooleanField()
    payment = models.ForeignKey(Payment, on_delete=models.PROTECT, related_name="disputes")
    amount = models.BigIntegerField()
    currency = models.CharField(max_length=3)
    # The processor's word for why (Stripe's `reason`: fraudulent, product_not_received...).
    reason = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices)
    created = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"{self.id} {self.status} {format_amount(self.amount, self.currency)}"
