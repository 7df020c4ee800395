"""The back office's login throttle (docs/back-office.md "Logging in"): django-axes, with two
limits where axes has one. A username from one address is locked after AXES_FAILURE_LIMIT
failures; one address, whatever usernames it tries, after ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT
(so a flood that rotates usernames stops too). A locked attempt is refused before any
password is hashed: it costs a few queries, not a PBKDF2 run.

Neither limit bounds a flood from many addresses (issue 35): each new address gets its own 20
attempts, each a full hash. So the hashes themselves are bounded: at most
ADMIN_LOGIN_CONCURRENCY password checks run at once in a process, and a sign-in that finds
them all taken is answered 503 at once, without hashing (`BoundedModelBackend`)."""

import threading

from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.db.models import Sum
from django.shortcuts import render


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


class SignInsBusy(Exception):
    """Every password-check slot of this process is taken: the sign-in is refused unhashed.
    Not a PermissionDenied, so Django's authenticate() lets it through without sending
    user_login_failed: axes does not count it against the username or the address."""


_slots: dict[int, threading.BoundedSemaphore] = {}
_slots_lock = threading.Lock()


def hash_slots() -> threading.BoundedSemaphore:
    """This process's password-check slots (one semaphore per configured size, so a test that
    changes the setting gets a fresh one)."""
    size = settings.ADMIN_LOGIN_CONCURRENCY
    with _slots_lock:
        return _slots.setdefault(size, threading.BoundedSemaphore(size))


class BoundedModelBackend(ModelBackend):
    """Django's ModelBackend with its password check (one PBKDF2 run, about 1 s of CPU, for a
    known or an unknown username alike) inside a slot. No waiting: a thread that waited for a
    slot would be a thread taken from the process all the same."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        slots = hash_slots()
        if not slots.acquire(blocking=False):
            raise SignInsBusy
        try:
            return super().authenticate(request, username=username, password=password, **kwargs)
        finally:
            slots.release()


class SignInsBusyMiddleware:
    """Turns SignInsBusy into the login page's 503 "too many sign-ins right now"."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, SignInsBusy):
            return None
        response = render(request, "admin/sign_ins_busy.html", status=503)
        response["Retry-After"] = "1"
        return response
