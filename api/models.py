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


class RequestLogEntry(models.Model):
    """One `/v1` request of one merchant, as `GET /v1/request-logs` shows it (docs/request-log.md).

    Written in batches by a background thread (api.request_recorder.RequestLogWriter), never on the
    request's own path. Bodies are never kept; the path and the Idempotency-Key are kept in
    their redacted form (card-shaped and key-shaped strings masked).
    """

    id = models.CharField(primary_key=True, max_length=64, help_text="The request's X-Request-Id.")
    merchant_id = models.CharField(max_length=64)
    livemode = models.BooleanField()
    key_id = models.CharField(max_length=64)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=2048)
    status = models.SmallIntegerField()
    error_type = models.CharField(max_length=32, null=True, blank=True)
    error_code = models.CharField(max_length=64, null=True, blank=True)
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    replayed = models.BooleanField(default=False)
    # A replay's answer carries the original request's X-Request-Id, the id its client holds:
    # kept here so that id finds the replay too (docs/request-log.md "Replays"). Nullable:
    # adding it rewrites nothing.
    replay_of = models.CharField(max_length=64, null=True, blank=True)
    # What a test-mode failure profile injected in this answer ("error", "rate_limited"), if
    # it did. Nullable: adding it rewrites nothing (docs/production.md "Upgrading").
    injected = models.CharField(max_length=16, null=True, blank=True)
    api_version = models.CharField(max_length=16, null=True, blank=True)
    # On the last refused publishable-key request kept in its minute: how many more of that
    # minute were left out (docs/request-log.md "Refused publishable-key requests"). Nullable:
    # adding it rewrites nothing.
    omitted_after = models.PositiveIntegerField(null=True, blank=True)
    duration_ms = models.FloatField()
    created = models.DateTimeField()

    class Meta:
        verbose_name = "request log entry"
        verbose_name_plural = "request log"
        indexes = [
            models.Index(fields=["merchant_id", "livemode", "-id"], name="requestlog_list"),
            models.Index(
                fields=["merchant_id", "livemode", "idempotency_key"],
                condition=models.Q(idempotency_key__isnull=False),
                name="requestlog_idempotency_key",
            ),
            # `request_id=` finds the replays that carried it: a few rows, written only for them.
            models.Index(
                fields=["merchant_id", "livemode", "replay_of"],
                condition=models.Q(replay_of__isnull=False),
                name="requestlog_replay_of",
            ),
            # `status=4xx`, `5xx` or `402`: the few failed requests among a month of them,
            # not a walk of every entry (docs/data.md). Written only for failed requests.
            models.Index(
                fields=["merchant_id", "livemode", "-id"],
                condition=models.Q(status__gte=400),
                name="requestlog_errors",
            ),
        ]

    def __str__(self):
        return f"{self.method} {self.path} {self.status} ({self.id})"
