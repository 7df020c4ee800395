"""The back office's site (docs/back-office.md "Logging in"): the login form asks staff with a
confirmed TOTP device (django-otp) for its token, and every staff member for one when
ADMIN_REQUIRE_2FA is on; a session is admitted only when it is verified where a second factor
is needed. `accounts.apps.BackOfficeAdminConfig` makes this the default site (`admin.site`)."""

from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django_otp import devices_for_user, user_has_device
from django_otp.admin import OTPAdminAuthenticationForm

NO_DEVICE = (
    "This account has no second factor yet, and the back office requires one: an administrator "
    "enrols a device with `manage.py add_totp_device USERNAME`."
)


def needs_second_factor(user) -> bool:
    return settings.ADMIN_REQUIRE_2FA or user_has_device(user)


class StaffLoginForm(OTPAdminAuthenticationForm):
    """Password first (bounded: accounts.loginlimits), then the token where one is needed."""

    error_messages = {**OTPAdminAuthenticationForm.error_messages, "no_device": NO_DEVICE}
    otp_error_messages = {
        **OTPAdminAuthenticationForm.otp_error_messages,
        "token_required": "Enter the 6-digit code of your authenticator app.",
    }

    def clean(self):
        self.cleaned_data = AdminAuthenticationForm.clean(self)
        user = self.get_user()
        if user is not None and needs_second_factor(user):
            if not user_has_device(user):
                raise forms.ValidationError(NO_DEVICE, code="no_device")
            self.clean_otp(user)
        return self.cleaned_data

    def _chosen_device(self, user):
        """django-otp asks which device; a staff member with one device need not say."""
        device = super()._chosen_device(user)
        if device is None:
            devices = list(devices_for_user(user, confirmed=True, for_verify=True))
            if len(devices) == 1:
                device = devices[0]
        return device


class BackOfficeSite(admin.AdminSite):
    login_form = StaffLoginForm
    login_template = "otp/admin111/login.html"

    def has_permission(self, request):
        # With ADMIN_REQUIRE_2FA on, a session made without the form (or before the setting) is
        # sent back to the login page. Off, the form alone asks staff with a device for a token:
        # checking for a device here would cost every admin page a query.
        return super().has_permission(request) and (
            not settings.ADMIN_REQUIRE_2FA or request.user.is_verified()
        )
