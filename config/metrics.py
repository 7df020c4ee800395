"""/metrics in Prometheus's text format (docs/observability.md "Metrics").

Two kinds of series. Counters and histograms that processes update as work happens (requests,
payments, connector calls, webhook attempts, task runs) live in prometheus-client's
multiprocess files, one set per process in METRICS_DIR, summed here over every process of the
node. Facts about rows (the webhook backlog and its age, each periodic task's last run) are read
from the database at scrape time, by collectors that each room owns; they are the same on every
node. A collector whose read fails reports `svc_metrics_collector_up 0` instead of failing
the scrape.
"""

import hmac
import logging

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpResponse
from prometheus_client import CollectorRegistry, multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import choose_encoder

from config.beatruns import TaskRunCollector
from webhooks.metrics import BacklogCollector

log = logging.getLogger(__name__)

DATABASE_COLLECTORS = {"webhook_backlog": BacklogCollector, "beat_task_runs": TaskRunCollector}


class ReadFromDatabase:
    """The room's collectors, each allowed to fail alone."""

    def describe(self):
        return []

    def collect(self):
        up = GaugeMetricFamily(
            "svc_metrics_collector_up",
            "1 if the collector could read its values from the database at this scrape.",
            labels=["collector"],
        )
        for name, collector in DATABASE_COLLECTORS.items():
            try:
                families = list(collector().collect())
            except DatabaseError as error:
                log.warning("metrics collector %s failed: %s", name, error)
                up.add_metric([name], 0)
                continue
            up.add_metric([name], 1)
            yield from families
        yield up


def authorized(request) -> bool:
    token = settings.METRICS_TOKEN
    if not token:
        return True
    sent = request.headers.get("Authorization", "")
    return hmac.compare_digest(sent.encode(), f"Bearer {token}".encode())


def metrics(request) -> HttpResponse:
    if not authorized(request):
        response = HttpResponse("Unauthorized\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(settings.METRICS_DIR))
    registry.register(ReadFromDatabase())
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encoder(registry), content_type=content_type)
