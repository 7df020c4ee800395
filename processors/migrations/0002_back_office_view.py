"""The back office's Read-only and Support groups (refunds/migrations/0002) see connector
accounts (never their keys: the pages show none). Entering or rotating keys, adding and
revoking accounts are granted one by one (docs/processors.md "In the back office")."""

from importlib import import_module

from django.db import migrations

VIEW = ("processors", "view_connectoraccount")
GROUPS = ("Read-only", "Support")


def grant_view(apps, schema_editor):
    """Idempotent: tests call it again after a transactional test flushed the tables."""
    import_module("refunds.migrations.0002_back_office_groups")._ensure_permissions(apps)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    view = Permission.objects.get(content_type__app_label=VIEW[0], codename=VIEW[1])
    for group in Group.objects.filter(name__in=GROUPS):
        group.permissions.add(view)


def revoke_view(apps, schema_editor):
    Permission = apps.get_model("auth", "Permission")
    view = Permission.objects.filter(content_type__app_label=VIEW[0], codename=VIEW[1])
    for group in apps.get_model("auth", "Group").objects.filter(name__in=GROUPS):
        group.permissions.remove(*view)


class Migration(migrations.Migration):
    dependencies = [
        ("processors", "0001_initial"),
        ("refunds", "0002_back_office_groups"),
    ]

    operations = [migrations.RunPython(grant_view, revoke_view)]
