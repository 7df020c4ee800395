import secrets

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

SHARE = [MinValueValidator(0.0), MaxValueValidator(1.0)]
TOO_MUCH = "The shares add up to more than 1."
MAX_DELAY_SECONDS = 300  # a delayed test delivery's lateness: minutes, not a stalled sandbox


def new_session_id() -> str:
    return secrets.token_urlsafe(32)  # 256 random bits: the session id is the credential


class ChallengeSession(models.Model):
    """One simulated 3-D Secure challenge: single-use, for exactly one payment.

    `payment_id` is a plain column, not a foreign key: the simulator opens the session while
    authorising, before the payment row is committed.
    """

    id = models.CharField(primary_key=True, max_length=64, default=new_session_id, editable=False)
    payment_id = models.CharField(max_length=64, db_index=True)
    created = models.DateTimeField(default=timezone.now)
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"challenge for {self.payment_id}"


class FailureProfile(models.Model):
    """A merchant's test-mode failure-injection profile (docs/sandbox.md "Failure profiles"):
    the shares of its test authorizations answered as the processor failing (5xx), as
    rate-limited (429) or late. `draws` is how many authorizations have drawn from it: the
    position in its low-discrepancy sequence (sandbox.profiles)."""

    merchant = models.OneToOneField(
        "accounts.Merchant", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    error_share = models.FloatField(default=0.0, validators=SHARE)
    rate_limit_share = models.FloatField(default=0.0, validators=SHARE)
    latency_share = models.FloatField(default=0.0, validators=SHARE)
    latency_ms = models.PositiveIntegerField(default=0, validators=[MaxValueValidator(10_000)])
    # The webhook side (webhooks.faults): shares of its test deliveries sent twice, or first
    # sent `delay_seconds` late (which also reorders a resource's events).
    duplicate_share = models.FloatField(default=0.0, db_default=0.0, validators=SHARE)
    delay_share = models.FloatField(default=0.0, db_default=0.0, validators=SHARE)
    delay_seconds = models.PositiveIntegerField(
        default=0, db_default=0, validators=[MaxValueValidator(MAX_DELAY_SECONDS)]
    )
    seed = models.PositiveIntegerField(default=0)
    draws = models.BigIntegerField(default=0)
    webhook_draws = models.BigIntegerField(default=0, db_default=0)
    updated = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"failure profile of {self.merchant_id}"

    def clean(self):
        if self.error_share + self.rate_limit_share + self.latency_share > 1.0:
            raise ValidationError({"error_share": TOO_MUCH})
        if self.duplicate_share + self.delay_share > 1.0:
            raise ValidationError({"duplicate_share": TOO_MUCH})
