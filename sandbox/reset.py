"""Reset a merchant's test data (docs/sandbox.md "Reset"): its test-mode payments, refunds,
disputes, tokens, events, deliveries, attempts and stored idempotent answers deleted, and its
test webhook endpoints too if asked. Keys, live mode and other merchants are never read for
writing: every statement names the merchant and `livemode = false`.

Bounded and lock-light: payments go in batches, each batch one short transaction that locks
only the test payments it deletes (a live request never waits on it), children first. A
payment a connector call is in flight for (an operation `started`) is left for a later pass:
its apply would otherwise meet a missing row. Rows written while the reset runs are met by the
next pass; a run ends when a pass finds nothing left, or after `seconds` (the answer then says
`complete: false` and the caller calls again: every step is idempotent).

Why a payment's events are deleted with it, in its batch: a create writes the payment and its
events in one transaction, so once the payment is seen its events are too, and deleting them
together never leaves a payment without its events or an event without its payment.
"""

import time
from dataclasses import asdict, dataclass, field

from django.db import transaction
from django.db.models import Exists, OuterRef

from accounts.models import Merchant
from api.models import IdempotencyRecord
from events.models import Event
from infra import failpoints
from infra.retention import BATCH_SIZE, RUN_SECONDS
from payments.models import Dispute, Operation, Payment, Token
from refunds.models import Refund
from sandbox.models import ChallengeSession
from webhooks.models import Attempt, Delivery, WebhookEndpoint
from webhooks.services import endpoint_delete

# Reached after each batch of payments, outside its transaction: where a test makes requests
# race the reset (infra.failpoints; nothing is armed outside tests).
BATCH_DONE = "reset_batch_done"


@dataclass
class ResetResult:
    """What one reset run deleted, by kind; `complete` once nothing of test mode is left
    (but what a request in flight holds right now, counted in `in_flight`)."""

    deleted: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            (
                "payments",
                "refunds",
                "disputes",
                "tokens",
                "events",
                "deliveries",
                "attempts",
                "idempotency_keys",
                "webhook_endpoints",
            ),
            0,
        )
    )
    in_flight: int = 0
    complete: bool = False

    def add(self, kind: str, count: int) -> None:
        self.deleted[kind] += count

    def as_dict(self) -> dict:
        return {"object": "sandbox_reset", **asdict(self)}


def sandbox_reset(
    *,
    merchant: Merchant,
    webhook_endpoints: bool = False,
    batch: int = BATCH_SIZE,
    seconds: float = RUN_SECONDS,
) -> ResetResult:
    """Deletes `merchant`'s test data in bounded batches until none is left or `seconds` have
    passed; -> what was deleted and whether it is complete."""
    result, deadline = ResetResult(), time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = _payments_pass(merchant, result, batch, deadline)
        found += _unused_tokens_delete(merchant, result, batch)
        found += _loose_events_delete(merchant, result, batch)
        found += _idempotency_keys_delete(merchant, result, batch)
        if webhook_endpoints:
            found += _endpoints_delete(merchant, result)
        if not found:
            result.in_flight = _in_flight(merchant)
            result.complete = result.in_flight == 0
            break
    return result


def _gone(rows) -> int:
    """One DELETE of the queryset's rows, without loading them (infra.retention.delete_raw:
    every row referring to them is deleted before); -> how many."""
    return rows._raw_delete(rows.db) or 0  # None when the filter matches nothing by itself


def _test_payments(merchant: Merchant):
    return Payment.objects.filter(merchant=merchant, livemode=False)


def _idle_test_payments(merchant: Merchant):
    """Test payments with no connector call in flight (its operation's apply needs the row)."""
    started = Operation.objects.filter(payment_id=OuterRef("pk"), state=Operation.State.STARTED)
    return _test_payments(merchant).exclude(Exists(started))


def _payments_pass(merchant: Merchant, result: ResetResult, batch: int, deadline: float) -> int:
    """Idle test payments, a batch per transaction, until none is left or the deadline;
    -> how many were deleted."""
    deleted = 0
    while time.monotonic() < deadline:
        with transaction.atomic():
            ids = list(
                _idle_test_payments(merchant)
                .order_by("pk")
                .select_for_update(of=("self",))
                .values_list("pk", flat=True)[:batch]
            )
            if ids:
                _payments_delete(merchant, ids, result)
        failpoints.reach(BATCH_DONE)
        deleted += len(ids)
        if len(ids) < batch:
            break
    return deleted


