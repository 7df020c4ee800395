from celery import shared_task

from sandbox.services import challenge_sessions_purge


@shared_task
def purge_old_challenge_sessions() -> int:
    """Beat, hourly (config/settings/payments.py): challenge sessions opened over a day ago."""
    return challenge_sessions_purge()
