"""The bulkhead's arithmetic: leases, an endpoint's places, and how many nudges it is worth
(docs/webhooks.md "Bulkhead", "Nudges"). No database access: the numbers come from
webhooks/statements."""

import datetime
from typing import NamedTuple

from webhooks import transport
from webhooks.streaks import Streak

# Longer than one attempt can take (URL check + the 10 s deadline), so a live attempt is never
# taken over; short enough that a crashed worker's delivery is retried within about a minute.
LEASE = datetime.timedelta(seconds=60)
# How long a nudge may sit in the broker before the beat tick assumes it lost and sends another.
ENQUEUED_GRACE = datetime.timedelta(seconds=30)
# One endpoint may tie up at most this many workers at once (half the Procfile's 16 delivery
# threads), so a receiver that makes every attempt wait out the 10 s deadline cannot take them
# all, and deliveries to healthy endpoints keep flowing. Its other due deliveries wait, without
# an attempt and without a nudge: until one of its places frees up when the endpoint is merely
# busy, for the timeout when its attempts hang.
MAX_IN_FLIGHT_PER_ENDPOINT = 8
SLOW_ATTEMPT = datetime.timedelta(seconds=1)
STUCK_ENDPOINT_BACKOFF = datetime.timedelta(seconds=transport.TIMEOUT_SECONDS)


class Load(NamedTuple):
    """An endpoint's attempts in flight (leases live, the oldest ending at `oldest_lease`) and
    its due deliveries with a nudge waiting in the broker."""

    in_flight: int = 0
    oldest_lease: datetime.datetime | None = None
    nudged: int = 0

    def hanging(self, now) -> bool:
        """All of its places are taken, the oldest for over a second: its receiver is slow
        or dead, not merely busy."""
        return (
            self.in_flight >= MAX_IN_FLIGHT_PER_ENDPOINT
            and now - (self.oldest_lease - LEASE) > SLOW_ATTEMPT
        )

    def nudges_wanted(self) -> int:
        """Free places not yet spoken for by a nudge. A thread whose attempt ends claims the
        endpoint's next due delivery itself (deliveries_drain), so a full endpoint needs none."""
        return max(0, MAX_IN_FLIGHT_PER_ENDPOINT - self.in_flight - self.nudged)


class Recorded(NamedTuple):
    """What recording an attempt did: `stored` is False when the caller's lease on the
    delivery had run out and been taken over (nothing was written: the new holder records its
    own attempt of that number); `streak`, the endpoint's failure streak as it now stands
    (webhooks/streaks.py), when stored."""

    stored: bool
    streak: Streak | None = None


def allot(candidates: list[tuple[str, str]], loads: dict[str, Load]) -> list[str]:
    """Of (delivery id, endpoint id) pairs, oldest first, those worth a nudge."""
    wanted = {endpoint_id: load.nudges_wanted() for endpoint_id, load in loads.items()}
    allotted = []
    for delivery_id, endpoint_id in candidates:
        if wanted[endpoint_id] > 0:
            wanted[endpoint_id] -= 1
            allotted.append(delivery_id)
    return allotted
