"""``python -m fakekube``: serve a fake cluster until interrupted.

Example::

    python -m fakekube --port 8080 --kubeconfig-out /tmp/kubeconfig \\
        --nodes 3 --cpu 8 --memory 32Gi --gpu 4 --virtual-time
    KUBECONFIG=/tmp/kubeconfig kubectl get nodes
    curl -XPOST 'http://127.0.0.1:8080/fakekube/clock/advance?seconds=3600'

    python -m fakekube --rbac --kubeconfig-out /tmp/kubeconfig   # RBAC enforced
    curl -H "Authorization: Bearer $(cat /tmp/kubeconfig.token)" http://127.0.0.1:.../api/v1/pods
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from fakekube._time import parse_utc
from fakekube.cluster import FakeKubeConfig
from fakekube.errors import FakeKubeError
from fakekube.runner import run_fakekube


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m fakekube",
        description="A fake Kubernetes API server on 127.0.0.1 with an emulated scheduler, kubelet "
        "and Job controller (a test double; see docs/fakekube.md).",
        epilog="example: python -m fakekube --port 8080 --kubeconfig-out kubeconfig "
        "--nodes 2 --gpu 4 --virtual-time",
    )
    parser.add_argument(
        "--port", type=int, default=0, help="port on 127.0.0.1 (default 0: a free one)"
    )
    parser.add_argument(
        "--kubeconfig-out", type=Path, required=True, help="where to write the kubeconfig"
    )
    parser.add_argument("--nodes", type=int, default=3, help="number of nodes (default 3)")
    parser.add_argument("--cpu", default="8", help="allocatable cpu per node (default 8)")
    parser.add_argument(
        "--memory", default="32Gi", help="allocatable memory per node (default 32Gi)"
    )
    parser.add_argument("--gpu", type=int, default=0, help="nvidia.com/gpu per node (default 0)")
    parser.add_argument(
        "--virtual-time",
        action="store_true",
        help="the clock moves only on POST /fakekube/clock/advance?seconds=N (default: real time)",
    )
    parser.add_argument(
        "--speed", type=float, default=1.0, help="real-time mode: cluster seconds per second"
    )
    parser.add_argument("--start", help="clock start, UTC (e.g. 2023-06-01T00:00Z; default now)")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of generated names and fault draws (default 0)"
    )
    parser.add_argument(
        "--crd", type=Path, action="append", default=[], help="a CRD (JSON or YAML file) to install"
    )
    parser.add_argument(
        "--rbac",
        action="store_true",
        help="enforce RBAC: requests need a bearer token and Roles/bindings allowing them; the "
        "kubeconfig carries the admin token (kubernetes-admin, group system:masters), which is "
        "also printed and written to <kubeconfig-out>.token (kubectl sends no token over plain "
        "HTTP, so it is system:anonymous; use the token with curl or a client library)",
    )
    parser.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS with a certificate from a fresh cluster CA (the kubeconfig trusts it, "
        "so kubectl sends its token and --as headers) and accept client certificates signed by "
        "that CA as identities (CN the user, O the groups); the CA is written to "
        "<kubeconfig-out>.ca.crt and .ca.key for making them",
    )
    parser.add_argument(
        "--service-endpoint",
        action="append",
        default=[],
        metavar="NS/NAME=URL",
        help="route webhook calls for a Service to a URL, e.g. carbonshift/webhook=https://127.0.0.1:9443",
    )
    return parser


def _load(path: Path) -> dict[str, object]:
    text = path.read_text()
    try:
        loaded: dict[str, object] = json.loads(text)
    except ValueError:
        import importlib

        loaded = importlib.import_module("yaml").safe_load(text)
    return loaded


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        config = FakeKubeConfig(
            nodes=args.nodes,
            cpu=args.cpu,
            memory=args.memory,
            gpu=args.gpu,
            virtual_time=args.virtual_time,
            speed=args.speed,
            start=parse_utc(args.start, what="--start") if args.start else None,
            custom_resources=tuple(_load(p) for p in args.crd),
            rbac=args.rbac,
            seed=args.seed,
        )
        endpoints = []
        for item in args.service_endpoint:
            ref, sep, url = item.partition("=")
            namespace, slash, name = ref.partition("/")
            if not sep or not slash:
                print(f"--service-endpoint {item!r} is not NS/NAME=URL", file=sys.stderr)
                return 2
            endpoints.append((namespace, name, url))
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        with run_fakekube(
            config, port=args.port, kubeconfig=args.kubeconfig_out, tls=args.tls
        ) as kube:
            for namespace, name, url in endpoints:
                kube.register_service_endpoint(namespace, name, url)
            print(f"fakekube serving {kube.base_url}; kubeconfig {kube.kubeconfig}", flush=True)
            if kube.ca is not None:
                for suffix, source in ((".ca.crt", kube.ca.cert), (".ca.key", kube.ca.key)):
                    target = kube.kubeconfig.with_name(kube.kubeconfig.name + suffix)
                    target.write_bytes(source.read_bytes())
                    target.chmod(0o600)
                print(f"TLS on; cluster CA in {kube.kubeconfig}.ca.crt", flush=True)
            if args.rbac:
                token_file = kube.kubeconfig.with_name(kube.kubeconfig.name + ".token")
                token_file.write_text(kube.admin_token + "\n")
                token_file.chmod(0o600)
                print(
                    f"RBAC enforced; admin token {kube.admin_token} (also in {token_file})",
                    flush=True,
                )
            stop.wait()
    except FakeKubeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
