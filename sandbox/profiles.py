"""Failure-injection profiles for test mode (docs/sandbox.md "Failure profiles"): a merchant's
share of test authorizations answered as the processor failing (502 `connector_http_error`,
nothing processed, safe to retry with the same Idempotency-Key), as rate-limited (429 with
`Retry-After`), or after added latency.

Honest and reproducible: the n-th authorization drawing from a profile takes the n-th point
of a golden-ratio (Weyl) sequence shifted by the profile's seed, a low-discrepancy sequence:
over any N draws each share is met to within a few draws (0.3 of 1,000 is 300 +- 2), where
coin flips would stray by +-15. The position is the profile's `draws` counter, moved by one
short locked update of the merchant's own profile row: no other merchant's row, nothing of
live mode. A payment carrying any `_svc_test_*` override is not drawn: the override wins.

Latency holds a web thread, so it is bounded as the `_svc_test_latency_ms` override is: at
most SANDBOX_LATENCY_CONCURRENCY waits per merchant at once, with no database connection held;
one more is refused (429, `Retry-After: 1`) before it waits (sandbox.latency).
"""

import datetime
import functools
import math
import operator
from enum import StrEnum

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from api.errors import ApiFailure, RateLimited, ServiceError
from api.request_recorder import INJECTED_HEADER
from infra import revision
from infra.revision import RevisionCache
from infra.rows import Columns, ModelRows
from sandbox import overrides
from sandbox.latency import simulated_wait
from sandbox.models import FailureProfile
from webhooks.faults import Fault
from webhooks.models import Delivery

GOLDEN = (math.sqrt(5) - 1) / 2
MARK = "(injected by the test-mode failure profile)"
SHARES = ("error_share", "rate_limit_share", "latency_share")
WEBHOOK_SHARES = ("duplicate_share", "delay_share")
WEBHOOK_KINDS = (Delivery.Injected.DUPLICATE, Delivery.Injected.DELAYED)
ZERO = datetime.timedelta(0)


class Injected(StrEnum):
    ERROR = "error"
    RATE_LIMITED = "rate_limited"
    LATENCY = "latency"


def injected_at(profile: FailureProfile, position: int) -> Injected | None:
    """What the profile injects at its `position`-th draw: the point's place in [0, 1) cut
    into the shares, in the order error, rate limit, latency."""
    return _cut(profile, position, dict(zip(Injected, SHARES, strict=True)))


def webhook_injected_at(profile: FailureProfile, position: int) -> str | None:
    """The same sequence for its test deliveries (a counter of their own): duplicate, delay."""
    return _cut(profile, position, dict(zip(WEBHOOK_KINDS, WEBHOOK_SHARES, strict=True)))


def _cut(profile: FailureProfile, position: int, shares: dict) -> str | None:
    point = math.fmod((position + profile.seed) * GOLDEN, 1.0)
    edge = 0.0
    for kind, name in shares.items():
        edge += getattr(profile, name)
        if point < edge:
            return kind
    return None


_PROFILE_ROWS = ModelRows(FailureProfile)
# (merchant id, SHARES or WEBHOOK_SHARES) -> whether its profile sets any of those shares
_draws_anything = RevisionCache("SANDBOX_PROFILE_CACHE", max_entries=4096)


def _may_draw(merchant_id: str, shares: tuple[str, ...], revision: int | None = None) -> bool:
    """Whether the merchant's profile sets any of `shares`, cached under the configuration
    revision: `revision` when the caller read it (the fan-out's), else the request's."""
    key = (merchant_id, shares)
    under, active = (
        _draws_anything.get(key) if revision is None else _draws_anything.get(key, revision)
    )
    if under is None:
        return True  # nothing is cached (SQLite, the setting off): the draw itself asks
    if active is None:
        any_share = functools.reduce(operator.or_, (Q(**{f"{name}__gt": 0}) for name in shares))
        active = FailureProfile.objects.filter(any_share, merchant_id=merchant_id).exists()
        _draws_anything.put(key, under, active)
    return active


def _drawn(counter: str, shares, merchant_id: str, count: int = 1) -> FailureProfile | None:
    """The merchant's profile with `counter` moved on by `count`, if any of `shares` is set:
    one UPDATE ... RETURNING (a merchant without such a profile pays one round trip that finds
    no row; concurrent draws take consecutive positions, the row's lock orders them)."""
    c = Columns(FailureProfile)
    active = " OR ".join(f"{getattr(c, name)} > 0" for name in shares)
    moved = getattr(c, counter)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {c.table} SET {moved} = {moved} + %s WHERE {c.merchant} = %s AND ({active}) "
            f"RETURNING {_PROFILE_ROWS.columns}",
            [count, merchant_id],
        )
        row = cursor.fetchone()
    return None if row is None else _PROFILE_ROWS.instance(row)


