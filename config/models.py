from django.db import models


class TaskRun(models.Model):
    """The last run of one periodic task (a CELERY_BEAT_SCHEDULE entry's task): when beat last
    sent it (beat's heartbeat) and when a worker last ran it, and how long that took. One row
    per task, updated in place (config/beatruns.py); kept in PostgreSQL so that every node's
    /readyz and /metrics read the same facts whatever Redis does."""

    task = models.CharField(max_length=200, primary_key=True)
    last_sent_at = models.DateTimeField(null=True, blank=True)
    last_started_at = models.DateTimeField(null=True, blank=True)
    last_finished_at = models.DateTimeField(null=True, blank=True)
    last_duration_seconds = models.FloatField(null=True, blank=True)
    last_succeeded = models.BooleanField(null=True, blank=True)

    def __str__(self):
        return self.task
