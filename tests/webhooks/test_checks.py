"""`manage.py check --deploy`: webhook settings a production deployment should not run with."""

from io import StringIO

from django.core.management import call_command


def deploy_check_output() -> str:
    out = StringIO()
    call_command("check", "--deploy", stdout=out, stderr=out)
    return out.getvalue()


def test_deploy_check_warns_when_secrets_are_encrypted_with_the_secret_key(settings):
    settings.WEBHOOK_ENCRYPTION_KEYS = []
    output = deploy_check_output()
    assert "webhooks.W001" in output and "DJANGO_SECRET_KEY" in output


def test_no_warning_with_encryption_keys_of_their_own(settings):
    settings.WEBHOOK_ENCRYPTION_KEYS = ["a2V5LWZvci10ZXN0cy1vbmx5LWtleS1mb3ItdGVzdHMtbw=="]
    assert "webhooks.W001" not in deploy_check_output()
