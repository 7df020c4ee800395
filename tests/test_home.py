"""`/` tells a person opening the service in a browser where the docs and the admin are (issue 24:
it was a debug 404)."""

import re


def test_the_root_page_links_the_docs_and_the_admin(client):
    page = client.get("/")
    assert page.status_code == 200
    assert page["Content-Type"].startswith("text/html")
    links = set(re.findall(r'href="([^"]+)"', page.content.decode()))
    assert {"/docs/", "/admin/", "/openapi.json"} <= links
    for link in links:
        assert client.get(link).status_code in (200, 302), link  # the admin redirects to login
