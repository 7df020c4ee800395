"""Empty the node's metrics directory (METRICS_DIR) before its processes start."""

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Delete the multiprocess metric files in METRICS_DIR. Run it when the node starts, "
        "before the web and Celery processes: files of processes that are gone are summed "
        "by every scrape until then (docs/observability.md)."
    )

    def handle(self, *args, **options):
        files = sorted(settings.METRICS_DIR.glob("*.db"))
        for path in files:
            path.unlink(missing_ok=True)
        self.stdout.write(f"{len(files)} metric files removed from {settings.METRICS_DIR}")
