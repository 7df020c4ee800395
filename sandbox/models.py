import secrets

from django.db import models
from django.utils import timezone


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
