import os

from celery import Celery

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
