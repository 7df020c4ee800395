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

from tests.e2e.processes import ROOT, free_port

sys.path.insert(0, str(ROOT / "scripts"))
import serve  # noqa: E402


def test_the_procfile_starts_each_process_through_serve_py():
    lines = (ROOT / "Procfile").read_text().splitlines()
    commands = {name: shlex.split(rest) for name, _, rest in (x.partition(":") for x in lines)}
    assert set(commands) == set(serve.PROCESSES)
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
    usage = "usage: serve.py web|worker|webhooks|webhooks-test|beat"
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
    ("process", "pool_max"), [("web", "8"), ("worker", "3"), ("webhooks", "12"), ("beat", "2")]
)
def test_serve_py_sizes_each_pool_to_the_process_threads(environ, tmp_path, process, pool_max):
    """docs/production.md "PostgreSQL connection budget": threads + 2 (prefork: 1 + 2 a child)."""
    for name in ("DATABASE_POOL_MAX", "DATABASE_POOL_MIN"):
        environ.pop(name, None)
    environ.update(WEB_PORT=str(free_port()), WEB_THREADS="6", WEBHOOKS_CONCURRENCY="10")
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
