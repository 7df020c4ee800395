"""The admin login cannot be flooded or guessed (issue 20 item 1, docs/back-office.md "Logging
in"): a username is locked after a few failures from one address, an address after more, a
locked attempt hashes no password, and Django's password validators refuse weak passwords."""

import datetime as dt

import pytest
import time_machine
from django.contrib.auth.hashers import MD5PasswordHasher
from django.contrib.auth.models import User
from django.test import Client

PASSWORD = "a long and unlikely passphrase"
LOGIN = "/admin/login/?next=/admin/"


class CountingHasher(MD5PasswordHasher):
    """The suite's fast hasher, counting the hashes computed (Django runs one for an unknown
    username too, so that such an attempt takes as long as a wrong password)."""

    algorithm = "counting_md5"
    hashes = 0

    def encode(self, password, salt):
        CountingHasher.hashes += 1
        return super().encode(password, salt)


@pytest.fixture
def counted(settings):
    settings.PASSWORD_HASHERS = [f"{__name__}.CountingHasher"]
    CountingHasher.hashes = 0
    return CountingHasher


@pytest.fixture
def staff(db, counted):
    return User.objects.create_user("agent", password=PASSWORD, is_staff=True)


def log_in(username: str, password: str, address: str = "127.0.0.1"):
    return Client(REMOTE_ADDR=address).post(LOGIN, {"username": username, "password": password})


def logged_in(response) -> bool:
    return response.status_code == 302 and response["Location"] == "/admin/"


def test_the_right_password_logs_in(staff):
    assert logged_in(log_in("agent", PASSWORD))


def test_after_the_failure_limit_the_right_password_is_refused(staff, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert log_in("agent", "wrong").status_code == 200  # the form, with its error
    assert log_in("agent", "wrong").status_code == 429  # the failure that reaches the limit
    refused = log_in("agent", PASSWORD)
    assert refused.status_code == 429 and not logged_in(refused)
    assert "too many login attempts" in refused.content.decode()
    # Another address is not locked out by this one's failures.
    assert logged_in(log_in("agent", PASSWORD, address="127.0.0.2"))


def test_a_locked_attempt_hashes_no_password(staff, counted, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        log_in("agent", "wrong")
    before = counted.hashes
    for _ in range(20):
        assert log_in("agent", "wrong").status_code == 429
    assert log_in("nobody", "wrong").status_code == 200  # a new username from this address
    assert counted.hashes == before + 1  # only the new username's attempt was hashed


def test_an_address_rotating_usernames_is_locked_too(staff, counted, settings):
    for n in range(settings.ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT - 1):
        assert log_in(f"guess{n}", "wrong").status_code == 200
    assert log_in("guess-last", "wrong").status_code == 429
    before = counted.hashes
    assert log_in("agent", PASSWORD).status_code == 429
    assert log_in("guess-next", "wrong").status_code == 429
    assert counted.hashes == before
    assert logged_in(log_in("agent", PASSWORD, address="127.0.0.2"))


def test_the_lockout_ends_after_the_cool_off(staff, settings):
    start = dt.datetime(2026, 11, 24, 12, 0, tzinfo=dt.UTC)
    with time_machine.travel(start, tick=False):
        for _ in range(settings.AXES_FAILURE_LIMIT):
            log_in("agent", "wrong")
        assert log_in("agent", PASSWORD).status_code == 429
    with time_machine.travel(start + settings.AXES_COOLOFF_TIME - dt.timedelta(seconds=1)):
        assert log_in("agent", PASSWORD).status_code == 429
    with time_machine.travel(start + settings.AXES_COOLOFF_TIME + dt.timedelta(seconds=1)):
        assert logged_in(log_in("agent", PASSWORD))


@pytest.mark.parametrize("weak", ["a", "1", "12345678901234", "password1234", "agent-agent"])
def test_a_staff_user_cannot_change_their_password_to_a_weak_one(staff, weak):
    client = Client()
    client.force_login(staff)
    response = client.post(
        "/admin/password_change/",
        {"old_password": PASSWORD, "new_password1": weak, "new_password2": weak},
    )
    assert response.status_code == 200  # the form again, with the validators' errors
    assert "errorlist" in response.content.decode()
    staff.refresh_from_db()
    assert staff.check_password(PASSWORD)


def test_a_strong_password_is_accepted(staff):
    client = Client()
    client.force_login(staff)
    strong = "correct horse battery staple 77"
    response = client.post(
        "/admin/password_change/",
        {"old_password": PASSWORD, "new_password1": strong, "new_password2": strong},
    )
    assert response.status_code == 302
    staff.refresh_from_db()
    assert staff.check_password(strong)


@pytest.fixture
def checks(monkeypatch):
    """Counts User.check_password calls, the real method still running."""
    calls = []
    real = User.check_password

    def counting(self, raw_password):
        calls.append(self.username)
        return real(self, raw_password)

    monkeypatch.setattr(User, "check_password", counting)
    return calls


@pytest.fixture
def slots_taken(settings):
    """Every password-check slot of this process held, as a flood of sign-ins would hold them."""
    from accounts.loginlimits import hash_slots

    settings.ADMIN_LOGIN_CONCURRENCY = 2
    slots = hash_slots()
    for _ in range(2):
        assert slots.acquire(blocking=False)
    yield
    for _ in range(2):
        slots.release()


def test_a_sign_in_over_the_concurrency_bound_is_refused_unhashed(
    staff, counted, checks, slots_taken
):
    """Issue 35: a flood from many addresses, each under axes' limits, no longer buys a hash per
    attempt; the refusal is immediate and counts as no failure."""
    before = counted.hashes
    for username, address in (("agent", "10.0.0.1"), ("nobody", "10.0.0.2")):
        refused = log_in(username, PASSWORD, address=address)
        assert refused.status_code == 503 and refused["Retry-After"] == "1"
        assert "too many sign-ins right now" in refused.content.decode().lower()
    assert checks == [] and counted.hashes == before


def test_a_sign_in_under_the_bound_is_checked_and_frees_its_slot(staff, checks, settings):
    from accounts.loginlimits import hash_slots

    settings.ADMIN_LOGIN_CONCURRENCY = 1
    assert log_in("agent", "wrong").status_code == 200
    assert logged_in(log_in("agent", PASSWORD))
    assert checks == ["agent", "agent"]
    assert hash_slots().acquire(blocking=False)  # both attempts gave their slot back
    hash_slots().release()


def test_a_busy_refusal_counts_as_no_failure(staff, slots_taken, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT + 1):
        assert log_in("agent", "wrong").status_code == 503
    from axes.models import AccessAttempt

    assert not AccessAttempt.objects.exists()
