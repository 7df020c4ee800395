"""Settings, all from the environment (django-environ). Each is listed in docs/configuration.md.

With no DATABASE_URL and no REDIS_URL the service runs on embedded defaults: a SQLite file
under var/ and a filesystem Celery broker shared by the web, worker and beat processes.

One module per room of the settings; `DJANGO_SETTINGS_MODULE=config.settings` reads them all.
A module imports what it extends from an earlier one (the beat schedule, the apps, the
middleware, logging) and adds its own entries, so the order below is the order they are read.
"""

# isort: off
from config.settings.base import *  # noqa: F403
from config.settings.security import *  # noqa: F403
from config.settings.database import *  # noqa: F403
from config.settings.broker import *  # noqa: F403
from config.settings.rest import *  # noqa: F403
from config.settings.request_safety import *  # noqa: F403
from config.settings.observability import *  # noqa: F403
from config.settings.webhooks import *  # noqa: F403
from config.settings.payments import *  # noqa: F403
from config.settings.backoffice import *  # noqa: F403
# isort: on
