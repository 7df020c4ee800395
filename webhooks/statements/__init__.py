"""The statements every delivery runs (claim, claim of the next due one, the in-flight count,
the endpoints' load, the record), one module per database backend behind one interface:

- `claim(delivery_id, now, lease)` -> the delivery, leased until `lease`, with its event and
  endpoint loaded; None when it is not claimable;
- `claim_next(now, lease, livemode)` -> the same for the oldest claimable delivery of that
  mode whose endpoint and account (its merchant in that mode) both have a free place;
- `in_flight(delivery, now)` -> the `Load` (no nudges counted) of the delivery's endpoint and
  of its account, without the delivery's own lease;
- `loads(endpoint_ids, now)` -> {endpoint id: `Load`} for those with anything in flight or
  nudged;
- `record(attempt, status, now, lease)` -> stores the attempt, the delivery's new state, the
  endpoint's health counters (webhooks/health.py) and, the first time one of its event's
  deliveries dies, the event's dead letter, all only if the delivery is still leased until
  `lease` (the caller's claim); a `Recorded`, with the endpoint's failure streak.

`postgresql.py` writes each as one hand-written statement (every attempt runs three of them,
so their ORM compilation would cost more CPU than running them); `portable.py` is the ORM,
for the embedded SQLite and any other backend. Both pass the one contract test,
tests/webhooks/test_statements.py, which runs the portable module on PostgreSQL too.
"""

from django.db import connection

from webhooks.bulkhead import Load
from webhooks.statements import portable, postgresql


def backend():
    return postgresql if connection.vendor == "postgresql" else portable


def endpoint_loads(endpoint_ids: list[str], now) -> dict[str, Load]:
    """Load of each endpoint, in one statement (the fan-out runs it in every transaction that
    writes events for subscribed endpoints, the beat tick every second)."""
    loads = dict.fromkeys(endpoint_ids, Load())
    loads.update(backend().loads(endpoint_ids, now))
    return loads
