"""Validators on every path that sets a staff password (issue 35 medium 4, docs/back-office.md
"Passwords"): not only the forms that call them."""

import pytest
from django.contrib.auth import password_validation
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

STRONG = "a long and unlikely passphrase"


@pytest.mark.django_db
@pytest.mark.parametrize("weak", ["a", "123456789012345", "password1234", "root-of-all-root"])
def test_createsuperuser_noinput_refuses_a_weak_password(monkeypatch, weak):
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", weak)
    with pytest.raises(CommandError):
        call_command("createsuperuser", interactive=False, username="root", email="r@x.test")
    assert not User.objects.filter(username="root").exists()


@pytest.mark.django_db
def test_createsuperuser_noinput_takes_a_strong_password(monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", STRONG)
    call_command("createsuperuser", interactive=False, username="root", email="r@x.test")
    assert User.objects.get(username="root").check_password(STRONG)


@pytest.mark.parametrize(
    ("username", "password"),
    [
        ("reader", "reader123456"),
        ("reader", "My-READER-2026!x"),
        ("ops", "x" * 8 + "ops" + "y" * 8),
    ],
)
def test_a_password_containing_the_username_is_refused(username, password):
    with pytest.raises(ValidationError):
        password_validation.validate_password(password, User(username=username))


def test_an_unrelated_password_passes():
    password_validation.validate_password(STRONG, User(username="reader", email="r@x.test"))


@pytest.mark.django_db
def test_set_password_then_save_refuses_a_weak_staff_password():
    """`changepassword`, a shell, any script of ours: set_password keeps the raw password until
    the save, where the guard checks it."""
    staff = User.objects.create_user("reader", password=STRONG, is_staff=True)
    staff.set_password("a")
    with pytest.raises(ValidationError):
        staff.save()
    staff.refresh_from_db()
    assert staff.check_password(STRONG)


@pytest.mark.django_db
def test_a_user_who_cannot_sign_in_is_not_checked():
    """Not staff: no admin sign-in (merchants use API keys), so no policy to enforce."""
    User.objects.create_user("plain", password="x")


@pytest.mark.django_db
def test_the_admin_add_user_form_refuses_a_password_containing_the_username(admin_client):
    response = admin_client.post(
        "/admin/auth/user/add/",
        {
            "username": "reader",
            "usable_password": "true",
            "password1": "reader123456",
            "password2": "reader123456",
        },
    )
    assert response.status_code == 200 and "errorlist" in response.content.decode()
    assert not User.objects.filter(username="reader").exists()


@pytest.mark.django_db
def test_the_admin_set_password_form_refuses_a_weak_one(admin_client):
    staff = User.objects.create_user("reader", password=STRONG, is_staff=True)
    response = admin_client.post(
        f"/admin/auth/user/{staff.pk}/password/",
        {"password1": "reader123456", "password2": "reader123456", "usable_password": "true"},
    )
    assert response.status_code == 200 and "errorlist" in response.content.decode()
    staff.refresh_from_db()
    assert staff.check_password(STRONG)
