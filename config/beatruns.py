"""Beat's heartbeat and each periodic task's last run, kept in the database (config.TaskRun).

Beat records when it sends a scheduled task (at most every HEARTBEAT_EVERY seconds a task:
`webhooks.tasks.deliver_due` goes out every second); a worker records each run of a scheduled
task when it ends, with its duration and whether it raised. /readyz reads the freshest send
(config/health.py), /metrics every row (TaskRunCollector). A failed write is logged and
dropped: recording never stops beat or a task.
"""

import datetime
import logging
import time

from celery.signals import after_task_publish, beat_init, task_postrun, task_prerun
from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Max
from django.utils import timezone
from prometheus_client import Histogram
from prometheus_client.core import GaugeMetricFamily

from config.models import TaskRun
from infra.metrics import labelled

log = logging.getLogger(__name__)

HEARTBEAT_EVERY = 5.0  # seconds between two writes of one task's last send
TASK_DURATION = Histogram(
    "svc_beat_task_duration_seconds",
    "How long each run of a periodic task took, by task and whether it raised.",
    ["task", "outcome"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
)
_process = {"beat": False}
_last_write: dict[str, float] = {}  # task -> time.monotonic() of beat's last write
_started: dict[str, float] = {}  # task id -> time.perf_counter() when its run began


def scheduled_tasks() -> set[str]:
    return {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}


def record(task: str, **values) -> None:
    """Insert or update `task`'s row with `values` (one statement, PostgreSQL or SQLite)."""
    try:
        TaskRun.objects.bulk_create(
            [TaskRun(task=task, **values)],
            update_conflicts=True,
            unique_fields=["task"],
            update_fields=list(values),
        )
    except DatabaseError as error:
        log.warning("could not record the last run of %s: %s", task, error)
        connection.close()  # a long-lived process must not keep a broken connection


@beat_init.connect
def _in_beat(**kwargs):
    _process["beat"] = True


@after_task_publish.connect
def _sent(sender=None, **kwargs):
    """In beat only: `sender` is the task's name."""
    if not _process["beat"] or sender not in scheduled_tasks():
        return
    now = time.monotonic()
    if now - _last_write.get(sender, -HEARTBEAT_EVERY) >= HEARTBEAT_EVERY:
        _last_write[sender] = now
        record(sender, last_sent_at=timezone.now())


@task_prerun.connect
def _run_starts(task_id=None, task=None, **kwargs):
    if task is not None and task.name in scheduled_tasks():
        _started[task_id] = time.perf_counter()


@task_postrun.connect
def _run_ends(task_id=None, task=None, state=None, **kwargs):
    started = _started.pop(task_id, None)
    if started is None:
        return
    duration = time.perf_counter() - started
    succeeded = state == "SUCCESS"
    labelled(TASK_DURATION, task.name, "ok" if succeeded else "error").observe(duration)
    now = timezone.now()
    record(
        task.name,
        last_started_at=now - datetime.timedelta(seconds=duration),
        last_finished_at=now,
        last_duration_seconds=duration,
        last_succeeded=succeeded,
    )


def heartbeat_age(now) -> float | None:
    """Seconds since beat last sent a scheduled task; None if it never did."""
    last = TaskRun.objects.aggregate(last=Max("last_sent_at"))["last"]
    return (now - last).total_seconds() if last else None


class TaskRunCollector:
    """Each periodic task's last send and run, read at scrape time (the same on every node)."""

    def describe(self):
        return []

    def collect(self):
        families = {
            "last_sent_at": GaugeMetricFamily(
                "svc_beat_task_last_sent_timestamp_seconds",
                "When beat last sent the task (Unix time; written at most every 5 s).",
                labels=["task"],
            ),
            "last_finished_at": GaugeMetricFamily(
                "svc_beat_task_last_run_timestamp_seconds",
                "When a worker last finished running the task (Unix time).",
                labels=["task"],
            ),
            "last_duration_seconds": GaugeMetricFamily(
                "svc_beat_task_last_duration_seconds",
                "How long the task's last run took.",
                labels=["task"],
            ),
            "last_succeeded": GaugeMetricFamily(
                "svc_beat_task_last_succeeded",
                "1 if the task's last run did not raise.",
                labels=["task"],
            ),
        }
        for run in TaskRun.objects.order_by("task"):
            for field, family in families.items():
                value = getattr(run, field)
                if value is not None:
                    number = value.timestamp() if hasattr(value, "timestamp") else float(value)
                    family.add_metric([run.task], number)
        yield from families.values()
