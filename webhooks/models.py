"""Webhook endpoints, deliveries (one per event and endpoint: the outbox's unit of work) and
the attempts made for them (spec "Webhook endpoint object", "Webhook attempt object")."""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Merchant
from api.ids import PrefixedIdField
from events.models import Event


class WebhookEndpoint(models.Model):
    id = PrefixedIdField(prefix="whe")
    merchant = models.ForeignKey(
        Merchant, on_delete=models.PROTECT, related_name="webhook_endpoints"
    )
    livemode = models.BooleanField()
    url = models.CharField(max_length=2048)
    description = models.CharField(max_length=200, null=True, blank=True)
    enabled_events = models.JSONField(default=list)
    # Fernet tokens (webhooks/crypto.py): the secret is needed to sign, so it is encrypted,
    # never stored in plain text and never logged.
    secret_encrypted = models.TextField()
    secret_last4 = models.CharField(max_length=4)
    previous_secret_encrypted = models.TextField(null=True, blank=True)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(default=timezone.now)
    # DELETE disables and hides the endpoint; the row stays so attempt history keeps its endpoint.
    deleted_at = models.DateTimeField(null=True, blank=True)
    # Disabled after sustained failure (webhooks/health.py): still listed, status `disabled`,
    # sent nothing until re-enabled (docs/webhooks.md "Endpoint health and recovery").
    disabled_at = models.DateTimeField(null=True, blank=True)
    # Paused by its merchant: its deliveries are kept (held) and none is attempted, so no
    # failure is counted, until it is resumed (docs/webhooks.md "Pause and resume").
    paused_at = models.DateTimeField(null=True, blank=True)
    # Per-resource ordered delivery (docs/webhooks.md "Ordering"): a resource's event waits
    # (status `blocked`) until its earlier ones were delivered or dead-lettered.
    ordered_delivery = models.BooleanField(default=False, db_default=False)

    class Meta:
        indexes = [
            models.Index(
                fields=["merchant", "livemode", "-id"],
                condition=Q(deleted_at__isnull=True),
                name="endpoint_enabled",
            )
        ]
        permissions = [
            ("enable_webhookendpoint", "Can re-enable webhook endpoints"),
            ("recover_webhookendpoint", "Can recover webhook endpoints' failed events"),
            ("pause_webhookendpoint", "Can pause and resume webhook endpoints"),
        ]

    def __str__(self):
        return f"{self.url} ({self.id})"

    @property
    def status(self) -> str:
        if self.deleted_at is not None or self.disabled_at is not None:
            return "disabled"
        return "paused" if self.paused_at is not None else "enabled"


class DeliveryQuerySet(models.QuerySet):
    """The conditions of the delivery lifecycle, written once for the ORM (their SQL twins
    are in webhooks/statements/postgresql.py, held to the same contract by a shared test)."""

    def waiting(self, now):
        """Pending and not leased: no attempt is being made right now."""
        return self.filter(status=Delivery.Status.PENDING).filter(
            Q(claimed_until__isnull=True) | Q(claimed_until__lte=now)
        )

    def claimable(self, now):
        """Waiting, and due."""
        return self.waiting(now).filter(next_attempt_at__lte=now)

    def in_flight(self, now):
        """Leased: a worker is making an attempt right now."""
        return self.filter(status=Delivery.Status.PENDING, claimed_until__gt=now)


class Delivery(models.Model):
    """The work of getting one event to one endpoint. `next_attempt_at` is when it is next due
    (null once finished); `claimed_until` is the lease of the worker trying it now, so a worker
    that dies mid-delivery only delays the delivery until the lease ends."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        DEAD_LETTERED = "dead_lettered"
        CANCELED = "canceled"  # the endpoint was deleted before the event got through
        # Its endpoint was disabled while it waited: kept, not retried, until a re-enable or a
        # recover makes it due again (docs/webhooks.md "Endpoint health and recovery").
        HELD = "held"
        # Ordered delivery: an earlier event of its resource is still on its way to the
        # endpoint; released (pending, due now) once that one is delivered or dead-lettered.
        BLOCKED = "blocked"

    class Injected(models.TextChoices):
        """A test-mode failure profile's fault (webhooks.faults): sent twice, or first due later."""

        DUPLICATE = "duplicate"
        DELAYED = "delayed"

    id = PrefixedIdField(prefix="whd")
    # No index of its own: one_delivery_per_endpoint leads with the event.
    event = models.ForeignKey(
        Event, on_delete=models.PROTECT, related_name="deliveries", db_index=False
    )
    # No index of its own: delivery_endpoint_list leads with the endpoint.
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.PROTECT, related_name="deliveries", db_index=False
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempt_count = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    # A nudge for it sits in the broker until about then: the beat tick does not add another
    # while a backlog drains, and re-sends one if that nudge was lost.
    enqueued_until = models.DateTimeField(null=True, blank=True)
    injected = models.CharField(
        max_length=16, choices=Injected.choices, blank=True, default="", db_default=""
    )
    created = models.DateTimeField(default=timezone.now)

    objects = DeliveryQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "deliveries"
        constraints = [
            models.UniqueConstraint(fields=["event", "endpoint"], name="one_delivery_per_endpoint")
        ]
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(status="pending"),
                name="delivery_due",
            ),
            models.Index(
                fields=["endpoint", "claimed_until"],
                condition=Q(status="pending"),
                name="delivery_in_flight",
            ),
            # The leases and nudges live now, of all endpoints (the claim of the next due
            # delivery skips full endpoints) or of some, are range reads of small indexes,
            # whatever the backlog: a dead endpoint may have days of deliveries waiting.
            models.Index(
                fields=["claimed_until"],
                condition=Q(status="pending", claimed_until__isnull=False),
                name="delivery_leased",
            ),
            models.Index(
                fields=["endpoint", "enqueued_until"],
                condition=Q(status="pending", enqueued_until__isnull=False),
                name="delivery_nudged",
            ),
            # Recover's bounded read of one endpoint's failed deliveries, by event id (time
            # ordered), never its delivered history.
            models.Index(
                fields=["endpoint", "event"],
                condition=Q(status__in=["pending", "dead_lettered", "held"]),
                name="delivery_recoverable",
            ),
            # An endpoint's deliveries newest first (the admin's list of an endpoint or a
            # merchant, and its capped count), never a sort of them all.
            models.Index(fields=["endpoint", "-id"], name="delivery_endpoint_list"),
            # ... and of one status (the admin's filter), newest first.
            models.Index(fields=["endpoint", "status", "-id"], name="delivery_endpoint_status"),
            # Ordered delivery's waiting rows, which the beat tick checks for release.
            models.Index(
                fields=["endpoint"], condition=Q(status="blocked"), name="delivery_blocked"
            ),
            # Dead letters (the admin's list, requeue_dead_letters): a few among millions.
            models.Index(
                fields=["event", "endpoint"],
                condition=Q(status="dead_lettered"),
                name="delivery_dead_letter",
            ),
        ]

    def __str__(self):
        return f"{self.event_id} -> {self.endpoint_id} ({self.status})"


