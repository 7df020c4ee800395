"""When a failing endpoint is warned about and when it is disabled (docs/webhooks.md "Endpoint
health and recovery"): arithmetic on its failure streak, no database.

The anchors: Svix disables an endpoint whose every attempt failed for 5 days, its clock
started only by several failures within a day; Stripe emails the owner after days of failure
and disables the endpoint if nothing changes. So: a warning after WEBHOOK_HEALTH_WARN_AFTER
of failure (3 days), the endpoint disabled after WEBHOOK_HEALTH_DISABLE_AFTER (5 days) but
never sooner than the gap between the two after its warning, and neither before
WEBHOOK_HEALTH_MIN_FAILURES failures in a row (one stray failure days after the last
delivery is not a failing endpoint)."""

import datetime
from typing import NamedTuple

from django.conf import settings

WARN = "warn"
DISABLE = "disable"


class Streak(NamedTuple):
    """An endpoint's failures in a row since its last delivered attempt, as just recorded."""

    consecutive_failures: int
    failing_since: datetime.datetime | None
    warned_at: datetime.datetime | None


def verdict(streak: Streak, now: datetime.datetime) -> str | None:
    """WARN (once a streak), DISABLE (after the warning's notice), or None."""
    if (
        streak.failing_since is None
        or streak.consecutive_failures < settings.WEBHOOK_HEALTH_MIN_FAILURES
    ):
        return None
    failing_for = now - streak.failing_since
    if streak.warned_at is None:
        return WARN if failing_for >= settings.WEBHOOK_HEALTH_WARN_AFTER else None
    notice = settings.WEBHOOK_HEALTH_DISABLE_AFTER - settings.WEBHOOK_HEALTH_WARN_AFTER
    if failing_for >= settings.WEBHOOK_HEALTH_DISABLE_AFTER and now - streak.warned_at >= notice:
        return DISABLE
    return None
