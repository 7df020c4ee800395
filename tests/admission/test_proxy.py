"""The proxy's answers are the service's (admission/proxy.py): deploy/haproxy.cfg gives every
answer admission.proxy writes, written exactly as it writes them, and none by hand."""

import json

import pytest
from django.core.management import CommandError, call_command

from admission import proxy
from admission.address import address_refusal


def test_the_proxy_config_gives_the_services_answers():
    config = proxy.CONFIG.read_text()
    assert proxy.missing(config) == set()
    assert proxy.written(config) == config, "run `manage.py proxy_answers --write`"


def test_the_proxys_address_refusal_is_the_services_envelope_with_its_scope():
    answer = proxy.haproxy_answer(address_refusal(proxy.REFUSAL_SECONDS))
    body = json.loads(answer.split("lf-string '")[1].split("'")[0])
    assert body == address_refusal(proxy.REFUSAL_SECONDS).envelope(proxy.UNIQUE_ID)
    assert answer.endswith(" hdr Retry-After 10 hdr X-RateLimit-Scope address")


def test_a_hand_written_answer_is_refused():
    config = "    http-error status 418 content-type \"text/plain\" lf-string 'teapot'\n"
    with pytest.raises(ValueError, match="by hand"):
        proxy.written(config)


def test_the_command_finds_an_edited_body(tmp_path, monkeypatch):
    original = proxy.CONFIG.read_text()
    edited = tmp_path / "haproxy.cfg"
    edited.write_text(original.replace("No node of the", "No node at all of the"))
    monkeypatch.setattr(proxy, "CONFIG", edited)
    with pytest.raises(CommandError, match="differs"):
        call_command("proxy_answers")
    call_command("proxy_answers", "--write")
    assert edited.read_text() == original
