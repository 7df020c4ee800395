"""The production process model agrees with itself (docs/production.md): the Procfile, the
Dockerfile and compose.yaml start processes only through scripts/serve.py and install only
through scripts/install.sh, the scripts CI runs. The image is not built here."""

import os
import shlex
import subprocess
import sys

import pytest
import yaml
from django.core import signing
from django.urls import Resolver404, resolve

from tests.e2e.processes import ROOT, free_port
from tests.test_settings import import_settings

sys.path.insert(0, str(ROOT / "scripts"))
import serve  # noqa: E402


def test_the_procfile_starts_each_process_through_serve_py():
    lines = (ROOT / "Procfile").read_text().splitlines()
    commands = {name: shlex.split(rest) for name, _, rest in (x.partition(":") for x in lines)}
    # Not the test-mode pool: `make run` has no proxy to send anything to it.
    assert set(commands) == set(serve.PROCESSES) - {"web-test"}
    for name, argv in commands.items():
        assert argv[1:3] == ["scripts/supervise.py", name]
        assert argv[-2:] == ["scripts/serve.py", name]


def test_the_image_installs_and_starts_with_the_scripts_ci_runs():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "RUN bash scripts/install.sh /opt/venv" in dockerfile
    assert 'ENTRYPOINT ["/opt/venv/bin/python", "scripts/serve.py"]' in dockerfile
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    started = {name: s["command"] for name, s in services.items() if "build" in s}
    assert started.pop("migrate") == []
    assert services["migrate"]["entrypoint"][1:] == ["manage.py", "migrate", "--noinput"]
    assert sorted(command for [command] in started.values()) == sorted(serve.PROCESSES)
    for name in started:
        assert services[name]["depends_on"] == {
            "migrate": {"condition": "service_completed_successfully"}
        }


def test_serve_py_refuses_an_unknown_process():
    run = subprocess.run(
        [sys.executable, "scripts/serve.py", "runserver"], cwd=ROOT, capture_output=True, text=True
    )
    usage = "usage: serve.py web|web-test|admin|worker|webhooks|webhooks-test|beat"
    assert run.returncode != 0 and usage in run.stderr


