"""/healthz and /readyz (docs/observability.md "Probes").

/healthz: the process is alive and runs Python; it touches nothing else.
/readyz: django-health-check's view over the checks below, all run at once, each within
READINESS_CHECK_TIMEOUT: the database answers and has every migration this code knows; the
broker answers; beat sent a scheduled task within READINESS_BEAT_MAX_AGE; no due webhook
delivery is later than READINESS_WEBHOOK_MAX_AGE with no attempt made meanwhile. 200 when
all pass, 503 otherwise; the body names each check and what failed (`?format=json` or
`Accept: application/json`).
Draining: on SIGTERM granian's workers close their listening socket and finish the requests
they hold, so a later probe is refused; a worker that still answers says 503 (config/draining.py,
tests/e2e/test_draining.py).
"""

import contextlib
import dataclasses
import datetime
import functools
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus

from django import db
from django.conf import settings
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.http import HttpResponse, HttpResponseBadRequest
from django.utils import timezone
from health_check import checks
from health_check.base import HealthCheck
from health_check.contrib.redis import Redis
from health_check.exceptions import ServiceUnavailable
from health_check.views import HealthCheckView
from redis.asyncio import Redis as AsyncRedis

from config import beatruns, draining
from webhooks import metrics as webhook_metrics

log = logging.getLogger(__name__)


class _Bounded:
    """Each check gets READINESS_CHECK_TIMEOUT (a probe's own timeout is short)."""

    @property
    def timeout(self) -> datetime.timedelta:
        return datetime.timedelta(seconds=settings.READINESS_CHECK_TIMEOUT)


@dataclasses.dataclass
class Database(_Bounded, checks.Database):
    pass


@functools.cache
def known_migrations() -> frozenset:
    """(app, name) of every migration this code has: read from disk once per process."""
    return frozenset(MigrationLoader(None, ignore_no_migrations=True).graph.nodes)


@dataclasses.dataclass
class Migrations(_Bounded, HealthCheck):
    """New code must not serve before its migrations ran (they run once, as a release step)."""

    def run(self):
        try:
            with connection.temporary_connection():
                applied = MigrationRecorder(connection).applied_migrations()
        except db.Error as error:  # its text names the server: logged, not shown (_log_change)
            raise ServiceUnavailable("cannot read the applied migrations") from error
        missing = sorted(known_migrations() - set(applied))
        if missing:
            first = ", ".join(f"{app}.{name}" for app, name in missing[:3])
            raise ServiceUnavailable(f"{len(missing)} migrations not applied ({first}...)")


@dataclasses.dataclass(repr=False)
class BrokerRedis(_Bounded, Redis):
    """Named without the library's host, port and db: /readyz is public (issue 35); the log
    line of a change says where (`where`)."""

    def __repr__(self) -> str:
        return "Redis()"

    @property
    def labels(self) -> dict[str, str]:  # what ?format=openmetrics shows
        return {"check": "Redis"}

    def where(self) -> str:
        return Redis.__repr__(self)


@dataclasses.dataclass
class EmbeddedBroker(_Bounded, HealthCheck):
    """The embedded filesystem broker is a folder every process of the node shares."""

    def run(self):
        folder = settings.BROKER_DIR
        try:
            os.makedirs(folder, exist_ok=True)  # as the Celery app makes it on first use
        except OSError as error:
            raise ServiceUnavailable(f"the broker folder {folder}: {error.strerror}") from error
        if not os.access(folder, os.W_OK):
            raise ServiceUnavailable(f"the broker folder {folder} is not writable")


@dataclasses.dataclass
class Beat(_Bounded, HealthCheck):
    """Beat sends `webhooks.tasks.deliver_due` every second; its sends are recorded in
    PostgreSQL (config/beatruns.py), so this check does not follow Redis's blips."""

    def run(self):
        with connection.temporary_connection():  # the check's thread keeps no connection
            age = beatruns.heartbeat_age(timezone.now())
        if age is None:
            raise ServiceUnavailable("beat has never sent a scheduled task")
        if age > settings.READINESS_BEAT_MAX_AGE:
            raise ServiceUnavailable(f"beat last sent a scheduled task {age:.0f} s ago")