def _payments_delete(merchant: Merchant, ids: list[str], result: ResetResult) -> None:
    """Deletes the locked payments `ids` with everything that refers to them, children first."""
    refund_ids = list(Refund.objects.filter(payment_id__in=ids).values_list("pk", flat=True))
    dispute_ids = list(Dispute.objects.filter(payment_id__in=ids).values_list("pk", flat=True))
    events = Event.objects.filter(
        merchant=merchant, livemode=False, resource_id__in=[*ids, *refund_ids, *dispute_ids]
    )
    _events_delete(list(events.values_list("pk", flat=True)), result)
    token_ids = list(
        Payment.objects.filter(pk__in=ids, token__isnull=False).values_list("token_id", flat=True)
    )
    _gone(Operation.objects.filter(payment_id__in=ids))
    _gone(ChallengeSession.objects.filter(payment_id__in=ids))
    result.add("refunds", _gone(Refund.objects.filter(pk__in=refund_ids)))
    result.add("disputes", _gone(Dispute.objects.filter(pk__in=dispute_ids)))
    result.add("payments", _gone(Payment.objects.filter(pk__in=ids)))
    result.add("tokens", _gone(Token.objects.filter(pk__in=token_ids)))


def _events_delete(ids: list[str], result: ResetResult) -> None:
    result.add("attempts", _gone(Attempt.objects.filter(event_id__in=ids)))
    result.add("deliveries", _gone(Delivery.objects.filter(event_id__in=ids)))
    result.add("events", _gone(Event.objects.filter(pk__in=ids)))


def _unused_tokens_delete(merchant: Merchant, result: ResetResult, batch: int) -> int:
    """Tokens no create has taken. The lock and `used_at IS NULL` re-checked after it keep a
    token a create is taking right now (its payment will refer to it); a create that comes
    after finds no token: 400 token_invalid, as for any unknown token."""
    unused = Token.objects.filter(merchant=merchant, livemode=False, used_at__isnull=True)
    with transaction.atomic():
        ids = list(
            unused.order_by("pk")
            .select_for_update(skip_locked=True)
            .values_list("pk", flat=True)[:batch]
        )
        result.add("tokens", _gone(Token.objects.filter(pk__in=ids)))
    return len(ids)


def _loose_events_delete(merchant: Merchant, result: ResetResult, batch: int) -> int:
    """Test events of no payment left (simulated webhooks, a deleted payment's stragglers). An
    event visible without its payment has none: a payment commits with its events."""
    resources = [
        Payment.objects.filter(pk=OuterRef("resource_id")),
        Refund.objects.filter(pk=OuterRef("resource_id")),
        Dispute.objects.filter(pk=OuterRef("resource_id")),
    ]
    loose = Event.objects.filter(merchant=merchant, livemode=False)
    for rows in resources:
        loose = loose.exclude(Exists(rows))
    ids = list(loose.order_by("pk").values_list("pk", flat=True)[:batch])
    with transaction.atomic():
        _events_delete(ids, result)
    return len(ids)


def _idempotency_keys_delete(merchant: Merchant, result: ResetResult, batch: int) -> int:
    """Stored answers of test requests (not those in flight): a replay would otherwise show a
    payment that no longer exists."""
    stored = IdempotencyRecord.objects.filter(
        merchant_id=merchant.pk, livemode=False, status__isnull=False
    )
    ids = list(stored.order_by("pk").values_list("pk", flat=True)[:batch])
    result.add("idempotency_keys", _gone(IdempotencyRecord.objects.filter(pk__in=ids)))
    return len(ids)


def _endpoints_delete(merchant: Merchant, result: ResetResult) -> int:
    """Test endpoints deleted as DELETE /v1/webhook_endpoints/:id deletes them (hidden, their
    waiting deliveries canceled), so the endpoint cache and workers see one rule."""
    endpoints = WebhookEndpoint.objects.filter(
        merchant=merchant, livemode=False, deleted_at__isnull=True
    )
    count = 0
    for endpoint in endpoints:
        endpoint_delete(endpoint=endpoint)
        count += 1
    result.add("webhook_endpoints", count)
    return count


def _in_flight(merchant: Merchant) -> int:
    """What a request holds right now and a later call deletes: busy payments, taken tokens
    whose payment is not written yet, idempotency keys still claimed."""
    taken = Token.objects.filter(
        merchant=merchant, livemode=False, used_at__isnull=False, payment__isnull=True
    )
    claimed = IdempotencyRecord.objects.filter(
        merchant_id=merchant.pk, livemode=False, status__isnull=True
    )
    return _test_payments(merchant).count() + taken.count() + claimed.count()


def sandbox_counts(*, merchant: Merchant) -> dict[str, int]:
    """What a reset would delete, by kind (a dry run; deliveries and attempts go with their
    events)."""
    test = {"merchant": merchant, "livemode": False}
    return {
        "payments": Payment.objects.filter(**test).count(),
        "refunds": Refund.objects.filter(**test).count(),
        "disputes": Dispute.objects.filter(**test).count(),
        "tokens": Token.objects.filter(**test).count(),
        "events": Event.objects.filter(**test).count(),
        "idempotency_keys": IdempotencyRecord.objects.filter(
            merchant_id=merchant.pk, livemode=False
        ).count(),
        "webhook_endpoints": WebhookEndpoint.objects.filter(
            **test, deleted_at__isnull=True
        ).count(),
    }
