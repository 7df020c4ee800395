"""Live mode's records (docs/processors.md): the accounts we hold at processors, the link from
each of our objects to the processor's own, and the processor's events we have received.

Credentials are Fernet tokens (webhooks/crypto.py, the keys of WEBHOOK_ENCRYPTION_KEYS):
needed to call the processor and to check its signatures, so encrypted, never stored in
plain text, never shown again after entry and never logged."""

from django.db import models
from django.utils import timezone

from accounts.models import Merchant
from api.ids import PrefixedIdField
from webhooks.crypto import decrypt_secret, encrypt_secret


class ConnectorAccount(models.Model):
    """One set of credentials at one processor. Owned by one merchant (its own processor
    contract), or by the platform (`merchant` empty: any merchant's routes may name it)."""

    class Processor(models.TextChoices):
        STRIPE = "stripe", "Stripe"

    id = PrefixedIdField(prefix="cacct")
    processor = models.CharField(max_length=16, choices=Processor.choices)
    name = models.CharField(max_length=100, help_text="what support staff call it")
    merchant = models.ForeignKey(
        Merchant,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="connector_accounts",
        help_text="empty: the platform's account, which any merchant's routes may name",
    )
    secret_key_encrypted = models.TextField()
    publishable_key_encrypted = models.TextField()
    webhook_secret_encrypted = models.TextField(blank=True)
    # A rolled webhook secret stays valid until then, as at the processor (no lost events).
    previous_webhook_secret_encrypted = models.TextField(blank=True)
    previous_webhook_secret_expires_at = models.DateTimeField(null=True, blank=True)
    secret_key_last4 = models.CharField(max_length=4, blank=True)
    api_base = models.URLField(
        blank=True, help_text="empty: the processor's own API; an emulator's address in tests"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(default=timezone.now)
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        permissions = [
            ("set_credentials_connectoraccount", "Can set or rotate a connector account's keys"),
        ]

    def __str__(self):
        owner = self.merchant.name if self.merchant_id else "platform"
        return f"{self.name} ({self.get_processor_display()}, {owner}, {self.id})"

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def set_credentials(self, *, secret_key=None, publishable_key=None, webhook_secret=None):
        """Each given credential replaces the stored one (encrypted); the others stay."""
        if secret_key:
            self.secret_key_encrypted = encrypt_secret(secret_key)
            self.secret_key_last4 = secret_key[-4:]
        if publishable_key:
            self.publishable_key_encrypted = encrypt_secret(publishable_key)
        if webhook_secret:
            self.webhook_secret_encrypted = encrypt_secret(webhook_secret)
        self.updated = timezone.now()

    @property
    def secret_key(self) -> str:
        return decrypt_secret(self.secret_key_encrypted)

    @property
    def publishable_key(self) -> str:
        return decrypt_secret(self.publishable_key_encrypted)

    def webhook_secrets(self) -> list[str]:
        """The secrets a processor event's signature may be made with: the current one, and
        the previous one until it expires (rotation without lost events)."""
        secrets = [self.webhook_secret_encrypted]
        expires = self.previous_webhook_secret_expires_at
        if self.previous_webhook_secret_encrypted and expires and expires > timezone.now():
            secrets.append(self.previous_webhook_secret_encrypted)
        return [decrypt_secret(secret) for secret in secrets if secret]


class ProcessorObject(models.Model):
    """Which processor object stands behind one of ours: a payment's PaymentIntent, a
    refund's refund, a token's payment method, a dispute's dispute. Written by the connector
    as soon as the processor names its object, so a retry or a recovery finds it and never
    makes a second one."""

    class Kind(models.TextChoices):
        PAYMENT = "payment"
        REFUND = "refund"
        TOKEN = "token"
        DISPUTE = "dispute"

    account = models.ForeignKey(ConnectorAccount, on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    our_id = models.CharField(max_length=64, help_text="pay_, ref_, tok_ or dp_ id")
    processor_id = models.CharField(max_length=255, help_text="the processor's own id")
    # What else the processor named that we look things up by (a payment's charge id).
    extra = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "our_id"], name="processor_object_ours"),
            models.UniqueConstraint(
                fields=["account", "processor_id"], name="processor_object_theirs"
            ),
        ]

    def __str__(self):
        return f"{self.our_id} = {self.processor_id}"


class ProcessorEvent(models.Model):
    """An event a processor sent us, kept once by its id: a redelivery is acknowledged and
    changes nothing."""

    account = models.ForeignKey(ConnectorAccount, on_delete=models.PROTECT, related_name="+")
    event_id = models.CharField(max_length=255)
    type = models.CharField(max_length=100)
    object_id = models.CharField(max_length=255, blank=True)
    received = models.DateTimeField(default=timezone.now)
    # What applying it did, in a few words, for support ("payment pay_... resolved").
    result = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["account", "event_id"], name="processor_event_once")
        ]
        indexes = [models.Index(fields=["received"], name="processor_event_received")]

    def __str__(self):
        return f"{self.type} {self.event_id}"
