"""Self-signed certificates for webhook servers under test (``openssl`` on the PATH).

The fake API server verifies a webhook's certificate against the ``caBundle`` of its
MutatingWebhookConfiguration, as a real one does; this makes the pair a test needs:

    pair = self_signed(tmp_path, hosts=("127.0.0.1", "carbonshift-webhook.carbonshift.svc"))
    ssl_context.load_cert_chain(pair.cert, pair.key)
    webhook["clientConfig"]["caBundle"] = pair.ca_bundle
"""

from __future__ import annotations

import base64
import ipaddress
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from fakekube.errors import PermanentError

__all__ = ["CertPair", "self_signed"]


@dataclass(frozen=True, slots=True)
class CertPair:
    """A certificate (its own CA), its key, and the certificate as a base64 ``caBundle``."""

    cert: Path
    key: Path
    ca_bundle: str


def self_signed(
    directory: Path, hosts: tuple[str, ...] = ("127.0.0.1", "localhost"), *, days: int = 2
) -> CertPair:
    """Write ``tls.crt`` and ``tls.key`` for ``hosts`` (IP addresses or DNS names) into ``directory``."""  # noqa: E501
    openssl = shutil.which("openssl")
    if openssl is None:
        raise PermanentError("openssl is not on the PATH; install it to make test certificates")
    names = []
    for host in hosts:
        try:
            ipaddress.ip_address(host)
            names.append(f"IP:{host}")
        except ValueError:
            names.append(f"DNS:{host}")
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "tls.crt", directory / "tls.key"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            str(days),
            "-subj",
            f"/CN={hosts[0]}",
            "-addext",
            f"subjectAltName={','.join(names)}",
        ],
        check=True,
        capture_output=True,
    )
    return CertPair(cert, key, base64.b64encode(cert.read_bytes()).decode())
