"""Certificates under test (``openssl`` on the PATH): self-signed ones for webhook servers,
and a cluster CA for the API server's own TLS and its client-certificate identities.

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

__all__ = ["CertPair", "ClusterCA", "cluster_ca", "self_signed"]


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
    names = _alt_names(hosts)
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


#: a new P-256 key, unencrypted
_NEW_EC_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


@dataclass(frozen=True, slots=True)
class ClusterCA:
    """A fake cluster's certificate authority (``ca.crt``, ``ca.key``): it signs the API
    server's serving certificate and client certificates, whose subject is the identity a
    real API server reads (``CN`` the user name, each ``O`` a group)."""

    directory: Path
    cert: Path
    key: Path

    @property
    def pem(self) -> bytes:
        return self.cert.read_bytes()

    def serving(self, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> CertPair:
        """A serving certificate for ``hosts``, signed by this CA."""
        names = _alt_names(hosts)
        return self._sign(
            "server",
            f"/CN={hosts[0]}",
            f"subjectAltName={','.join(names)}\nextendedKeyUsage=serverAuth\n",
        )

    def client(self, user: str, groups: tuple[str, ...] = ()) -> CertPair:
        """A client certificate for ``user`` in ``groups`` (as ``kubeadm`` makes
        ``kubernetes-admin``: ``CN=kubernetes-admin, O=system:masters``)."""
        for name in (user, *groups):
            if not name or any(c in name for c in '/\\\n\r\0+,="<>;#'):
                raise PermanentError(
                    f"{name!r} cannot be a certificate subject here; use a non-empty name "
                    'without / \\ + , = " < > ; # or control characters'
                )
        subject = "".join(f"/O={group}" for group in groups) + f"/CN={user}"
        stem = "client-" + "".join(c if c.isalnum() else "-" for c in user)
        return self._sign(stem, subject, "extendedKeyUsage=clientAuth\n")

    def _sign(self, stem: str, subject: str, extensions: str) -> CertPair:
        openssl = _openssl()
        cert, key = self.directory / f"{stem}.crt", self.directory / f"{stem}.key"
        csr, ext = self.directory / f"{stem}.csr", self.directory / f"{stem}.ext"
        ext.write_text(extensions)
        subprocess.run(
            [
                openssl,
                "req",
                "-new",
                *_NEW_EC_KEY,
                "-keyout",
                str(key),
                "-out",
                str(csr),
                "-subj",
                subject,
            ],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [
                *(openssl, "x509", "-req", "-in", str(csr), "-CA", str(self.cert)),
                *("-CAkey", str(self.key), "-CAcreateserial", "-out", str(cert)),
                *("-days", "2", "-extfile", str(ext)),
            ],
            check=True,
            capture_output=True,
        )
        return CertPair(cert, key, base64.b64encode(self.pem).decode())


def cluster_ca(directory: Path, *, days: int = 2) -> ClusterCA:
    """A new CA in ``directory`` (``ca.crt``, ``ca.key``), valid for ``days``."""
    openssl = _openssl()
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "ca.crt", directory / "ca.key"
    subprocess.run(
        [
            *(openssl, "req", "-x509", *_NEW_EC_KEY, "-keyout", str(key), "-out", str(cert)),
            *("-days", str(days), "-subj", "/CN=fakekube-ca"),
            *("-addext", "basicConstraints=critical,CA:TRUE"),
            *("-addext", "keyUsage=critical,keyCertSign,cRLSign"),
        ],
        check=True,
        capture_output=True,
    )
    return ClusterCA(directory, cert, key)


def _openssl() -> str:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise PermanentError("openssl is not on the PATH; install it to make test certificates")
    return openssl


def _alt_names(hosts: tuple[str, ...]) -> list[str]:
    """``IP:`` or ``DNS:`` subjectAltName entries for ``hosts``."""
    names = []
    for host in hosts:
        try:
            ipaddress.ip_address(host)
            names.append(f"IP:{host}")
        except ValueError:
            names.append(f"DNS:{host}")
    return names
