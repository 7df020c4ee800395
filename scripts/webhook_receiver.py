"""A local HTTPS webhook receiver for development (README "Five minutes to a refund").

`--certificate` writes a throwaway CA and a localhost certificate under var/webhook-receiver/
(`make run` does it once; the development .env's WEBHOOK_CA_BUNDLE trusts that CA, and its
WEBHOOK_ALLOWED_NETWORKS lets loopback through the URL guard: docs/webhooks.md).

`--api URL`, with a secret API key in the environment as KEY (not on the command line, which
other users of the machine can read), listens on a loopback port (`--port`, else a free one),
registers itself as a webhook endpoint for every event type (POST /v1/webhook-endpoints), then
carries on in the background: each delivery's signature is checked with the endpoint's secret,
a line is appended to var/webhooks.log (never wiped: a restarted receiver adds to it) and the
raw request kept as var/webhooks/<event id>.json. It prints the endpoint, its URL and signing
secret, and its process id (`kill` it when done). The endpoint and its secret are kept in
var/webhook-receiver/<endpoint id>.json (readable by you only).

`--endpoint whe_...` starts a receiver again for an endpoint it registered before (after a kill
or a reboot): same secret, same port unless `--port` says otherwise (the endpoint's URL is then
updated, POST /v1/webhook-endpoints/:id), re-enabled if it was disabled meanwhile, and every
event whose delivery failed since the previous receiver started is sent again at once
(POST /v1/webhook-endpoints/:id/recover): nothing is lost, nothing needs the code read.
`RECEIVER_VAR` in the environment moves var/ elsewhere (the tests use it).
"""

import argparse
import datetime
import hashlib
import hmac
import ipaddress
import json
import os
import re
import ssl
import sys
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VAR = Path(os.environ.get("RECEIVER_VAR") or Path(__file__).resolve().parent.parent / "var")
TLS = VAR / "webhook-receiver"
LOG, KEPT = VAR / "webhooks.log", VAR / "webhooks"
TOLERANCE_SECONDS = 300  # the signature's timestamp may be this old (spec "Signature")

CA_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=True,
    crl_sign=True,
    encipher_only=False,
    decipher_only=False,
)
LOCALHOST = x509.SubjectAlternativeName(
    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
)


def _certificate(name: str, key, ca_key, issuer: x509.Name | None = None):
    """Ten years of validity: the CA's own certificate (no issuer), or localhost's."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer or subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
    )
    if issuer is None:
        builder = builder.add_extension(CA_USAGE, critical=True)
    else:
        server_auth = x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH])
        builder = builder.add_extension(LOCALHOST, False).add_extension(server_auth, False)
    return builder.sign(ca_key, hashes.SHA256())


def write_certificates() -> None:
    """var/webhook-receiver/ca.pem (what the delivery workers trust), cert.pem and key.pem.
    The CA's private key is not kept: it signs this one certificate and nothing else."""
    TLS.mkdir(parents=True, exist_ok=True)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("svc development webhook CA", ca_key, ca_key)
    leaf = _certificate("localhost", key, ca_key, issuer=ca.subject)
    pem = serialization.Encoding.PEM
    private = key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (TLS / "key.pem").touch(mode=0o600)
    (TLS / "key.pem").write_bytes(private)
    (TLS / "cert.pem").write_bytes(leaf.public_bytes(pem))
    (TLS / "ca.pem").write_bytes(ca.public_bytes(pem))


def signature_ok(header: str, body: bytes, secret: str, now: float) -> bool:
    """`t=<unix>,v1=<hex>[,v1=<hex>]`: one v1 is the HMAC-SHA256 of "t.body" with the whole
    secret as key, and t is recent."""
    parts = [item.partition("=") for item in header.split(",")]
    stamps = [value for name, _, value in parts if name == "t"]
    if len(stamps) != 1 or not stamps[0].isdigit():
        return False
    if abs(now - int(stamps[0])) > TOLERANCE_SECONDS:
        return False
    expected = hmac.new(secret.encode(), stamps[0].encode() + b"." + body, hashlib.sha256)
    return any(
        hmac.compare_digest(value, expected.hexdigest()) for name, _, value in parts if name == "v1"
    )


