"""Staff passwords (docs/back-office.md "Passwords"): Django's validators run on every path
that sets a staff password, not only on the forms that call them.

Django runs AUTH_PASSWORD_VALIDATORS in its password forms and the interactive
createsuperuser/changepassword, but not in `createsuperuser --noinput`
(DJANGO_SUPERUSER_PASSWORD=a was accepted), `create_user`, `set_password` or any command of
ours (issue 35 medium 4). The one place every one of them passes is the save of a user whose
raw password was just set (`set_password` keeps it in `_password` until the save), so the
check is there: a pre_save guard that refuses the save. It is a guard, not a side effect: it
writes nothing. Only staff and superusers: they are the accounts that can sign in (merchants
use API keys)."""

from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError


class ContainsUserAttributeValidator:
    """Refuses a password that contains the username or the email's local part, whatever the
    case (`reader123456` for `reader`: Django's similarity check lets it through, 0.67 < 0.7)."""

    MIN_LENGTH = 3  # shorter names ("ab") are too likely inside an unrelated passphrase

    def validate(self, password, user=None):
        if user is None:
            return
        email = (getattr(user, "email", "") or "").partition("@")[0]
        lowered = password.lower()
        for value in (user.get_username(), email):
            if len(value or "") >= self.MIN_LENGTH and value.lower() in lowered:
                raise ValidationError(
                    "The password contains the username or the email address.",
                    code="password_contains_user_attribute",
                )

    def get_help_text(self):
        return "Your password cannot contain your username or your email address."


def refuse_a_weak_staff_password(sender, instance, **kwargs):
    """pre_save on the user model: a staff or superuser's new raw password must pass
    AUTH_PASSWORD_VALIDATORS, or nothing is saved (ValidationError; createsuperuser turns it
    into its CommandError)."""
    raw = getattr(instance, "_password", None)
    if raw is not None and (instance.is_staff or instance.is_superuser):
        password_validation.validate_password(raw, instance)
