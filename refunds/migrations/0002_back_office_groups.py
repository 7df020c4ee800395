"""The back office's two groups (docs/back-office.md "Permissions"): "Read-only" sees every
back-office page; "Support" also refunds, resends events and requeues dead letters. Capture,
cancel and key revocation are granted one by one. Here, in the highest business room, because
the groups span every room's models."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

READ = [
    "accounts.view_merchant",
    "accounts.view_apikey",
    "events.view_event",
    "webhooks.view_webhookendpoint",
    "webhooks.view_delivery",
    "webhooks.view_deadletter",
    "webhooks.view_attempt",
    "payments.view_payment",
    "payments.view_route",
    "refunds.view_refund",
]
SUPPORT_ACTS = [
    "payments.refund_payment",
    "events.resend_event",
    "webhooks.requeue_deadletter",
]
GROUPS = {"Read-only": READ, "Support": READ + SUPPORT_ACTS}


def _ensure_permissions(apps):
    """Django creates permissions after the last migration; the groups need them now."""
    for app_config in apps.get_app_configs():
        models_module = getattr(app_config, "models_module", None)  # a stub has none
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = models_module


def create_groups(apps, schema_editor):
    """Idempotent: tests call it again after a transactional test flushed the tables."""
    _ensure_permissions(apps)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, perms in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        for perm in perms:
            app_label, codename = perm.split(".")
            group.permissions.add(
                Permission.objects.get(content_type__app_label=app_label, codename=codename)
            )


def delete_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=GROUPS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("refunds", "0001_initial"),
        ("accounts", "0002_back_office_permissions"),
        ("events", "0004_back_office_permissions"),
        ("webhooks", "0004_back_office_permissions"),
        ("payments", "0006_back_office_permissions"),
    ]

    operations = [migrations.RunPython(create_groups, delete_groups)]
