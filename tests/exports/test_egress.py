"""The egress guard: what it refuses, what it lets through, and that refused targets get no connection."""

from __future__ import annotations

import http.server
import socket
import ssl
import threading

import httpx
import pytest

from core import egress
from core.egress import EgressDenied, check_host, check_url, egress_http_request
from tests.exports.support_destinations import localhost_resolver

pytestmark = pytest.mark.no_postgres_pass

DENIED_LITERALS = [
    "127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "127.255.255.254", "0.0.0.0", "0.1.2.3",
    "[::]", "[::1]", "[::ffff:127.0.0.1]", "[::ffff:169.254.169.254]", "169.254.169.254", "169.254.170.2",
    "[fd00:ec2::254]", "100.100.100.200", "192.0.0.192", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1",
    "198.18.0.1", "192.0.0.8", "224.0.0.1", "255.255.255.255", "240.0.0.1", "[64:ff9b::a9fe:a9fe]",
    "[2002:a9fe:a9fe::]", "[2001:0:4136:e378:8000:63bf:3fff:fdd2]", "[fe80::1]", "[fc00::1]", "[ff02::1]",
    "[2001:db8::1]",
]
# Names resolved by the stub resolver below.
STUB_DNS = {
    "public.example": ["93.184.216.34"],
    "internal.example": ["10.1.2.3"],
    "metadata.example": ["169.254.169.254"],
    "v6-private.example": ["fd12:3456::1"],
    "v6-mapped.example": ["::ffff:10.0.0.7"],
    "cgnat.example": ["100.64.1.1"],
    "mixed.example": ["93.184.216.34", "192.168.0.10"],
    "mixed6.example": ["2606:4700::1111", "::1"],
    "zone.example": ["fe80::1%eth0"],
    "minio.internal": ["10.1.2.3"],
    "other.internal": ["10.1.2.4"],
}
DENIED_NAMES = ["localhost", "x.localhost", "internal.example", "metadata.example", "v6-private.example",
                "v6-mapped.example", "cgnat.example", "mixed.example", "mixed6.example", "zone.example",
                "metadata.google.internal", "does-not-resolve.example"]
MALFORMED_URLS = [
    "ftp://public.example/", "file:///etc/passwd", "gopher://public.example/", "https://user@public.example/",
    "https://user:pass@public.example/", "http://public.example/\r\nX-Injected: 1", "http://pub lic.example/",
    "http://exämple.com/", "https:///no-host", "http://public.example:99999/", "http://" + "a" * 2050 + ".com/",
    "http://-leading-dash.example/",
]


def stub_resolver(host: str) -> list[str]:
    if host in STUB_DNS:
        return STUB_DNS[host]
    try:
        return localhost_resolver(host)
    except OSError:
        raise socket.gaierror(socket.EAI_NONAME, "unknown") from None


@pytest.fixture
def stub_dns():
    with egress.use_resolver(stub_resolver):
        yield


def deny_matrix() -> list[str]:
    urls = [f"http://{host}:9000/" for host in DENIED_LITERALS]
    urls += [f"https://{name}/" for name in DENIED_NAMES]
    return urls + MALFORMED_URLS


def test_the_deny_matrix_has_at_least_thirty_cases():
    assert len(deny_matrix()) >= 30


@pytest.mark.parametrize("url", deny_matrix())
def test_every_non_public_or_malformed_target_is_refused(url, stub_dns):
    with pytest.raises(EgressDenied, match="Refused to connect"):
        check_url(url)


@pytest.mark.django_db
def test_the_deny_matrix_through_the_api_opens_zero_connections(api_client, stub_dns, connections, settings):
    settings.THROTTLE_RATES = {**settings.THROTTLE_RATES, "destination-validation": "10000/min"}
    credentials = {"access_key_id": "AKIAEXAMPLE", "secret_access_key": "secret-example"}
    for url in deny_matrix():
        body = {"display_name": "x", "config": {"bucket_name": "export-bucket", "endpoint_url": url},
                "credentials": credentials}
        response = api_client.post("/api/v1/bulk-exports/destinations", body, format="json")
        assert response.status_code in (400, 422), (url, response.json())
        if response.status_code == 400:
            assert response.json()["detail"].startswith("Failed to validate S3 destination: Refused to connect")
    assert connections == []


def test_the_refusal_names_the_address_and_the_reason():
    with pytest.raises(EgressDenied) as refused:
        check_host("10.0.0.5")
    assert refused.value.detail == ("Refused to connect to 10.0.0.5: private address. An operator can allow it by "
                                    "adding it to EGRESS_ALLOWLIST.")
    assert refused.value.status_code == 400


def test_a_name_is_refused_when_any_one_of_its_addresses_is_private(stub_dns):
    with pytest.raises(EgressDenied, match=r"mixed.example \(192.168.0.10\): private address"):
        check_host("mixed.example")


def test_public_names_and_addresses_pass_and_return_what_was_checked(stub_dns):
    assert check_host("public.example") == ["93.184.216.34"]
    assert check_host("8.8.8.8") == ["8.8.8.8"]
    target = check_url("https://public.example/bucket", require_https=True)
    assert target == egress.PinnedTarget(scheme="https", host="public.example", port=443, addresses=["93.184.216.34"])


