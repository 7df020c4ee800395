"""A strict TypeScript client generated from the live server's /openapi.json (openapi-typescript
+ openapi-fetch, pinned in clients/typescript/package-lock.json) type-checks and runs a shop's
whole integration against the real web process (clients/typescript/integration.ts; docs/openapi.md
"Generated clients"); `redocly lint` passes on the same description.

npm ci runs into var/typescript-client, again only when the lock file changes. Under CI=true Node
and npm are required; elsewhere the test is skipped when they are missing."""

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import requests

from accounts.services import merchant_create
from tests.e2e.processes import ROOT, web_server

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CLIENT = ROOT / "clients" / "typescript"
CACHE = ROOT / "var" / "typescript-client"
LOCK_FILES = ("package.json", "package-lock.json")
# npm ci, a generation, tsc: minutes at worst on a loaded 2-core box (not a timing assertion).
STEP_TIMEOUT = 600


def run(*command: str, cwd: Path, env: dict | None = None) -> str:
    result = subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
    )
    assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def node_modules() -> Path:
    """The pinned packages, installed by `npm ci` when the lock file changed."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true: Node and npm are required for the TypeScript client check")
        pytest.skip("Node/npm not installed: the TypeScript client check needs them")
    digest = hashlib.sha256(b"".join((CLIENT / name).read_bytes() for name in LOCK_FILES))
    stamp = CACHE / ".lock-sha256"
    if not stamp.is_file() or stamp.read_text() != digest.hexdigest():
        shutil.rmtree(CACHE, ignore_errors=True)
        CACHE.mkdir(parents=True)
        for name in LOCK_FILES:
            shutil.copy2(CLIENT / name, CACHE / name)
        run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", cwd=CACHE)
        stamp.write_text(digest.hexdigest())
    return CACHE / "node_modules"


def test_the_integration_has_no_hand_written_types_and_no_casts():
    code = "\n".join(
        line.split("//", 1)[0] for line in (CLIENT / "integration.ts").read_text().splitlines()
    )
    code = re.sub(r"`[^`]*`|\"[^\"]*\"", '""', code)  # strings and templates say what they like
    assert not re.search(r"\bas\b|\binterface\b|^\s*(export\s+)?type\s+\w+\s*=", code, re.M)
    # `any`, an angle-bracket cast (`= <Payment>x`), a non-null assertion (`x!.y`).
    assert not re.search(r"\bany\b|(?:[=(,:]|return)\s*<\w+>|\w!\s*[.;,)\[]", code)


def test_a_strict_typescript_client_runs_a_whole_integration(tmp_path, receiver, ca_bundle):
    modules = node_modules()
    work = tmp_path / "client"
    work.mkdir()
    for name in ("package.json", "tsconfig.json", "integration.ts", "redocly.yaml"):
        shutil.copy2(CLIENT / name, work / name)
    (work / "node_modules").symlink_to(modules, target_is_directory=True)
    bin_ = modules / ".bin"
    secret = merchant_create(name="TS", email="ts@example.test").keys["test"]["secret"].secret
    local_receivers = {"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8", "WEBHOOK_CA_BUNDLE": ca_bundle}
    with web_server(**local_receivers) as base_url:
        served = requests.get(f"{base_url}/openapi.json", timeout=10)
        assert served.status_code == 200
        (work / "openapi.json").write_bytes(served.content)
        run(str(bin_ / "redocly"), "lint", "--config", "redocly.yaml", "openapi.json", cwd=work)
        run(
            str(bin_ / "openapi-typescript"),
            "openapi.json",
            # A request field with a default may be left out (openapi-typescript would require it).
            "--default-non-nullable",
            "false",
            "--output",
            "generated/api.d.ts",
            cwd=work,
        )
        run(str(bin_ / "tsc"), "--project", "tsconfig.json", cwd=work)  # strict (tsconfig.json)
        output = run(
            "node",
            "dist/integration.js",
            cwd=work,
            env={
                "SVC_BASE_URL": base_url,
                "SVC_SECRET_KEY": secret,
                "SVC_RECEIVER_URL": receiver.url(),
            },
        )
    report = json.loads(output.strip().splitlines()[-1])
    assert report["ok"], report
    delivered = [{k.lower(): v for k, v in r.headers.items()} for r in receiver.requests]
    assert [headers["service-event-type"] for headers in delivered] == ["payment.captured"]
