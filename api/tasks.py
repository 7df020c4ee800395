from celery import shared_task

from api.idempotency import idempotency_records_purge


@shared_task
def purge_expired_idempotency_records() -> int:
    """Beat, hourly (config/settings.py): records past their 24-hour replay window."""
    return idempotency_records_purge()