@dataclasses.dataclass
class Webhooks(_Bounded, HealthCheck):
    """Due webhook deliveries are being made (a worker of the `webhooks` queue is up): not
    how late the oldest is, which one tenant's failing or hanging endpoints decide (issue 35),
    but whether any attempt was made while it waited (docs/observability.md "Probes")."""

    def run(self):
        max_age = settings.READINESS_WEBHOOK_MAX_AGE
        with connection.temporary_connection():
            late = webhook_metrics.stalled_for(timezone.now(), max_age)
        if late:
            raise ServiceUnavailable(
                f"the oldest due webhook delivery is {late:.0f} s late"
                f" and no attempt was made for {max_age:.0f} s"
            )


@dataclasses.dataclass
class Draining(HealthCheck):
    """This process got SIGTERM and is finishing what it holds (config/draining.py)."""

    def run(self):
        if draining.DRAINING.is_set():
            raise ServiceUnavailable("shutting down: finishing the requests in flight")


# What a load balancer checks (`/readyz?scope=node`, deploy/haproxy.cfg): only what is wrong
# with this node and not with its neighbours. The broker, beat and the webhook backlog are
# shared by the whole fleet: failing them would take every node out at once, while the API
# serves without them (docs/production.md "Health checks").
NODE_CHECKS = [Draining, Database, Migrations]


def readiness_checks(scope: str = "") -> list:
    found: list = list(NODE_CHECKS)
    if scope == "node":
        return found
    if settings.REDIS_URL:
        url, options = settings.REDIS_URL, settings.REDIS_CLIENT_OPTIONS
        found.append((BrokerRedis, {"client_factory": lambda: AsyncRedis.from_url(url, **options)}))
    else:
        found.append(EmbeddedBroker)
    if settings.READINESS_BEAT_MAX_AGE:
        found.append(Beat)
    if settings.READINESS_WEBHOOK_MAX_AGE:
        found.append(Webhooks)
    return found


# Threads for the checks, kept across probes: a check that hangs past its timeout (a database
# that accepts and never answers) keeps its thread, but the probe answers on time.
_EXECUTOR = ThreadPoolExecutor(max_workers=8, thread_name_prefix="readyz")
_ready: dict[str, bool] = {}  # by scope


SCOPES = ("", "node")


class ReadyView(HealthCheckView):
    def get_checks(self):
        self.checks = readiness_checks(self.request.GET.get("scope", ""))
        return super().get_checks()

    def get_executor(self):
        return contextlib.nullcontext(_EXECUTOR)

    async def get(self, request, *args, **kwargs):
        scope = request.GET.get("scope", "")
        if scope not in SCOPES:
            return HttpResponseBadRequest(
                "scope: 'node' (what a load balancer checks) or absent (every check)\n",
                content_type="text/plain; charset=utf-8",
            )
        response = await super().get(request, *args, **kwargs)
        ready = response.status_code < HTTPStatus.INTERNAL_SERVER_ERROR
        if not ready:
            response.status_code = HTTPStatus.SERVICE_UNAVAILABLE  # what probes and LBs expect
            response._has_been_logged = True  # Django would log every probe as an error
        _log_change(scope, ready, self.results)
        return response


def _log_change(scope: str, ready: bool, results) -> None:
    """One line when this process's readiness (in a scope) changes, not one per probe."""
    if ready == _ready.setdefault(scope, True):
        return
    _ready[scope] = ready
    named = f" (scope={scope})" if scope else ""
    if ready:
        log.warning("ready again%s", named)
    else:
        failed = [_failure(result) for result in results if result.error]
        log.warning("not ready%s: %s", named, "; ".join(failed))


def _failure(result) -> str:
    """What the public answer leaves out (where a server is, its own error) is logged."""
    where = getattr(result.check, "where", lambda: repr(result.check))()
    cause = result.error.__cause__
    return f"{where}: {result.error}" + (f" ({cause})" if cause else "")


def healthz(request) -> HttpResponse:
    return HttpResponse("ok\n", content_type="text/plain; charset=utf-8")


readyz = ReadyView.as_view()