def test_a_rotated_secret_key_still_reads_what_the_old_one_signed():
    signed = signing.dumps("session", key="the-old-key")
    script = "import sys, django; django.setup(); from django.core import signing; "
    script += "print(signing.loads(sys.argv[1]))"
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "ENV_FILE": "",
        "DEBUG": "false",
        "DJANGO_SECRET_KEY": "the-new-key",
        "DJANGO_SECRET_KEY_FALLBACKS": "the-old-key",
        "API_KEY_PEPPER": "p",
        "PATH": "/usr/bin:/bin",
    }
    run = subprocess.run(
        [sys.executable, "-c", script, signed], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert run.stdout.strip() == "session", run.stderr


@pytest.fixture
def environ():
    """serve.py writes os.environ (for the process it execs): restored afterwards, so no other
    test's subprocess inherits a pool size."""
    saved = dict(os.environ)
    yield os.environ
    os.environ.clear()
    os.environ.update(saved)


@pytest.mark.parametrize(
    ("process", "pool_max"),
    [
        ("web", "8"),
        ("web-test", "8"),
        ("admin", "4"),
        ("worker", "3"),
        ("webhooks", "12"),
        ("beat", "2"),
    ],
)
def test_serve_py_sizes_each_pool_to_the_process_threads(environ, tmp_path, process, pool_max):
    """docs/production.md "PostgreSQL connection budget": threads + 2 (prefork: 1 + 2 a child)."""
    for name in ("DATABASE_POOL_MAX", "DATABASE_POOL_MIN"):
        environ.pop(name, None)
    environ.update(WEB_PORT=str(free_port()), WEB_THREADS="6", WEBHOOKS_CONCURRENCY="10")
    environ["ADMIN_PORT"] = str(free_port())
    environ["BEAT_SCHEDULE"] = str(tmp_path / "schedule")
    serve.PROCESSES[process]()
    assert environ["DATABASE_POOL_MAX"] == pool_max
    environ["DATABASE_POOL_MAX"] = "40"
    serve.PROCESSES[process]()
    assert environ["DATABASE_POOL_MAX"] == "40"


def test_serve_py_web_serves_where_it_is_told_with_a_kill_timeout(environ):
    port = free_port()
    environ.update(WEB_HOST="127.0.0.1", WEB_PORT=str(port), WEB_KILL_TIMEOUT="7")
    argv = serve.web()
    assert argv[:3] == ["-m", "granian", "--interface"]
    for flag, value in (("--host", "127.0.0.1"), ("--port", str(port))):
        assert argv[argv.index(flag) + 1] == value
    assert argv[argv.index("--workers-kill-timeout") + 1] == "7"


def test_the_test_mode_pool_keeps_no_thread_for_live_keys(environ):
    """Issue 33: a merchant's sandbox load test waits its turn in the test-mode pool instead of
    being shed for live keys that pool hardly sees; one worker, as docs/production.md sizes it.
    Both stay settable."""
    for name in ("API_LIVE_RESERVED_THREADS", "WEB_WORKERS", "SERVE"):
        environ.pop(name, None)
    environ.update(WEB_PORT=str(free_port()))
    argv = serve.web_test()
    assert argv[argv.index("--workers") + 1] == "1"
    assert (environ["API_LIVE_RESERVED_THREADS"], environ["SERVE"]) == ("0", "api")
    environ.update(API_LIVE_RESERVED_THREADS="1", WEB_WORKERS="2")
    argv = serve.web_test()
    assert argv[argv.index("--workers") + 1] == "2"
    assert environ["API_LIVE_RESERVED_THREADS"] == "1"


def test_every_process_model_serves_the_admin_apart_from_the_api(environ):
    """Issue 35: the Procfile (`make run`, `make serve`) and compose.yaml start an `admin` web
    process of its own, and the API's web process (serve.py web) has no /admin/."""
    procfile = dict(
        line.partition(":")[::2] for line in (ROOT / "Procfile").read_text().splitlines()
    )
    assert shlex.split(procfile["admin"])[-2:] == ["scripts/serve.py", "admin"]
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    assert services["admin"]["command"] == ["admin"]
    assert services["admin"]["ports"] != services["proxy"]["ports"]

    environ.pop("SERVE", None)
    environ.update(WEB_PORT=str(free_port()), ADMIN_PORT=str(free_port()))
    serve.web()
    assert environ["SERVE"] == "api"
    api_urlconf = urlconf_under(environ["SERVE"])
    serve.admin()
    assert environ["SERVE"] == "admin"
    admin_urlconf = urlconf_under(environ["SERVE"])
    assert (api_urlconf, admin_urlconf) == ("config.urls_api", "config.urls_admin")
    with pytest.raises(Resolver404):
        resolve("/admin/login/", urlconf=api_urlconf)
    assert resolve("/admin/login/", urlconf=admin_urlconf).url_name == "login"
    assert resolve("/v1/payments", urlconf=api_urlconf)


def test_compose_gives_the_cores_to_the_live_api_first():
    """What a flood can reach besides the live pool (the test-mode pool, the admin's logins)
    runs at the lowest CPU weight (docs/production.md, docs/back-office.md): the live pool's
    share is the default."""
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    assert services["web-test"]["cpu_shares"] == services["admin"]["cpu_shares"] == 2
    assert "cpu_shares" not in services["web"]


def test_one_process_may_still_serve_both(environ):
    environ.update(SERVE="all", WEB_PORT=str(free_port()))
    serve.web()
    assert environ["SERVE"] == "all"


def test_a_process_serving_the_api_alone_runs_none_of_the_admins_middleware():
    """Issue 33: sessions, users, messages, the second factor and the sign-in checks are the
    back office's; serve.py web (SERVE=api) runs none, with Django's checks clean."""
    code = "import config.settings as s; print(' '.join(s.MIDDLEWARE))"
    served = {
        serve_value: import_settings(code=code, DEBUG="true", SERVE=serve_value).stdout.split()
        for serve_value in ("api", "admin", "all")
    }
    admin_only = {"django.contrib.sessions.middleware.SessionMiddleware",
                  "django.contrib.auth.middleware.AuthenticationMiddleware",
                  "axes.middleware.AxesMiddleware"}  # fmt: skip
    assert admin_only <= set(served["admin"]) and admin_only <= set(served["all"])
    assert not admin_only & set(served["api"])
    assert "django.middleware.csrf.CsrfViewMiddleware" in served["api"]
    assert [m for m in served["all"] if m in served["api"]] == served["api"]  # order kept
    env = {**os.environ, "DEBUG": "true", "SERVE": "api"}
    check = subprocess.run(
        [sys.executable, "manage.py", "check", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr


def urlconf_under(serve_value: str) -> str:
    code = "import config.settings as s; print(s.ROOT_URLCONF)"
    result = import_settings(code=code, DEBUG="true", SERVE=serve_value)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()