def handler_for(secret: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            header = self.headers.get("Service-Signature", "")
            verified = signature_ok(header, body, secret, datetime.datetime.now().timestamp())
            # Kept before it is acknowledged: a delivery the service marks delivered is in the
            # log and var/webhooks/ already (a receiver killed in between is asked again).
            try:
                record(body, header, verified)
            except (ValueError, KeyError, TypeError):  # not an event: nothing to keep
                verified = False
            self.send_response(200 if verified else 400)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    return Handler


def record(body: bytes, header: str, verified: bool) -> None:
    """One line in var/webhooks.log; the raw request in var/webhooks/<event id>.json."""
    event = json.loads(body)
    kept = {"signature": header, "body": body.decode()}
    partial = KEPT / f".{event['id']}.json"  # renamed once whole: a reader never sees half
    partial.write_text(json.dumps(kept))
    partial.rename(KEPT / f"{event['id']}.json")
    found = event["data"]["object"]
    state = "signature verified" if verified else "BAD SIGNATURE (answered 400)"
    with LOG.open("a") as log:
        print(event["type"], event["id"], found["id"], found.get("status"), state, file=log)


def call(api: str, key: str, path: str, body: dict | None = None) -> dict:
    """POST `body` (GET without one) to the API with the secret key -> the JSON answer."""
    request = urllib.request.Request(
        f"{api}/{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def listening_server(port: int) -> ThreadingHTTPServer:
    """Bound before the endpoint is registered, so no delivery can find it closed."""
    server = ThreadingHTTPServer(("127.0.0.1", port), BaseHTTPRequestHandler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(TLS / "cert.pem", TLS / "key.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    return server


def kept_path(endpoint_id: str) -> Path:
    if not re.fullmatch(r"whe_[0-9A-Za-z]+", endpoint_id):
        sys.exit(f"not an endpoint id: {endpoint_id}")
    return TLS / f"{endpoint_id}.json"


def keep(endpoint_id: str, secret: str, port: int, started: str) -> None:
    """What a restart needs: the secret (the API shows it only once), the port, and when
    this receiver started (the restart recovers what failed since)."""
    path = kept_path(endpoint_id)
    path.touch(mode=0o600)
    path.write_text(json.dumps({"secret": secret, "port": port, "started": started}))


def register(api: str, key: str, url: str) -> tuple[str, str]:
    endpoint = call(api, key, "webhook-endpoints", {"url": url, "enabled_events": ["*"]})
    return endpoint["id"], endpoint["secret"]


def reuse(api: str, key: str, endpoint_id: str, url: str, since: str) -> None:
    """The endpoint points at `url` and is enabled, and what failed since `since` is due now."""
    path = f"webhook-endpoints/{endpoint_id}"
    endpoint = call(api, key, path)
    if endpoint["url"] != url:
        call(api, key, path, {"url": url})
    if endpoint["status"] == "disabled":
        call(api, key, f"{path}/enable", {})
    body = {"since": since}
    while (recovery := call(api, key, f"{path}/recover", body))["has_more"]:
        body["starting_after"] = recovery["next_starting_after"]


def receive(api: str, key: str, port: int | None, endpoint_id: str | None) -> None:
    if not (TLS / "cert.pem").is_file():
        sys.exit(f"no certificate in {TLS}: `make run` writes it (or run this with --certificate)")
    started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    kept = {}
    if endpoint_id:
        if not kept_path(endpoint_id).is_file():
            sys.exit(f"no secret kept for {endpoint_id}: it was not registered from this checkout")
        kept = json.loads(kept_path(endpoint_id).read_text())
    server = listening_server(port if port is not None else kept.get("port", 0))
    url = f"https://localhost:{server.server_address[1]}/hooks"
    if endpoint_id:
        secret = kept["secret"]
        reuse(api, key, endpoint_id, url, kept["started"])
    else:
        endpoint_id, secret = register(api, key, url)
    keep(endpoint_id, secret, server.server_address[1], started)
    server.RequestHandlerClass = handler_for(secret)
    KEPT.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    pid = os.fork()
    if pid:
        print(f"endpoint {endpoint_id} at {url}, secret {secret}")
        print(f"receiver pid {pid}; events in {LOG}")
        return
    os.setsid()  # outlives the shell that started it
    devnull = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1, 2):
        os.dup2(devnull, stream)
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--certificate", action="store_true", help="write the certificates")
    parser.add_argument("--api", help="the API's base URL, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--port", type=int, help="listen on this port (default: a free one)")
    parser.add_argument("--endpoint", help="a whe_ id this receiver registered before: reuse it")
    options = parser.parse_args()
    if options.certificate:
        write_certificates()
    elif options.api and os.environ.get("KEY"):
        try:
            receive(options.api.rstrip("/"), os.environ["KEY"], options.port, options.endpoint)
        except urllib.error.HTTPError as refused:
            sys.exit(f"the API refused: {refused.code} {refused.read().decode()}")
    else:
        parser.error("--certificate, or --api with a secret key as KEY in the environment")


if __name__ == "__main__":
    main()
