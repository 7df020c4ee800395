"""The URL guard (spec "POST /v1/webhook-endpoints", URL rules): a table of addresses in every
IPv4 and IPv6 form, numeric spellings resolved by the real resolver, and multi-answer hosts."""

import ipaddress
import socket
import threading

import pytest

from api.errors import ValidationFailed
from webhooks import urlguard
from webhooks.urlguard import check_url, refusal_reason, resolve_host

REFUSED = [
    # IPv4
    ("0.0.0.0", "unspecified"),
    ("10.1.2.3", "private"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.100.100.200", "carrier-grade NAT"),
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("169.254.169.254", "link-local"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.0.0.192", "reserved"),
    ("192.0.2.10", "reserved"),
    ("192.168.1.1", "private"),
    ("198.18.0.1", "reserved"),
    ("203.0.113.7", "reserved"),
    ("224.0.0.251", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("168.63.129.16", "cloud metadata"),
    # IPv6 native
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("fe80::1", "link-local"),
    ("fec0::1", "site-local"),
    ("fc00::1", "unique-local"),
    ("fd12:3456::1", "unique-local"),
    ("fd00:ec2::254", "cloud metadata"),
    ("ff02::1", "multicast"),
    ("2001:db8::1", "documentation"),
    ("100::1", "discard"),
    ("64:ff9b:1::a00:1", "NAT64 local use"),
    ("4000::1", "outside IPv6 global unicast"),
    # IPv6 forms carrying an IPv4 address
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:10.0.0.1", "private"),
    ("::ffff:169.254.169.254", "link-local"),
    ("::ffff:0:7f00:1", "loopback"),  # IPv4-translated
    ("::127.0.0.1", "IPv4-compatible"),
    ("::8.8.8.8", "IPv4-compatible"),  # deprecated form: refused whatever it carries
    ("64:ff9b::7f00:1", "loopback"),  # NAT64 of 127.0.0.1
    ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of 169.254.169.254
    ("2002:7f00:1::1", "loopback"),  # 6to4 of 127.0.0.1
    ("2002:c0a8:101::1", "private"),  # 6to4 of 192.168.1.1
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo"),  # Teredo of 127.0.0.1
    ("2001::1", "Teredo"),
]

ALLOWED = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "100.63.255.255",  # just below carrier-grade NAT
    "100.128.0.0",  # just above it
    "172.32.0.1",  # just above 172.16/12
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8 (DNS64 networks)
    "2002:808:808::1",  # 6to4 of 8.8.8.8
]


@pytest.mark.parametrize("address, reason", REFUSED)
def test_internal_addresses_are_refused_with_their_reason(address, reason):
    assert reason in (refusal_reason(ipaddress.ip_address(address)) or "")


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_pass(address):
    assert refusal_reason(ipaddress.ip_address(address)) is None


def code_of(url, **kwargs):
    with pytest.raises(ValidationFailed) as raised:
        check_url(url, **kwargs)
    assert raised.value.param == "url"
    return raised.value.code


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "2130706433",  # decimal
        "0x7f000001",  # hex
        "0177.0.0.1",  # octal
        "127.1",  # short form
        "0",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[64:ff9b::7f00:1]",
        "[2002:a9fe:a9fe::]",
        "[fe80::1]",
        "169.254.169.254",
        "localhost",
    ],
)
def test_urls_resolving_to_internal_addresses_are_private_address(host):
    assert code_of(f"https://{host}/hooks") == "private_address"


@pytest.mark.parametrize(
    "url, code",
    [
        ("http://8.8.8.8/hooks", "https_required"),
        ("ftp://8.8.8.8/hooks", "https_required"),
        ("//8.8.8.8/hooks", "invalid_url"),
        ("8.8.8.8/hooks", "invalid_url"),
        ("https:///hooks", "invalid_url"),
        ("https://user:pass@8.8.8.8/hooks", "invalid_url"),
        ("https://user@8.8.8.8/hooks", "invalid_url"),
        ("https://8.8.8.8/ho oks", "invalid_url"),
        ("https://8.8.8.8:99999/", "invalid_url"),
        ("https://8.8.8.8:0/hooks", "invalid_url"),  # issue 35: was taken, as port 443
        ("https://8.8.8.8:00/hooks", "invalid_url"),
        ("https://[::1/", "invalid_url"),
        ("https://8.8.8.8/" + "a" * 2048, "invalid_url"),
        ("", "invalid_url"),
        (42, "invalid_url"),
        ("https://no-such-host.invalid/hooks", "unresolvable_host"),
    ],
)
def test_syntax_rules(url, code):
    assert code_of(url) == code


