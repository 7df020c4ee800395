"""What a fresh process of the service prints: for what only a process's start sets up."""

import os
import subprocess
import sys


def printed_by_a_fresh_process(code: str) -> str:
    """`code` run by a new interpreter on the service's settings (development secrets), with
    this test's environment (its database and Redis); its output, stripped."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "true"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()
