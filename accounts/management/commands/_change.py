"""The base of the commands that change keys and merchants."""

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError


class ChangeCommand(BaseCommand):
    """A command whose change is one transaction. The change and the configuration revision
    that makes every process act on it commit together (infra/revision.py), so once it has
    committed nothing is left to propagate. A database failure is said in one line on stderr,
    with exit status 1, never a traceback; `failed` says what was not done and what to do."""

    failed = "The change was not made"

    def execute(self, *args, **options):
        try:
            return super().execute(*args, **options)
        except DatabaseError as error:
            reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise CommandError(f"{self.failed}: the database failed ({reason}).") from None