def test_http_is_refused_when_https_is_required_unless_allowlisted(stub_dns, settings):
    with pytest.raises(EgressDenied, match="only https"):
        check_url("http://public.example/", require_https=True)
    settings.EGRESS_ALLOWLIST = ["minio.internal"]
    assert check_url("http://minio.internal:9000/", require_https=True).addresses == ["10.1.2.3"]


def test_the_allowlist_lets_exactly_its_entries_through(stub_dns, settings):
    settings.EGRESS_ALLOWLIST = ["10.1.2.3/32", "minio.internal"]
    assert check_host("10.1.2.3") == ["10.1.2.3"]
    assert check_host("minio.internal") == ["10.1.2.3"]
    assert check_host("internal.example") == ["10.1.2.3"]  # resolves into the allowlisted /32
    with pytest.raises(EgressDenied):
        check_host("10.1.2.4")
    with pytest.raises(EgressDenied):
        check_host("other.internal")  # a name that points at a neighbour of the allowlisted address
    with pytest.raises(EgressDenied):
        check_host("127.0.0.1")


def test_wildcard_allowlist_entries_cover_subdomains_only(stub_dns, settings):
    settings.EGRESS_ALLOWLIST = "*.localhost"
    assert check_host("bucket.localhost") == ["127.0.0.1"]
    with pytest.raises(EgressDenied):
        check_host("localhost")


def test_localhost_subdomains_resolve_through_the_test_resolver(settings):
    settings.EGRESS_ALLOWLIST = ["127.0.0.1"]
    with pytest.raises(EgressDenied, match="does not resolve"):
        check_host("bucket.localhost")  # the system resolver here knows no *.localhost names
    with egress.use_resolver(localhost_resolver):
        assert check_host("bucket.localhost") == ["127.0.0.1"]
    with pytest.raises(EgressDenied):
        check_host("bucket.localhost")  # the previous resolver is back


# --- egress_http_request: pinning, redirects, limits ------------------------------------------------


class _Recorder(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.hosts.append(self.headers["Host"])
        if self.path == "/big":
            body = b"x" * (2 * 1024 * 1024)
            self.send_response(200)
        else:
            body = b"moved"
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET


@pytest.fixture
def local_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.hosts = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_request_keeps_its_host_header_and_never_follows_redirects(local_server, settings, connections):
    settings.EGRESS_ALLOWLIST = ["127.0.0.1"]
    port = local_server.server_address[1]
    with egress.use_resolver(localhost_resolver):
        response = egress_http_request("GET", f"http://oauth.localhost:{port}/token")
    assert response.status_code == 302
    assert response.headers["location"] == "http://169.254.169.254/latest/meta-data/"
    assert local_server.hosts == [f"oauth.localhost:{port}"]
    assert connections == [("127.0.0.1", port)]


def test_dns_rebinding_after_the_check_reaches_nothing_but_the_checked_address(local_server, settings, connections):
    settings.EGRESS_ALLOWLIST = ["127.0.0.1"]
    port = local_server.server_address[1]
    answers = iter([["127.0.0.1"]] + [["169.254.169.254"]] * 10)
    with egress.use_resolver(lambda host: next(answers)):
        response = egress_http_request("POST", f"http://rebind.localhost:{port}/token", data={"a": "b"})
    assert response.status_code == 302
    assert [c for c in connections if c[0] == "169.254.169.254"] == []
    assert connections == [("127.0.0.1", port)]


def test_a_response_larger_than_the_cap_is_refused(local_server, settings):
    settings.EGRESS_ALLOWLIST = ["127.0.0.1"]
    with pytest.raises(EgressDenied, match="larger than"):
        egress_http_request("GET", f"http://127.0.0.1:{local_server.server_address[1]}/big")


def test_a_silent_server_times_out_instead_of_hanging(settings):
    settings.EGRESS_ALLOWLIST = ["127.0.0.1"]
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        with pytest.raises(httpx.ReadTimeout):
            egress_http_request("GET", f"http://127.0.0.1:{silent.getsockname()[1]}/", timeout=(1, 0.3))


def test_a_refused_target_gets_no_connection(connections):
    with pytest.raises(EgressDenied):
        egress_http_request("GET", "http://169.254.169.254/latest/meta-data/")
    assert connections == []


def test_tls_goes_to_the_checked_address_with_the_original_host_name_as_sni(settings, connections, tmp_path):
    cert, key = _self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    seen_sni = []
    context.sni_callback = lambda sock, name, ctx: seen_sni.append(name)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def accept():
        conn, _ = listener.accept()
        try:
            context.wrap_socket(conn, server_side=True).close()
        except (ssl.SSLError, OSError):
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    settings.EGRESS_ALLOWLIST = ["127.0.0.1"]
    with egress.use_resolver(localhost_resolver), pytest.raises(httpx.ConnectError):
        # The certificate is self-signed, so verification fails: after the ClientHello was seen.
        egress_http_request("GET", f"https://auth.localhost:{port}/token", timeout=(2, 2))
    thread.join(5)
    listener.close()
    assert seen_sni == ["auth.localhost"]
    assert connections == [("127.0.0.1", port)]


def _self_signed(tmp_path):
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "auth.localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("auth.localhost")]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_path), str(key_path)
