"""Staff sign-in hardened (issue 35 medium 4, docs/back-office.md "Second factor"): a staff
member with a confirmed TOTP device (django-otp) must give its current code; with
ADMIN_REQUIRE_2FA on, one without a device cannot sign in at all."""

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django_otp.oath import totp
from django_otp.plugins.otp_totp.models import TOTPDevice

PASSWORD = "a long and unlikely passphrase"
LOGIN = "/admin/login/?next=/admin/"


@pytest.fixture
def staff(db):
    return User.objects.create_user("agent", password=PASSWORD, is_staff=True)


@pytest.fixture
def device(staff):
    return TOTPDevice.objects.create(user=staff, name="phone", confirmed=True)


def code(device) -> str:
    now = totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits)
    return str(now).zfill(device.digits)


def log_in(client: Client, **extra):
    return client.post(LOGIN, {"username": "agent", "password": PASSWORD, **extra})


def logged_in(response) -> bool:
    return response.status_code == 302 and response["Location"] == "/admin/"


def test_a_staff_member_with_a_device_must_give_its_code(device):
    client = Client()
    refused = log_in(client)
    assert refused.status_code == 200 and not logged_in(refused)
    assert "6-digit code" in refused.content.decode()
    assert client.get("/admin/").status_code == 302  # still the login page


def test_the_right_code_signs_in_and_the_session_is_verified(device):
    client = Client()
    assert logged_in(log_in(client, otp_token=code(device)))
    assert client.get("/admin/").status_code == 200


def test_a_wrong_code_is_refused(device):
    wrong = str((int(code(device)) + 1) % 10**6).zfill(6)
    refused = log_in(Client(), otp_token=wrong)
    assert refused.status_code == 200 and not logged_in(refused)


def test_without_a_device_the_password_is_enough_unless_required(staff, settings):
    assert logged_in(log_in(Client()))
    settings.ADMIN_REQUIRE_2FA = True
    refused = log_in(Client())
    assert refused.status_code == 200 and "no second factor yet" in refused.content.decode()


def test_when_required_an_unverified_session_is_not_admitted(staff, settings):
    settings.ADMIN_REQUIRE_2FA = True
    client = Client()
    client.force_login(staff)  # a session made without the form: no device verified
    response = client.get("/admin/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_add_totp_device_enrols_a_staff_member_who_then_signs_in(staff, settings, capsys):
    settings.ADMIN_REQUIRE_2FA = True
    call_command("add_totp_device", "agent")
    out = capsys.readouterr().out
    assert "otpauth://totp/" in out
    device = TOTPDevice.objects.get(user=staff, confirmed=True)
    assert logged_in(log_in(Client(), otp_token=code(device)))
