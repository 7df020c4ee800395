import logging.config
import os

from celery import Celery
from celery.signals import setup_logging
from django.conf import settings

from config import broker_redis  # noqa: F401  (registers the redis:// transport)
from config.broker import folders

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("svc")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _make_broker_folders(sender, **kwargs):
    """The embedded filesystem broker needs its folders before any process touches them."""
    for folder in folders(sender.conf.broker_transport_options or {}):
        os.makedirs(folder, exist_ok=True)


@setup_logging.connect
def _keep_the_service_logging(**kwargs):
    """Workers and beat log through settings.LOGGING, card-data redaction filter included.
    Without a receiver here Celery replaces the root logger's handlers with its own (and
    gives task loggers one), and those would write card numbers unredacted. The level is
    LOG_LEVEL's, not `--loglevel`'s."""
    logging.config.dictConfig(settings.LOGGING)
