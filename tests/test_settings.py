"""Production refuses to start on a missing secret (STYLE.md "Settings")."""

import os
import subprocess
import sys

import pytest


def import_settings(**env) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SECRET_KEY", "API_KEY_PEPPER", "DEBUG")
    }
    return subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("missing", ["DJANGO_SECRET_KEY", "API_KEY_PEPPER"])
def test_debug_off_refuses_to_start_without_a_secret(missing):
    env = {"DEBUG": "false", "DJANGO_SECRET_KEY": "s", "API_KEY_PEPPER": "p"}
    del env[missing]
    result = import_settings(**env)
    assert result.returncode != 0
    assert f"{missing} must be set" in result.stderr


def test_debug_off_starts_with_both_secrets():
    assert import_settings(DEBUG="false", DJANGO_SECRET_KEY="s", API_KEY_PEPPER="p").returncode == 0


def test_debug_on_uses_dev_values():
    assert import_settings(DEBUG="true").returncode == 0


def test_a_database_url_may_name_a_unix_socket_directory():
    """Percent-encoded, as libpq reads it; django-environ leaves the host encoded."""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from django.conf import settings as s; print(s.DATABASES['default']['HOST'])",
        ],  # fmt: skip
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "true",
            "DATABASE_URL": "postgres://postgres@%2Fvar%2Frun%2Fpostgresql/svc",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip() == "/var/run/postgresql", result.stderr
