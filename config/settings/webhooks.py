"""Events' fan-out and webhook delivery (docs/webhooks.md)."""

import datetime
import ipaddress

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import env
from config.settings.broker import CELERY_BEAT_SCHEDULE, every
from config.settings.request_safety import WEB_THREADS

# Called by events.emit() inside the transaction that writes events (docs/webhooks.md).
EVENT_FAN_OUT_HOOKS: list[str] = ["webhooks.services.fan_out_in_transaction"]

# --- webhooks (docs/webhooks.md) -------------------------------------------------------------
# CIDRs exempt from the private-address rule (local receivers); a malformed one fails loudly.
WEBHOOK_ALLOWED_NETWORKS = [
    ipaddress.ip_network(cidr, strict=False)
    for cidr in env.list("WEBHOOK_ALLOWED_NETWORKS", default=[])
]
WEBHOOK_CA_BUNDLE = env.str("WEBHOOK_CA_BUNDLE", default="") or None  # None: system CAs
# Fernet keys for webhook secrets at rest, newest first; empty: derived from SECRET_KEY.
WEBHOOK_ENCRYPTION_KEYS = env.list("WEBHOOK_ENCRYPTION_KEYS", default=[])
# Events (with their deliveries and attempts) are deleted this long after their creation
# (docs/data.md "Retention"); the 72-hour retry window is the floor.
EVENT_RETENTION = datetime.timedelta(days=env.float("EVENT_RETENTION_DAYS", default=30))
if EVENT_RETENTION < datetime.timedelta(hours=72):
    raise ImproperlyConfigured("EVENT_RETENTION_DAYS must be at least 3 (the retry window).")
# The feed's long poll (GET /v1/events/feed?wait=, docs/events.md "The feed"): the longest
# wait, under the budget's hold (API_CONCURRENCY_HOLD_SECONDS), and how many requests of one
# web process may wait at once (a quarter of its threads); one more is answered at once.
EVENT_FEED_MAX_WAIT = env.int("EVENT_FEED_MAX_WAIT", default=20)
EVENT_FEED_WAITERS = env.int("EVENT_FEED_WAITERS", default=max(1, WEB_THREADS // 4))
if not 0 <= EVENT_FEED_MAX_WAIT <= 30 or EVENT_FEED_WAITERS < 0:
    raise ImproperlyConfigured(
        "EVENT_FEED_MAX_WAIT must be from 0 to 30 seconds, EVENT_FEED_WAITERS at least 0."
    )
CELERY_TASK_ROUTES = {
    # Housekeeping takes no delivery thread: an exact name wins over the pattern.
    "webhooks.tasks.purge_old_events": {"queue": "celery"},
    "webhooks.tasks.*": {"queue": "webhooks"},
}
# One merchant's endpoints of one mode (an account) may have at most this many attempts in
# flight at once, fleet-wide: with the Procfile's 16 threads per mode, a merchant whose
# endpoints all hang keeps a quarter of them free for everyone else (docs/webhooks.md
# "Fairness between merchants").
WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT = env.int("WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT", default=12)
if WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT < 1:
    raise ImproperlyConfigured("WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT must be at least 1.")
CELERY_BEAT_SCHEDULE.update(
    {
        # Due first attempts and retries (rows with next_attempt_at), and expired leases.
        "webhooks-deliver-due": every("webhooks.tasks.deliver_due", 1.0),
        "webhooks-purge-old-events": every("webhooks.tasks.purge_old_events", 3600.0),
        # Events whose after-commit nudge was lost (spec "Retries and dead letter" 3).
        "webhooks-sweep": every("webhooks.tasks.sweep_undispatched", 300.0),
    }
)

# --- webhooks: endpoint health and recovery (docs/webhooks.md "Endpoint health and recovery")
# A warning email after this long of consecutive failure, the endpoint disabled after the
# second (and never sooner than their gap after the warning), neither before MIN_FAILURES
# failures in a row: Svix disables after 5 days of failure, Stripe warns days before.
WEBHOOK_HEALTH_WARN_AFTER = datetime.timedelta(
    hours=env.float("WEBHOOK_HEALTH_WARN_AFTER_HOURS", default=72.0)
)
WEBHOOK_HEALTH_DISABLE_AFTER = datetime.timedelta(
    hours=env.float("WEBHOOK_HEALTH_DISABLE_AFTER_HOURS", default=120.0)
)
WEBHOOK_HEALTH_MIN_FAILURES = env.int("WEBHOOK_HEALTH_MIN_FAILURES", default=10)
if not datetime.timedelta(0) < WEBHOOK_HEALTH_WARN_AFTER < WEBHOOK_HEALTH_DISABLE_AFTER:
    raise ImproperlyConfigured(
        "WEBHOOK_HEALTH_WARN_AFTER_HOURS must be above 0 and below "
        "WEBHOOK_HEALTH_DISABLE_AFTER_HOURS."
    )
if WEBHOOK_HEALTH_MIN_FAILURES < 1:
    raise ImproperlyConfigured("WEBHOOK_HEALTH_MIN_FAILURES must be at least 1.")
# One email per endpoint and period lists its dead letters (no email per event).
WEBHOOK_DEAD_LETTER_DIGEST_SECONDS = env.float("WEBHOOK_DEAD_LETTER_DIGEST_SECONDS", default=3600.0)
if WEBHOOK_DEAD_LETTER_DIGEST_SECONDS < 60:
    raise ImproperlyConfigured("WEBHOOK_DEAD_LETTER_DIGEST_SECONDS must be at least 60.")
CELERY_BEAT_SCHEDULE["webhooks-dead-letter-digest"] = every(
    "webhooks.tasks.send_dead_letter_digests", WEBHOOK_DEAD_LETTER_DIGEST_SECONDS
)
# Recover requeues at most this many events per call; `has_more` says to call again.
WEBHOOK_RECOVER_MAX = env.int("WEBHOOK_RECOVER_MAX", default=500)
if WEBHOOK_RECOVER_MAX < 1:
    raise ImproperlyConfigured("WEBHOOK_RECOVER_MAX must be at least 1.")
# The function the fan-out asks for a test delivery's injected fault (webhooks.faults): the
# sandbox's failure profiles. Empty: none injected.
WEBHOOK_TEST_FAULTS = env.str("WEBHOOK_TEST_FAULTS", default="sandbox.profiles.webhook_faults")
