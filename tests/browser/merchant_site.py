"""A merchant's web site on loopback for the browser tests: one page it serves, here the
checkout that frames the service's hosted card fields and waits for the token they hand it."""

from tests.support.loopback import QuietHandler, serving

# The merchant's checkout page: it frames the hosted fields and waits for the token.
CHECKOUT = """<!doctype html><title>Checkout</title>
<script>
  window.received = new Promise(resolve => addEventListener('message', event => {
    if (event.data && event.data.type === 'svc.token') {
      resolve({origin: event.origin, token: event.data.token});
    }
  }));
</script>
<iframe title="Card" src="%s" width="600" height="240"></iframe>"""


class Site:
    """A merchant's site on loopback serving one page (`html`), with its real address: a page
    Playwright answers itself counts as public, and Chromium forbids a public page to frame
    a local one (Local Network Access), which the service is here."""

    def __init__(self):
        self.html = ""
        site = self

        class Page(QuietHandler):
            def do_GET(self):
                self.answer(200, site.html.encode(), {"Content-Type": "text/html; charset=utf-8"})

        self.server = serving(Page)
        self.origin = f"http://127.0.0.1:{self.server.server_port}"

    def framing(self, url: str) -> str:
        self.html = CHECKOUT % url.replace("&", "&amp;")
        return f"{self.origin}/checkout"


def served_site():
    site = Site()
    yield site
    site.server.shutdown()
    site.server.server_close()
