from django.conf import settings
from django.db import models
from django.utils import timezone

from api.ids import PrefixedIdField


def default_api_version() -> str:
    return settings.API_VERSION


class Merchant(models.Model):
    id = PrefixedIdField(prefix="mch")
    name = models.CharField(max_length=200)
    email = models.EmailField(help_text="The account owner: dead-letter emails go here.")
    # Per-transaction limit in minor units of the payment's currency; null = no limit set.
    transaction_limit = models.BigIntegerField(null=True, blank=True)
    # Pricing schedule for fees (shape owned by payments.fees); empty = the default schedule.
    pricing = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"{self.name} ({self.id})"


class ApiKey(models.Model):
    class Kind(models.TextChoices):
        SECRET = "secret"
        PUBLISHABLE = "publishable"

    id = PrefixedIdField(prefix="key")
    merchant = models.ForeignKey(Merchant, on_delete=models.PROTECT, related_name="api_keys")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    livemode = models.BooleanField()
    # HMAC-SHA256(pepper, key): the key itself is never stored and cannot be recovered.
    key_hash = models.CharField(max_length=64, unique=True)
    pepper_version = models.PositiveSmallIntegerField()
    prefix = models.CharField(max_length=16, help_text="e.g. svc_sk_test_")
    last4 = models.CharField(max_length=4)
    api_version = models.CharField(max_length=10, default=default_api_version)
    created = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"
        permissions = [("revoke_apikey", "Can revoke API keys")]

    def __str__(self):
        return f"{self.prefix}…{self.last4} ({self.id})"

    @property
    def mode(self) -> str:
        return "live" if self.livemode else "test"

    @property
    def is_secret(self) -> bool:
        return self.kind == self.Kind.SECRET
