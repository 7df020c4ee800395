"""`settings.X` without LazyObject's per-read proxy check (config/fastsettings.py): a cached
setting is read without running Python code, and overriding settings still works."""

from django.conf import settings
from django.test import override_settings

from tests.support.calls import python_calls_while


def test_a_cached_setting_is_read_without_running_python_code():
    assert settings.API_VERSION  # cached by the first read
    assert python_calls_while(lambda: settings.API_VERSION) == []


def test_a_setting_not_read_yet_is_read_and_cached_by_django():
    settings.__dict__.pop("API_COST_BYTES", None)
    assert python_calls_while(lambda: settings.API_COST_BYTES) == ["LazySettings.__getattr__"]
    assert "API_COST_BYTES" in settings.__dict__


def test_overridden_settings_are_seen_and_given_back():
    before = settings.API_VERSION
    with override_settings(API_VERSION="2099-01-01"):
        assert settings.API_VERSION == "2099-01-01"
    assert settings.API_VERSION == before


def test_a_setting_assigned_in_a_test_is_seen(settings):  # pytest-django's fixture
    settings.API_COST_BYTES = 7
    from django.conf import settings as django_settings

    assert django_settings.API_COST_BYTES == 7
