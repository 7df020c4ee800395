"""schemathesis against the real web process (granian, PostgreSQL, Redis) with the committed
description (docs/openapi.md "Fuzzing"): no 5xx, every status, content type, header and body
as documented. Bounded here (FUZZ_MAX_EXAMPLES per operation, default 10, a fixed seed);
`make fuzz` runs the same with more examples."""

import os
import subprocess

import pytest

from accounts.services import merchant_create
from tests.e2e.processes import ROOT, VENV_BIN, web_server

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
    ]
)
# The fuzzer must reach the handlers, not the per-key rate limit (429 is documented anyway).
# The feed's long poll waits at most a second (more is 400, as documented), under the 10-second
# request timeout.
UNLIMITED = {
    "API_RATE_LIMIT_TEST_RATE": "1000000",
    "API_RATE_LIMIT_TEST_BURST": "1000000",
    "EVENT_FEED_MAX_WAIT": "1",
}


def test_the_service_answers_as_its_description_says():
    secret = merchant_create(name="Fuzz", email="fuzz@example.test").keys["test"]["secret"].secret
    with web_server(**UNLIMITED) as base_url:
        result = subprocess.run(
            [
                str(VENV_BIN / "st"),
                "run",
                str(ROOT / "docs" / "openapi.yaml"),
                "--url",
                base_url,
                "--header",
                f"Authorization: Bearer {secret}",
                "--checks",
                CHECKS,
                "--max-examples",
                os.environ.get("FUZZ_MAX_EXAMPLES", "10"),
                "--seed",
                os.environ.get("FUZZ_SEED", "15"),
                "--workers",
                "1",
                "--generation-database",
                "none",
                "--phases",
                os.environ.get("FUZZ_PHASES", "examples,fuzzing"),
                "--request-timeout",
                "10",
                "--no-color",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=int(os.environ.get("FUZZ_TIMEOUT", "300")),
        )
    assert result.returncode == 0, result.stdout[-30000:] + result.stderr[-5000:]
