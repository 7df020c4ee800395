"""The back office's login throttle (docs/back-office.md "Logging in"): django-axes, with two
limits where axes has one. A username from one address is locked after AXES_FAILURE_LIMIT
failures; one address, whatever usernames it tries, after ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT
(so a flood that rotates usernames stops too). A locked attempt is refused before any
password is hashed: it costs a few queries, not a PBKDF2 run."""

from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.db.models import Sum


def _failures(attempts) -> int:
    return attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0


class AdminLoginHandler(AxesDatabaseHandler):
    """AXES_LOCKOUT_PARAMETERS is [["username", "ip_address"], "ip_address"], in that order."""

    def get_failures(self, request, credentials=None) -> int:
        per_username, per_address = map(_failures, self.get_user_attempts(request, credentials))
        if per_address >= settings.ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT:
            # Axes compares this one figure with AXES_FAILURE_LIMIT everywhere it decides.
            return max(per_username, settings.AXES_FAILURE_LIMIT)
        return per_username