class Attempt(models.Model):
    class Status(models.TextChoices):
        DELIVERED = "delivered"
        FAILED = "failed"

    id = PrefixedIdField(prefix="wha")
    # No index of its own: attempt_numbers_unique leads with the delivery.
    delivery = models.ForeignKey(
        Delivery, on_delete=models.PROTECT, related_name="attempts", db_index=False
    )
    event = models.ForeignKey(Event, on_delete=models.PROTECT, related_name="attempts")
    # No index of its own: attempt_endpoint_recent leads with the endpoint.
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.PROTECT, related_name="attempts", db_index=False
    )
    attempt = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices)
    # 0: no response was received (`error` says why); the spec's attempt has an integer here.
    # 0 when no response came (webhooks.attempts.NO_RESPONSE); attempts stored before
    # 2026-11-25 hold null there, which the API shows as 0 (no table rewrite on upgrade).
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.TextField(blank=True, default="")
    error = models.TextField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField()
    next_retry_at = models.DateTimeField(null=True, blank=True)
    attempted_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["delivery", "attempt"], name="attempt_numbers_unique")
        ]
        # An endpoint's latest attempts (its health in the admin), without sorting them all.
        indexes = [
            models.Index(fields=["endpoint", "-attempted_at"], name="attempt_endpoint_recent")
        ]

    def __str__(self):
        return f"{self.id} #{self.attempt} {self.status}"


class DeadLetter(Delivery):
    """Deliveries that ran out of retries, as the admin's dead-letter view lists them."""

    class Meta:
        proxy = True
        verbose_name = "dead letter"
        permissions = [("requeue_deadletter", "Can requeue dead letters")]


class EndpointHealth(models.Model):
    """An endpoint's delivery health, kept up to date by the statement that records each
    attempt (webhooks/statements), so reading it costs one row, never a scan of attempts."""

    endpoint = models.OneToOneField(
        WebhookEndpoint, on_delete=models.CASCADE, primary_key=True, related_name="health"
    )
    consecutive_failures = models.PositiveIntegerField(default=0)
    failing_since = models.DateTimeField(null=True, blank=True)  # first failure of the streak
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_failure_at = models.DateTimeField(null=True, blank=True)
    last_failure_http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_failure_error = models.TextField(null=True, blank=True)
    warned_at = models.DateTimeField(null=True, blank=True)  # the streak's warning email
    # Dead letters not yet in a digest email, and when the last digest went.
    undigested_dead_letters = models.PositiveIntegerField(default=0)
    digested_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "endpoint health"
        indexes = [
            models.Index(
                fields=["endpoint"],
                condition=Q(undigested_dead_letters__gt=0),
                name="health_digest_due",
            )
        ]

    def __str__(self):
        return f"{self.endpoint_id}: {self.consecutive_failures} failures in a row"


class HealthBucket(models.Model):
    """Attempts of one endpoint in one BUCKET-long slice of time: the success rates over the
    last hour and day sum at most a day's worth of these rows."""

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    starts = models.DateTimeField()
    delivered = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "starts"], name="one_bucket_per_slice")
        ]
        indexes = [models.Index(fields=["starts"], name="health_bucket_starts")]

    def __str__(self):
        return f"{self.endpoint_id} {self.starts}: {self.delivered}/{self.delivered + self.failed}"


class StatusChange(models.Model):
    """The operational record of an endpoint's health actions (warned, disabled, re-enabled,
    recovered), who did it and why: shown on its admin page and logged."""

    class Action(models.TextChoices):
        WARNED = "warned"
        DISABLED = "disabled"
        ENABLED = "enabled"
        RECOVERED = "recovered"
        PAUSED = "paused"
        RESUMED = "resumed"
        UPDATED = "updated"

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="status_changes"
    )
    action = models.CharField(max_length=16, choices=Action.choices)
    actor = models.CharField(max_length=150)  # "system", "api", "staff:<username>", "command"
    detail = models.TextField(blank=True, default="")
    at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"{self.endpoint_id} {self.action} by {self.actor}"
