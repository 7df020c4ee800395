"""A typed Python client generated from the live server's /openapi.json by `make python-client`
(README, "The contract and a typed client"; openapi-python-client with clients/python/
config.yaml) passes `mypy --strict` in its own code and in clients/python/integration.py, and
that integration runs a shop's whole flow against the real web process: the TypeScript
client's (tests/e2e/test_typescript_client.py), each answer narrowed to the generated model of
its status. docs/openapi.md "Generated clients"."""

import json
import os
import subprocess

import pytest

from accounts.services import merchant_create
from tests.e2e.processes import ROOT, VENV_BIN, web_server

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

# pip's check of the client extra, a generation and mypy: minutes at worst on a loaded box.
STEP_TIMEOUT = 600


def make_python_client(port: int, output: str) -> subprocess.CompletedProcess:
    """The README's command, with the test's server and output directory."""
    return subprocess.run(
        ["make", "python-client", f"PORT={port}", f"VENV={VENV_BIN.parent}"]
        + [f"PYTHON_CLIENT={output}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
    )


def test_a_generated_client_type_checks_strictly_and_runs_a_whole_integration(
    tmp_path, receiver, ca_bundle
):
    secret = merchant_create(name="Client", email="client@example.test").keys["test"]["secret"]
    local_receivers = {"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8", "WEBHOOK_CA_BUNDLE": ca_bundle}
    with web_server(**local_receivers) as base_url:
        made = make_python_client(int(base_url.rsplit(":", 1)[1]), str(tmp_path))
        assert made.returncode == 0, made.stdout + made.stderr
        assert "Success: no issues found" in made.stdout  # mypy --strict, client and integration
        assert "Warning(s) encountered" not in made.stdout + made.stderr  # e.g. ruff not found
        ran = subprocess.run(
            [str(VENV_BIN / "python"), str(ROOT / "clients" / "python" / "integration.py")],
            env={
                **os.environ,
                "PYTHONPATH": str(tmp_path),
                "SVC_BASE_URL": base_url,
                "SVC_SECRET_KEY": secret.secret,
                "SVC_RECEIVER_URL": receiver.url(),
            },
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT,
        )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = json.loads(ran.stdout.strip().splitlines()[-1])
    assert report["ok"], report
    assert any(line.startswith("decline generic_decline pay_") for line in report["seen"])
    delivered = [{k.lower(): v for k, v in r.headers.items()} for r in receiver.requests]
    assert [headers["service-event-type"] for headers in delivered] == ["payment.captured"]
