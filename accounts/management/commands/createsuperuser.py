"""Django's createsuperuser, with the password validators in `--noinput` mode too (issue 35:
DJANGO_SUPERUSER_PASSWORD=a was accepted; Django validates only what it asks for
interactively). Found before Django's because accounts is listed before django.contrib.auth
(config/settings/backoffice.py)."""

import os

from django.contrib.auth import password_validation
from django.contrib.auth.management.commands import createsuperuser
from django.core.exceptions import ValidationError
from django.core.management import CommandError


class Command(createsuperuser.Command):
    def handle(self, *args, **options):
        password = os.environ.get("DJANGO_SUPERUSER_PASSWORD")
        if not options["interactive"] and password is not None:
            fields = {self.UserModel.USERNAME_FIELD, *self.UserModel.REQUIRED_FIELDS}
            values = {
                name: options.get(name) or os.environ.get(f"DJANGO_SUPERUSER_{name.upper()}")
                for name in fields
                if name in {field.name for field in self.UserModel._meta.fields}
            }
            try:
                password_validation.validate_password(password, self.UserModel(**values))
            except ValidationError as error:
                raise CommandError("; ".join(error.messages)) from None
        return super().handle(*args, **options)
