from django.db import models


class IdempotencyRecord(models.Model):
    """One `Idempotency-Key` of one merchant in one mode (spec "Common rules" 1).

    The scope is plain values, not foreign keys: `api` sits below `accounts`. A record is
    in flight (`status` null) from its claim until the response is stored; `lease_until`
    bounds how long a crashed request can hold it (docs/request-safety.md).
    """

    merchant_id = models.CharField(max_length=64)
    livemode = models.BooleanField()
    # sha256 of the Idempotency-Key: a client may put anything in it, even a card number.
    key_hash = models.CharField(max_length=64)
    # sha256 of method, path and raw body: "same request" means the same bytes to the same URL.
    fingerprint = models.CharField(max_length=64)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=2048)  # card-shaped digits redacted; display only
    request_id = models.CharField(max_length=64, help_text="The first request's X-Request-Id.")
    # Who holds the claim: a request that lost it (lease expired, taken over) stores nothing.
    lease_token = models.CharField(max_length=64)
    lease_until = models.DateTimeField()
    status = models.PositiveSmallIntegerField(null=True, blank=True)
    content_type = models.CharField(max_length=255, blank=True)
    body = models.BinaryField(blank=True)
    created = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["merchant_id", "livemode", "key_hash"], name="idempotency_key_per_scope"
            )
        ]

    def __str__(self):
        return f"{self.method} {self.path} ({self.merchant_id})"

    @property
    def in_flight(self) -> bool:
        return self.status is None
