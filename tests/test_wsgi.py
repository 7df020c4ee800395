"""The WSGI application granian serves (config/wsgi.py), as a fresh worker process loads it."""

import os
import subprocess
import sys


def loaded_worker_prints(expression: str) -> str:
    code = f"import gc, config.wsgi\nprint({expression})"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "true"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_what_loading_made_is_kept_out_of_full_collections():
    frozen, tracked = map(
        int, loaded_worker_prints("gc.get_freeze_count(), len(gc.get_objects())").split()
    )
    assert frozen > 50_000  # modules, classes, settings, URL patterns
    assert tracked < frozen / 20  # what a full collection still scans: made after loading
