"""The endpoint-health settings fail loudly on values that make no sense
(config/settings/webhooks.py, docs/webhooks.md "Endpoint health and recovery")."""

import pytest

from tests.test_settings import import_settings


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"WEBHOOK_HEALTH_WARN_AFTER_HOURS": "120"}, "WEBHOOK_HEALTH_WARN_AFTER_HOURS"),
        ({"WEBHOOK_HEALTH_WARN_AFTER_HOURS": "0"}, "WEBHOOK_HEALTH_WARN_AFTER_HOURS"),
        ({"WEBHOOK_HEALTH_DISABLE_AFTER_HOURS": "soon"}, "WEBHOOK_HEALTH_DISABLE_AFTER_HOURS"),
        ({"WEBHOOK_HEALTH_MIN_FAILURES": "0"}, "WEBHOOK_HEALTH_MIN_FAILURES"),
        ({"WEBHOOK_DEAD_LETTER_DIGEST_SECONDS": "10"}, "WEBHOOK_DEAD_LETTER_DIGEST_SECONDS"),
        ({"WEBHOOK_RECOVER_MAX": "0"}, "WEBHOOK_RECOVER_MAX"),
    ],
)
def test_a_senseless_health_setting_stops_the_service(env, named):
    result = import_settings(DEBUG="true", **env)
    assert result.returncode != 0
    assert named in result.stderr or "could not convert" in result.stderr


def test_the_defaults_follow_the_anchors():
    code = (
        "import config.settings as s; print(s.WEBHOOK_HEALTH_WARN_AFTER.days,"
        " s.WEBHOOK_HEALTH_DISABLE_AFTER.days, s.WEBHOOK_HEALTH_MIN_FAILURES,"
        " s.WEBHOOK_DEAD_LETTER_DIGEST_SECONDS, s.WEBHOOK_RECOVER_MAX)"
    )
    result = import_settings(DEBUG="true", code=code)
    assert result.stdout.split() == ["3", "5", "10", "3600.0", "500"], result.stderr
