"""Enrol a staff member's authenticator app (docs/back-office.md "Second factor"): a confirmed
TOTP device, its secret shown once as an otpauth:// URL (most apps read it as a QR code:
`qrencode -t ansiutf8 'URL'`) and as a base32 key to type. With ADMIN_REQUIRE_2FA on, this is
how the first superuser gets in."""

from base64 import b32encode

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django_otp.plugins.otp_totp.models import TOTPDevice


class Command(BaseCommand):
    help = "Add a TOTP device (authenticator app) to a staff user; shows its secret once."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="authenticator app", help="the device's label")

    def handle(self, *args, username, name, **options):
        user = get_user_model().objects.filter(username=username, is_staff=True).first()
        if user is None:
            raise CommandError(f"No staff user named {username!r}.")
        device = TOTPDevice.objects.create(user=user, name=name, confirmed=True)
        self.stdout.write(f"TOTP device {device.persistent_id} added for {username}.")
        self.stdout.write(f"otpauth URL (shown once): {device.config_url}")
        self.stdout.write(f"key (base32, shown once): {b32encode(device.bin_key).decode()}")
