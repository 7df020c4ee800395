from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class AccountsConfig(AppConfig):
    name = "accounts"
    default = True  # the module also holds BackOfficeAdminConfig

    def ready(self):
        from django.contrib.auth import get_user_model
        from django.db.models.signals import pre_save

        from accounts import checks  # noqa: F401  (registers the deploy checks)
        from accounts.passwords import refuse_a_weak_staff_password

        pre_save.connect(refuse_a_weak_staff_password, sender=get_user_model())


class BackOfficeAdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin with our site as `admin.site` (its login asks for a second factor:
    accounts/adminsite.py)."""

    default = False  # named in INSTALLED_APPS in place of django.contrib.admin
    default_site = "accounts.adminsite.BackOfficeSite"
