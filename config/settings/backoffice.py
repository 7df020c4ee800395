"""The back office: what a process serves, the admin's login throttle and passwords
(docs/back-office.md)."""

import datetime

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import DEBUG, INSTALLED_APPS, MIDDLEWARE, env
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
# A second factor (django-otp, TOTP): the login form asks staff with a confirmed device for its
# token, and every staff member when ADMIN_REQUIRE_2FA is on (accounts/adminsite.py, the site
# that BackOfficeAdminConfig makes `admin.site`).
INSTALLED_APPS[INSTALLED_APPS.index("django.contrib.admin")] = "accounts.apps.BackOfficeAdminConfig"
INSTALLED_APPS += ["django_otp", "django_otp.plugins.otp_totp"]
# accounts' createsuperuser (validators in --noinput mode too) replaces Django's: of two apps
# with a command of the same name, the one listed first wins.
INSTALLED_APPS.remove("accounts")
INSTALLED_APPS.insert(INSTALLED_APPS.index("django.contrib.auth"), "accounts")
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.contrib.auth.middleware.AuthenticationMiddleware") + 1,
    "django_otp.middleware.OTPMiddleware",
)
# On by default in production: a guessed or phished staff password alone must not open the
# back office of a payment service. Off in development (DEBUG), where `make run`'s superuser
# signs in with a password. Enrol a device first: `manage.py add_totp_device USERNAME`.
ADMIN_REQUIRE_2FA = env.bool("ADMIN_REQUIRE_2FA", default=not DEBUG)
OTP_TOTP_ISSUER = env.str("ADMIN_TOTP_ISSUER", default="svc payments")
# The admin's sessions (the only sessions: merchants use API keys) last a working day, not
# Django's two weeks.
SESSION_COOKIE_AGE = env.int("ADMIN_SESSION_HOURS", default=8) * 3600
MIDDLEWARE.append("accounts.adminguard.RefuseNulInAdminMiddleware")
MIDDLEWARE.append("accounts.loginlimits.SignInsBusyMiddleware")
MIDDLEWARE.append("axes.middleware.AxesMiddleware")  # last, as axes asks
# What only the back office reads: a process serving the API alone (SERVE=api, serve.py web)
# runs none of it, so a payment create pays for no session, user, message or sign-in check
# (issue 33). CSRF stays: the challenge and authentication pages post forms.
ADMIN_ONLY_MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "accounts.adminguard.RefuseNulInAdminMiddleware",
    "accounts.loginlimits.SignInsBusyMiddleware",
    "axes.middleware.AxesMiddleware",
]
if SERVE == "api":
    MIDDLEWARE[:] = [name for name in MIDDLEWARE if name not in ADMIN_ONLY_MIDDLEWARE]
    # The admin's checks that its middleware is installed: it is not served here.
    SILENCED_SYSTEM_CHECKS = ["admin.E408", "admin.E409", "admin.E410", "axes.W002"]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    # ModelBackend with its password hash inside one of ADMIN_LOGIN_CONCURRENCY slots a process.
    "accounts.loginlimits.BoundedModelBackend",
]
# How many password checks (one PBKDF2 run each, ~1 s of CPU) a process runs at once; a sign-in
# finding them all taken is answered 503 without hashing (issue 35: a flood from many addresses).
ADMIN_LOGIN_CONCURRENCY = env.int("ADMIN_LOGIN_CONCURRENCY", default=1)
AXES_HANDLER = "accounts.loginlimits.AdminLoginHandler"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_FAILURE_LIMIT = env.int("ADMIN_LOGIN_FAILURE_LIMIT", default=5)
ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT = env.int("ADMIN_LOGIN_ADDRESS_FAILURE_LIMIT", default=20)
AXES_COOLOFF_TIME = datetime.timedelta(minutes=env.int("ADMIN_LOGIN_COOLOFF_MINUTES", default=15))
AXES_RESET_ON_SUCCESS = True
# A locked attempt is not counted: it writes nothing, and does not stretch the owner's cool-off.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_VERBOSE = False
if SESSION_COOKIE_AGE < 1:
    raise ImproperlyConfigured("ADMIN_SESSION_HOURS must be at least 1.")
if ADMIN_LOGIN_CONCURRENCY < 1:
    raise ImproperlyConfigured("ADMIN_LOGIN_CONCURRENCY must be at least 1.")
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
    # `reader123456` for user `reader` is 0.67 similar, under Django's 0.7: refused here.
    {"NAME": "accounts.passwords.ContainsUserAttributeValidator"},
]
LOGGING["loggers"]["axes"] = {"level": "WARNING"}  # lockouts, not every attempt
