"""The back office: what a process serves, the admin's login throttle and passwords
(docs/back-office.md)."""

import datetime

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import INSTALLED_APPS, MIDDLEWARE, env
from config.settings.observability import LOGGING

# --- the back office (docs/back-office.md) ---------------------------------------------------
# What this process serves: "all" (one process, the default), "api" (no admin) or "admin" (the
# admin alone, for a process on an internal address): same code, another root URLconf.
SERVE = env.str("SERVE", default="all")
SERVED_URLCONFS = {"all": "config.urls", "api": "config.urls_api", "admin": "config.urls_admin"}
if SERVE not in SERVED_URLCONFS:
    raise ImproperlyConfigured(f"SERVE must be one of {', '.join(SERVED_URLCONFS)}.")
ROOT_URLCONF = SERVED_URLCONFS[SERVE]
# What a service refuses with: shown on an admin action's confirmation page (backoffice.toolkit).
BACKOFFICE_REFUSALS = ["api.errors.ServiceError"]
# Login throttle and lockout (django-axes; accounts/loginlimits.py): a locked attempt is
# refused before any password hash is computed.
INSTALLED_APPS.append("axes")
MIDDLEWARE.append("accounts.adminguard.RefuseNulInAdminMiddleware")
MIDDLEWARE.append("axes.middleware.AxesMiddleware")  # last, as axes asks
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "accounts.loginlimits.AdminLoginHandler"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_FAILURE_LIMIT = env.int("ADMIN_LOGIN_FAILURE_LIMIT", default=5)
ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT = env.int("ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT", default=20)
AXES_COOLOFF_TIME = datetime.timedelta(minutes=env.int("ADMIN_LOGIN_COOLOFF_MINUTES", default=15))
AXES_RESET_ON_SUCCESS = True
# A locked attempt is not counted: it writes nothing, and does not stretch the owner's cool-off.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_VERBOSE = False
if AXES_FAILURE_LIMIT < 1 or ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT < AXES_FAILURE_LIMIT:
    raise ImproperlyConfigured(
        "ADMIN_LOGIN_FAILURE_LIMIT must be at least 1 and ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT at "
        "least as large."
    )
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 12},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGGING["loggers"]["axes"] = {"level": "WARNING"}  # lockouts, not every attempt
