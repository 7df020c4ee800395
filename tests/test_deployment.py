"""Production behind a TLS-terminating proxy: HTTPS settings derived from the environment
(docs/deployment.md), `check --deploy` clean, and the challenge page's POST accepted."""

import json
import os
import re
import secrets
import subprocess
import sys

import pytest
import requests
from cryptography.fernet import Fernet

from tests.e2e.processes import ROOT, web_server
from tests.payments.support import CHALLENGE
from tests.racing import CARD

PUBLIC_HOST = "pay.example.test"
PRODUCTION = {
    "DEBUG": "false",
    "DJANGO_SETTINGS_MODULE": "config.settings",
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
    "API_KEY_PEPPER": secrets.token_urlsafe(32),
    "PUBLIC_BASE_URL": f"https://{PUBLIC_HOST}",
    "ALLOWED_HOSTS": PUBLIC_HOST,
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    # Webhook secrets under a key of their own, not one derived from DJANGO_SECRET_KEY
    # (webhooks.W001): what docs/webhooks.md asks of a production deployment.
    "WEBHOOK_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
    # /metrics behind a token (config.W001), as docs/deployment.md asks.
    "METRICS_TOKEN": secrets.token_urlsafe(32),
}
HTTPS_SETTINGS = (
    "SECURE_PROXY_SSL_HEADER",
    "CSRF_TRUSTED_ORIGINS",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
)


def production_env(**overrides) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in PRODUCTION and k != "PORT"}
    return {**env, **PRODUCTION, **overrides}


def run(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def https_settings(**env) -> dict:
    script = "from django.conf import settings as s; import json, sys; "
    script += f"json.dump({{n: getattr(s, n) for n in {HTTPS_SETTINGS!r}}}, sys.stdout)"
    result = run(["-c", "import django; django.setup(); " + script], production_env(**env))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_check_deploy_is_clean_in_a_production_shaped_environment():
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], production_env())
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_warns_on_a_short_pepper():
    result = run(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        production_env(API_KEY_PEPPER="x" * 31),
    )
    assert result.returncode != 0
    assert "accounts.W001" in result.stderr and "API_KEY_PEPPER has 31 characters" in result.stderr


def test_check_deploy_warns_on_a_wildcard_host():
    result = run(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        production_env(ALLOWED_HOSTS=f"{PUBLIC_HOST},*"),
    )
    assert result.returncode != 0
    assert "config.W002" in result.stderr and "every Host header is accepted" in result.stderr


def test_check_deploy_warns_when_metrics_answer_without_a_token():
    """Issue 38: /metrics answered anyone on a production configuration, and the check said
    nothing."""
    result = run(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        production_env(METRICS_TOKEN=""),
    )
    assert result.returncode != 0
    assert "config.W001" in result.stderr and "METRICS_TOKEN is not set" in result.stderr


def test_https_public_url_behind_a_proxy():
    assert https_settings() == {
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "CSRF_TRUSTED_ORIGINS": [f"https://{PUBLIC_HOST}"],
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
    }


def test_https_public_url_without_the_proxy_header_does_not_redirect():
    """Django could not tell an HTTPS request: redirecting would loop."""
    derived = https_settings(SECURE_PROXY_SSL_HEADER="")
    assert derived["SECURE_PROXY_SSL_HEADER"] is None
    assert derived["SECURE_SSL_REDIRECT"] is False
    assert derived["SESSION_COOKIE_SECURE"] and derived["SECURE_HSTS_SECONDS"] == 31_536_000


def test_plain_http_for_local_development():
    derived = https_settings(PUBLIC_BASE_URL="http://127.0.0.1:8000/", SECURE_PROXY_SSL_HEADER="")
    assert derived["CSRF_TRUSTED_ORIGINS"] == ["http://127.0.0.1:8000"]
    assert derived["SECURE_HSTS_SECONDS"] == 0
    assert not derived["SECURE_SSL_REDIRECT"] and not derived["CSRF_COOKIE_SECURE"]


@pytest.mark.parametrize("url", ["pay.example.test", "ftp://pay.example.test", "https://"])
def test_a_public_base_url_that_is_no_http_url_is_refused(url):
    result = run(["-c", "import config.settings"], production_env(PUBLIC_BASE_URL=url))
    assert result.returncode != 0 and "PUBLIC_BASE_URL must be an http(s) URL" in result.stderr


@pytest.mark.e2e
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_challenge_page_works_behind_the_proxy(new_merchant):
    """What the proxy hands on: Host and X-Forwarded-Proto: https over plain HTTP; the
    browser's POST says `Origin: https://<public host>`."""
    env = {k: v for k, v in PRODUCTION.items() if k not in ("DJANGO_SECRET_KEY", "API_KEY_PEPPER")}
    env["ALLOWED_HOSTS"] += ",127.0.0.1"  # the test's readiness probe comes straight in
    proxied = {"Host": PUBLIC_HOST, "X-Forwarded-Proto": "https"}
    with web_server(**env) as base_url:
        api = requests.Session()
        api.headers.update(proxied)
        api.headers["Authorization"] = f"Bearer {new_merchant.keys['test']['secret'].secret}"
        token = api.post(f"{base_url}/v1/sandbox/tokens", json={**CARD, "number": CHALLENGE})
        body = {"amount": 1000, "currency": "eur", "reference": "proxy"}
        body |= {"payment_method": {"type": "card", "token": token.json()["id"]}}
        body["return_url"] = "https://shop.example/back"
        payment = api.post(f"{base_url}/v1/payments", json=body).json()
        challenge_url = payment["next_action"]["redirect"]["url"]
        assert challenge_url.startswith(f"https://{PUBLIC_HOST}/sandbox/challenge/")
        path = challenge_url.removeprefix(f"https://{PUBLIC_HOST}")

        page = requests.get(base_url + path, headers=proxied, timeout=10)
        assert page.status_code == 200
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
        answer = requests.post(
            base_url + path,
            data={"action": "approve", "csrfmiddlewaretoken": token},
            headers={
                **proxied,
                "Origin": f"https://{PUBLIC_HOST}",
                "Cookie": f"csrftoken={page.cookies['csrftoken']}",
            },
            allow_redirects=False,
            timeout=10,
        )
        assert answer.status_code == 303, answer.text[:300]
        assert answer.headers["Location"] == "https://shop.example/back"
        assert page.headers["Strict-Transport-Security"].startswith("max-age=31536000")
        assert re.search(r"csrftoken=[^;]+;.*Secure", page.headers["Set-Cookie"])
        assert api.get(f"{base_url}/v1/payments/{payment['id']}").json()["status"] == "captured"

        plain = requests.get(base_url + path, headers={"Host": PUBLIC_HOST}, allow_redirects=False)
        assert plain.status_code == 301 and plain.headers["Location"] == challenge_url
