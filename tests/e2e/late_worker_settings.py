"""config.settings, for tests/e2e/test_draining.py: the first granian worker to read them loads
at once, every other one waits, loading the app, until the test says so. So a test can stop the
server while one worker serves and another is still starting.

LATE_WORKER_DIR: the late worker writes `late` there (its pid) when it starts waiting, and goes
on once the test has written `go`.
"""

import os
import time
from pathlib import Path

from config.settings import *  # noqa: F403

_DIR = Path(os.environ["LATE_WORKER_DIR"])


def _first_to_load() -> bool:
    try:
        os.close(os.open(_DIR / "first", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


if not _first_to_load():
    (_DIR / "late").write_text(str(os.getpid()))
    while not (_DIR / "go").exists():  # the test's word, not a length of time
        time.sleep(0.05)
