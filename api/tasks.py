from celery import shared_task

from api.idempotency import idempotency_records_purge
from api.request_recorder import request_log_purge


@shared_task
def purge_expired_idempotency_records() -> int:
    """Beat, hourly (config/settings/request_safety.py): records past their 24-hour replay
    window."""
    return idempotency_records_purge()


@shared_task
def purge_old_request_log() -> int:
    """Beat, hourly: request-log entries past REQUEST_LOG_RETENTION_DAYS."""
    return request_log_purge()
