"""A real browser for the pages people use: Playwright driving the system's Chromium.

Playwright's own browser download is not used (and not reachable from our machines): the
browser is Debian's `chromium`, which scripts/test.sh installs when it is absent. Pages are
served by a real server (pytest-django's `live_server`), so each test needs the transactional
database: `pytestmark = pytest.mark.django_db(transaction=True)`.
"""

import os
import shutil

import pytest
from playwright.sync_api import sync_playwright

from payments.models import Route
from tests.processors.conftest import connector_account

# Root in a container has no user namespaces for Chromium's sandbox; nothing else on this
# machine may be asked of the network (updates, sync, field trials, QUIC probes).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# A test waits this long for a page event before it fails (a readiness bound, not a timing).
PAGE_TIMEOUT_MS = 15_000


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if not path:
        pytest.fail("Chromium is not installed (scripts/test.sh installs Debian's `chromium`)")
    return path


@pytest.fixture
def chromium():
    """A headless Chromium for one test.

    Playwright's sync API keeps an asyncio loop marked running on this thread, which Django
    takes for an async context and refuses database calls in; they are plain sync calls made
    between Playwright's, so Django's guard is told so while the browser is up. Hence one
    browser per test, not per session: the loop and the variable end with the test, before
    any other test (or a process it starts, which would inherit the variable) runs."""
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    """A fresh browser profile (no cookies, no cache) and one tab in it."""
    context = chromium.new_context()
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def site(live_server, settings):
    """The service served by a real server; links it hands out (PUBLIC_BASE_URL) point there."""
    settings.PUBLIC_BASE_URL = live_server.url
    return live_server.url


@pytest.fixture
def stripe_js(settings, localstripe):
    """Pages load the emulator's Stripe.js stand-in, which talks to the emulator."""
    settings.STRIPE_JS_URL = f"{localstripe.url}/js.stripe.com/v3/"
    return localstripe


@pytest.fixture
def account(stripe_js, merchant):
    """The merchant's Stripe account at the emulator, routed for its cards in EUR."""
    account = connector_account(stripe_js.url, merchant)
    route = {"method_type": "card", "currency": "eur", "connector": "stripe"}
    Route.objects.create(merchant=merchant, account=account.pk, **route)
    return account
