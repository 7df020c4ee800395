"""Log filters of the processes' wiring (docs/operations.md "The foreground log")."""

import logging


class WithoutTaskRuns(logging.Filter):
    """Drops celery beat's line per task sent ("Scheduler: Sending due task ..."): with tasks
    due every second it drowned `make run`'s log. Beat's other lines ("beat: Starting...",
    which the smoke test waits for; errors) pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Scheduler: Sending due task")
