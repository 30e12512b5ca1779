"""Certificates for a `BaoServer` over TLS: a name-constrained CA made the way phase2 makes the
platform's (providers/ca_certificate.py), and a leaf it signs for a name, as phase2 signs OpenBao's."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

DOMAIN = "blueprint.test"
SERVER_NAME = f"openbao.{DOMAIN}"


@dataclass(frozen=True)
class Pki:
    """Files in one folder: the CA's certificate, and a leaf's certificate (with the CA after it) and key."""

    ca_file: Path
    cert_file: Path
    key_file: Path
    ca_key_file: Path


def issue(folder: Path, *, name: str = SERVER_NAME, domain: str = DOMAIN, by: Pki | None = None, days: float = 90) -> Pki:
    """A server certificate for `name`, valid for `days` more, signed by the CA of `by` or else a fresh
    CA for `domain`, written under `folder` with that CA.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    from providers.ca_certificate import issue_ca_certificate

    def pem(key: ec.EllipticCurvePrivateKey) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())

    key = ec.generate_private_key(ec.SECP256R1())
    if by is not None:  # `by`'s CA signs it (its key and certificate, as issued)
        loaded = serialization.load_pem_private_key(by.ca_key_file.read_bytes(), password=None)
        assert isinstance(loaded, ec.EllipticCurvePrivateKey)
        ca_key, ca_pem = loaded, by.ca_file.read_text()
    else:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_pem = issue_ca_certificate(
            pem(ca_key).decode(), common_name=f"test CA ({domain})", organization="tests", domain=domain, validity_hours=24
        )
    ca = x509.load_pem_x509_certificate(ca_pem.encode())
    now = datetime.datetime.now(datetime.UTC)
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    pki = Pki(ca_file=folder / "ca.crt", cert_file=folder / "tls.crt", key_file=folder / "tls.key", ca_key_file=folder / "ca.key")
    pki.ca_key_file.write_bytes(pem(ca_key))
    pki.ca_file.write_text(ca_pem)
    pki.cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM) + ca_pem.encode())
    pki.key_file.write_bytes(pem(key))
    return pki


class Impostor:
    """Another program on OpenBao's port: HTTPS with a certificate of its own (`pki`), answering
    every request as OpenBao would a login, and keeping each request line and body it got.
    """

    def __init__(self, pki: Pki) -> None:
        import http.server
        import ssl
        import threading

        got = self.got = []  # type: list[str]

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                got.append(f"{self.requestline} {self.rfile.read(int(self.headers.get('Content-Length') or 0)).decode()}")
                body = b'{"auth": {"client_token": "s.stolen"}}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PUT = do_POST

            def log_message(self, *_: object) -> None:
                pass

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(pki.cert_file, pki.key_file)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.address = f"https://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