def webhook_faults(
    *, merchant_id: str, count: int, revision: int | None = None
) -> list[Fault | None]:
    """WEBHOOK_TEST_FAULTS: the faults of the merchant's next `count` test deliveries, drawn
    in the transaction writing their event (the profile's row, when its webhook shares are
    set, stays locked until that transaction ends). A merchant known to set no webhook share
    (cached as profile_draw's answer is, under the fan-out's `revision`) is not asked: no
    round trip."""
    if not _may_draw(merchant_id, WEBHOOK_SHARES, revision):
        return [None] * count
    profile = _drawn("webhook_draws", WEBHOOK_SHARES, merchant_id, count)
    if profile is None:
        return [None] * count
    first = profile.webhook_draws - count  # the positions before the move
    delay = datetime.timedelta(seconds=profile.delay_seconds)
    kinds = [webhook_injected_at(profile, first + n) for n in range(count)]
    return [
        Fault(kind, delay if kind == Delivery.Injected.DELAYED else ZERO) if kind else None
        for kind in kinds
    ]


def profile_draw(*, merchant_id: str) -> tuple[FailureProfile, Injected | None] | None:
    """The merchant's next draw (None: no active profile), in autocommit: the counter moves
    whether or not the authorization then goes ahead, as a processor's failures do not wait
    for the request to end well. A merchant known to have no active profile (cached under
    the configuration revision, which profile_set changes) is not asked: no round trip."""
    if not _may_draw(merchant_id, SHARES):
        return None
    profile = _drawn("draws", SHARES, merchant_id)
    if profile is None:
        return None
    return profile, injected_at(profile, profile.draws - 1)  # the position before the move


def has_override(metadata: dict) -> bool:
    return any(key in overrides.DESCRIPTIONS for key in metadata)


def profile_apply(payment) -> None:
    """Before a test authorization: the failure its merchant's profile injects, raised, or
    the latency it adds, waited. Nothing for a payment with its own override."""
    if has_override(payment.metadata):
        return
    drawn = profile_draw(merchant_id=payment.merchant_id)
    if drawn is None:
        return
    profile, injected = drawn
    if injected == Injected.LATENCY:
        simulated_wait(merchant_id=payment.merchant_id, milliseconds=profile.latency_ms)
    elif injected is not None:
        raise injected_error(injected)


def injected_error(injected: Injected) -> ServiceError:
    if injected == Injected.RATE_LIMITED:
        return RateLimited(
            f"The processor is rate limiting {MARK}; nothing was processed. Retry after the "
            "Retry-After seconds with the same Idempotency-Key.",
            headers={"Retry-After": "1", INJECTED_HEADER: injected},
        )
    error = ApiFailure(
        f"The processor answered with a server error {MARK}; nothing was processed. Retry "
        "with the same Idempotency-Key.",
        code="connector_http_error",
        headers={INJECTED_HEADER: injected},
    )
    error.status = 502
    return error


def profile_set(*, merchant, **values) -> FailureProfile:
    """The merchant's profile, created or replaced by `values` (validated by the caller);
    the sequence starts again from its first point."""
    with transaction.atomic():
        profile, _ = FailureProfile.objects.update_or_create(
            merchant=merchant,
            defaults={**values, "draws": 0, "webhook_draws": 0, "updated": timezone.now()},
        )
        revision.changed()  # _may_draw's cached answer for the merchant
    return profile


def profile_get(*, merchant) -> FailureProfile:
    """The merchant's profile, or the empty one (nothing injected) it has until it sets one."""
    return FailureProfile.objects.filter(merchant=merchant).first() or FailureProfile(
        merchant=merchant
    )


def profile_to_dict(profile: FailureProfile) -> dict:
    return {
        "object": "failure_profile",
        **{name: getattr(profile, name) for name in SHARES},
        "latency_ms": profile.latency_ms,
        **{name: getattr(profile, name) for name in WEBHOOK_SHARES},
        "delay_seconds": profile.delay_seconds,
        "seed": profile.seed,
        "draws": profile.draws,
        "webhook_draws": profile.webhook_draws,
        "livemode": False,
    }