def test_a_url_of_exactly_2048_characters_is_accepted():
    url = "https://8.8.8.8/"
    url += "a" * (2048 - len(url))
    assert check_url(url).path.startswith("/aaa")


def answers(*addresses):
    return lambda host, port: list(addresses)


def test_every_answer_is_checked_and_one_internal_answer_refuses():
    mixed = answers("93.184.215.14", "2606:4700::1", "10.0.0.7")
    assert code_of("https://hooks.example.com/x", resolve=mixed) == "private_address"


def test_aaaa_answer_in_ipv6_form_refuses():
    mixed = answers("93.184.215.14", "::ffff:192.168.0.1")
    assert code_of("https://hooks.example.com/x", resolve=mixed) == "private_address"


def test_a_public_host_yields_every_checked_address_and_the_request_target():
    checked = check_url(
        "https://Hooks.Example.com:8443/in?x=1#frag",
        resolve=answers("93.184.215.14", "2606:4700::1", "93.184.215.14"),
    )
    assert checked.host == "hooks.example.com" and checked.port == 8443
    assert checked.path == "/in?x=1"
    assert [str(a) for a in checked.addresses] == ["93.184.215.14", "2606:4700::1"]


def test_no_answer_is_unresolvable():
    assert code_of("https://hooks.example.com/", resolve=answers()) == "unresolvable_host"


def test_operator_allowed_networks_let_loopback_through_but_not_http(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = [ipaddress.ip_network("127.0.0.0/8")]
    assert str(check_url("https://127.0.0.1:9/").addresses[0]) == "127.0.0.1"
    assert code_of("http://127.0.0.1:9/") == "https_required"
    assert code_of("https://10.0.0.1/") == "private_address"


@pytest.fixture
def hung_name_server(monkeypatch):
    """The system resolver for `hung.example` never answers (a hostile endpoint's name
    server); other names resolve as usual. Lookups wait 0.2 s. Released at the end."""
    release, real_getaddrinfo = threading.Event(), socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if host == "hung.example":
            release.wait(30)
            raise socket.gaierror("the name server never answered")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(urlguard, "RESOLVE_TIMEOUT_SECONDS", 0.2)
    yield
    release.set()


def test_a_lookup_the_name_server_never_answers_ends_at_its_timeout(hung_name_server):
    with pytest.raises(TimeoutError, match="hung.example"):
        resolve_host("hung.example", 443)
    assert resolve_host("127.0.0.1", 443) == ["127.0.0.1"]  # the pool still serves


def test_a_url_whose_host_never_resolves_is_unresolvable(hung_name_server):
    with pytest.raises(ValidationFailed) as refused:
        check_url("https://hung.example/hooks")
    assert refused.value.code == "unresolvable_host"
    assert "did not resolve within 0.2 s" in refused.value.message


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.7", "169.254.169.254", "fd00:ec2::254"])
def test_a_refusal_tells_the_merchant_not_public_and_only_the_log_which_address(address, caplog):
    caplog.set_level("INFO", logger="webhooks.urlguard")
    with pytest.raises(ValidationFailed) as refused:
        check_url("https://hooks.example.com/x", resolve=answers("93.184.215.14", address))
    assert refused.value.code == "private_address"
    assert refused.value.message == urlguard.NOT_PUBLIC  # no address, no kind of address
    assert f"resolves to {address}, a {refusal_reason(ipaddress.ip_address(address))}" in (
        caplog.text
    )


def test_a_long_unresolvable_host_is_quoted_short():
    host = "a" * 60 + ".example.com"
    with pytest.raises(ValidationFailed) as refused:
        check_url(f"https://{host}/", resolve=answers())
    assert host not in refused.value.message and host[:40] in refused.value.message
