"""charts/carbonshift: the real Helm engine renders, lints and installs it; the manifests match
deploy/, validate offline and pass a server dry run against the fake API server.

Helm runs through helm-python-sdk (Helm v4's Go library, no helm binary); charts/check.sh
installs it in CI. Without it these tests skip, except under CI where they fail.
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from carbonshift.carbon.providers import ProviderSettings
from carbonshift.k8s.config import parse_config
from carbonshift.k8s.multicluster.config import HubConfig
from fakekube import FakeKube

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "carbonshift"
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
CI_CRDS = sorted((CHART / "ci" / "crds").rglob("*_*.yaml"))
KUBECTL = shutil.which("kubectl")
RELEASE, NAMESPACE = "carbonshift", "carbonshift-system"

Doc = dict[str, Any]


@pytest.fixture(scope="module")
def helm() -> Any:
    """The helm_python module; skips without it (never under CI)."""
    try:
        import helm_python  # type: ignore[import-not-found]
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("helm-python-sdk is missing under CI; charts/check.sh installs it")
        pytest.skip(
            "helm-python-sdk is not installed (pip install helm-python-sdk; charts/check.sh)"
        )
    return helm_python


def values_of(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text()) or {}


@cache
def _render(values_file: str) -> tuple[Doc, ...]:
    import helm_python

    with helm_python.Chart.load(str(CHART)) as chart:
        files = chart.render(
            values_of(Path(values_file)), name=RELEASE, namespace=NAMESPACE, is_install=True
        )
    docs: list[Doc] = []
    for path, text in files.items():
        if not path.endswith("NOTES.txt"):  # shown after install, not applied (as helm template)
            docs.extend(d for d in yaml.safe_load_all(text) if d)
    return tuple(docs)


def render(helm: Any, values_file: Path) -> list[Doc]:
    """Every object the chart renders for a CI value set (release carbonshift)."""
    return list(_render(str(values_file)))


def by_id(docs: list[Doc]) -> dict[str, Doc]:
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs}


def rules(doc: Doc) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in doc["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def kustomize(base: str) -> list[Doc]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (kustomize renders deploy/)")
    done = subprocess.run(
        [KUBECTL, "kustomize", str(REPO / "deploy" / base)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


# -- Helm's own checks ----------------------------------------------------------------------


@pytest.mark.parametrize("values_file", CI_VALUES, ids=lambda p: p.stem)
def test_helm_lint_finds_no_warning_or_error(helm: Any, values_file: Path) -> None:
    report = helm.lint(str(CHART), values_of(values_file), strict=True, namespace=NAMESPACE)
    assert report["errors"] == []
    worse_than_info = [m for m in report["messages"] if m["severity"] >= 2]
    assert worse_than_info == []


SCHEMA_CASES = [
    pytest.param({"replicas": 3}, "additional properties 'replicas'", id="unknown-top-level-key"),
    pytest.param({"image": {"tag": 1}}, "/image/tag", id="tag-not-a-string"),
    pytest.param({"webhook": {"failurePolicy": "Open"}}, "failurePolicy", id="bad-failure-policy"),
    pytest.param({"image": {"digest": "latest"}}, "/image/digest", id="digest-not-sha256"),
    pytest.param({"hub": {"enable": True}}, "additional properties 'enable'", id="hub-typo"),
]


@pytest.mark.parametrize(("values", "want_in_message"), SCHEMA_CASES)
def test_the_values_schema_refuses_bad_values(
    helm: Any, values: dict[str, Any], want_in_message: str
) -> None:
    with helm.Chart.load(str(CHART)) as chart:
        with pytest.raises(helm.HelmValuesError, match=want_in_message):
            chart.validate_schema(values)
        for values_file in CI_VALUES:
            chart.validate_schema(values_of(values_file))  # every CI set is valid


def render_values(helm: Any, values: dict[str, Any], release: str = RELEASE) -> list[Doc]:
    with helm.Chart.load(str(CHART)) as chart:
        files = chart.render(values, name=release, namespace=NAMESPACE, is_install=True)
    return [
        d
        for path, text in files.items()
        if not path.endswith("NOTES.txt")
        for d in yaml.safe_load_all(text)
        if d
    ]


NAME_CASES = [
    pytest.param("carbonshift", {}, "carbonshift-controller", id="release-named-carbonshift"),
    pytest.param("carbonshift-prod", {}, "carbonshift-prod-controller", id="name-in-release"),
    pytest.param("ops", {}, "ops-carbonshift-controller", id="other-release"),
    pytest.param("ops", {"fullnameOverride": "cs"}, "cs-controller", id="override"),
]


@pytest.mark.parametrize(("release", "values", "want_deployment"), NAME_CASES)
def test_object_names_follow_the_release(
    helm: Any, release: str, values: dict[str, Any], want_deployment: str
) -> None:
    docs = by_id(render_values(helm, values, release))
    deployment = docs[f"Deployment/{want_deployment}"]
    prefix = want_deployment.removesuffix("-controller")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == want_deployment
    assert pod["volumes"][1]["secret"]["secretName"] == f"{prefix}-tls"
    webhook = docs[f"MutatingWebhookConfiguration/{prefix}"]["webhooks"][0]
    assert webhook["clientConfig"]["service"]["name"] == f"{prefix}-webhook"
    binding = docs[f"ClusterRoleBinding/{want_deployment}"]
    assert binding["subjects"][0]["name"] == want_deployment


def test_the_chart_sets_ports_and_lease_and_keeps_the_users_other_keys(helm: Any) -> None:
    values = {
        "webhook": {"port": 9443},
        "controller": {"config": {"webhook": {"port": 1}, "extender": {"max_g_per_kwh": 300}}},
    }
    docs = by_id(render_values(helm, values))
    config = parse_config(
        yaml.safe_load(docs["ConfigMap/carbonshift-config"]["data"]["config.yaml"])
    )
    assert config.webhook.port == 9443  # the chart's value: it must match the container port
    assert config.extender.max_g_per_kwh == 300  # the user's own key in that section
    assert (config.leader_election.namespace, config.leader_election.lease_name) == (
        NAMESPACE,
        "carbonshift-controller",
    )
    container = docs["Deployment/carbonshift-controller"]["spec"]["template"]["spec"]["containers"][
        0
    ]
    assert {"name": "webhook", "containerPort": 9443} in container["ports"]


def test_the_install_notes_name_the_release_namespace(helm: Any) -> None:
    with helm.Chart.load(str(CHART)) as chart:
        files = chart.render({"hub": {"enabled": True}}, name=RELEASE, namespace="cs")
    notes = files["carbonshift/templates/NOTES.txt"]
    assert "kubectl -n cs get deploy carbonshift-controller" in notes
    assert "CarbonCluster" in notes


def test_the_image_defaults_to_the_app_version(helm: Any) -> None:
    with helm.Chart.load(str(CHART)) as chart:
        app_version = chart.metadata["appVersion"]
    want_image = f"ghcr.io/carbonshift/carbonshift:{app_version}"
    deployment = by_id(render(helm, CHART / "ci" / "default-values.yaml"))[
        "Deployment/carbonshift-controller"
    ]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == want_image
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert app_version == project["version"]


# -- offline schema validation --------------------------------------------------------------


def is_built_in(doc: Doc) -> bool:
    """A kind of Kubernetes itself: the core group, a group without a dot, or *.k8s.io."""
    group = doc["apiVersion"].rpartition("/")[0]
    return "." not in group or group.endswith(".k8s.io")


def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema of the CRDs the checks install."""
    out = {}
    for path in [*CI_CRDS, CHART / "crds" / "carboncluster.yaml"]:
        crd = yaml.safe_load(path.read_text())
        for version in crd["spec"]["versions"]:
            api_version = f"{crd['spec']['group']}/{version['name']}"
            out[api_version, crd["spec"]["names"]["kind"]] = version["schema"]["openAPIV3Schema"]
    return out


@pytest.mark.parametrize("values_file", CI_VALUES, ids=lambda p: p.stem)
def test_rendered_objects_validate_against_the_kubernetes_schemas(
    helm: Any, values_file: Path
) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    jsonschema = pytest.importorskip("jsonschema")
    docs = render(helm, values_file)
    for doc in filter(is_built_in, docs):
        kubernetes_validate.validate(doc, "1.32", strict=True)
    schemas = crd_schemas()
    for doc in (d for d in docs if not is_built_in(d)):
        schema = schemas[doc["apiVersion"], doc["kind"]]
        jsonschema.Draft7Validator(schema).validate(doc)


# -- the chart and the kustomize bases agree -------------------------------------------------


def test_the_crd_is_the_one_in_deploy_hub() -> None:
    chart_crd = (CHART / "crds" / "carboncluster.yaml").read_bytes()
    assert chart_crd == (REPO / "deploy" / "hub" / "crd-carboncluster.yaml").read_bytes()


def test_the_controller_matches_deploy_base(helm: Any) -> None:
    chart = by_id(render(helm, CHART / "ci" / "default-values.yaml"))
    base = by_id(kustomize("base"))
    # Same objects, except the ConfigMap's generated hash suffix; the chart adds its TLS
    # Secret and the scheduler configuration (deploy/ leaves both to the reader).
    base_ids = {
        k if not k.startswith("ConfigMap/") else "ConfigMap/carbonshift-config" for k in base
    }
    want_chart_only = {"Secret/carbonshift-tls", "ConfigMap/carbonshift-scheduler-config"}
    assert set(chart) - base_ids == want_chart_only
    assert base_ids - set(chart) == {"Namespace/carbonshift-system"}  # namespace.create
    for kind in ("ClusterRole/carbonshift-controller", "Role/carbonshift-leader-election"):
        assert rules(chart[kind]) == rules(base[kind])
    base_config = next(d for d in base.values() if d["kind"] == "ConfigMap")
    assert parse_config(
        yaml.safe_load(chart["ConfigMap/carbonshift-config"]["data"]["config.yaml"])
    ) == parse_config(yaml.safe_load(base_config["data"]["config.yaml"]))
    pod, base_pod = (
        d["Deployment/carbonshift-controller"]["spec"]["template"]["spec"] for d in (chart, base)
    )
    for key in ("securityContext", "serviceAccountName"):
        assert pod[key] == base_pod[key]
    container, base_container = pod["containers"][0], base_pod["containers"][0]
    for key in (
        "args",
        "ports",
        "readinessProbe",
        "livenessProbe",
        "resources",
        "securityContext",
        "volumeMounts",
    ):
        assert container[key] == base_container[key], key
    webhook, base_webhook = (
        d["MutatingWebhookConfiguration/carbonshift"]["webhooks"][0] for d in (chart, base)
    )
    base_webhook["clientConfig"]["caBundle"] = webhook["clientConfig"]["caBundle"]
    assert webhook == base_webhook


def test_the_hub_matches_deploy_hub(helm: Any) -> None:
    chart = by_id(render(helm, CHART / "ci" / "hub-values.yaml"))
    base = by_id(kustomize("hub"))
    for kind in ("ClusterRole/carbonshift-hub", "Role/carbonshift-hub-secrets"):
        assert rules(chart[kind]) == rules(base[kind])
    base_config = next(d for d in base.values() if d["kind"] == "ConfigMap")
    want = HubConfig.model_validate(yaml.safe_load(base_config["data"]["hub.yaml"]))
    got = HubConfig.model_validate(
        yaml.safe_load(chart["ConfigMap/carbonshift-hub-config"]["data"]["hub.yaml"])
    )
    assert got == want
    pod, base_pod = (
        d["Deployment/carbonshift-hub"]["spec"]["template"]["spec"] for d in (chart, base)
    )
    container, base_container = pod["containers"][0], base_pod["containers"][0]
    for key in ("args", "ports", "livenessProbe", "resources", "securityContext", "volumeMounts"):
        assert container[key] == base_container[key], key


# -- what the chart adds ---------------------------------------------------------------------


def test_the_generated_certificate_is_signed_by_the_webhook_ca_for_both_services(
    helm: Any,
) -> None:
    x509 = pytest.importorskip("cryptography.x509")
    docs = by_id(render(helm, CHART / "ci" / "default-values.yaml"))
    secret = docs["Secret/carbonshift-tls"]["data"]
    ca_bundle = docs["MutatingWebhookConfiguration/carbonshift"]["webhooks"][0]["clientConfig"][
        "caBundle"
    ]
    assert ca_bundle == secret["ca.crt"]
    ca = x509.load_pem_x509_certificate(base64.b64decode(ca_bundle))
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["tls.crt"]))
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    want_names = {f"carbonshift-{s}.{NAMESPACE}.svc" for s in ("webhook", "extender")}
    assert want_names <= set(names.get_values_for_type(x509.DNSName))
    scheduler = docs["ConfigMap/carbonshift-scheduler-config"]["data"]
    assert scheduler["ca.crt"].strip() == base64.b64decode(ca_bundle).decode().strip()
    extender = yaml.safe_load(scheduler["kube-scheduler-config.yaml"])["extenders"][0]
    assert extender["urlPrefix"] == f"https://carbonshift-extender.{NAMESPACE}.svc:8444"


def test_cert_manager_issues_the_certificate_and_injects_the_ca(helm: Any) -> None:
    docs = by_id(render(helm, CHART / "ci" / "monitoring-values.yaml"))
    assert "Secret/carbonshift-tls" not in docs
    certificate = docs["Certificate/carbonshift-tls"]
    assert certificate["spec"]["secretName"] == "carbonshift-tls"
    assert (
        certificate["spec"]["issuerRef"]["name"]
        == docs["Issuer/carbonshift-selfsigned"]["metadata"]["name"]
    )
    webhook = docs["MutatingWebhookConfiguration/carbonshift"]
    assert webhook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
        f"{NAMESPACE}/carbonshift-tls"
    )
    assert "caBundle" not in webhook["webhooks"][0]["clientConfig"]


def test_provider_keys_reach_the_variables_the_providers_read(helm: Any) -> None:
    docs = by_id(render(helm, CHART / "ci" / "monitoring-values.yaml"))
    secret = docs["Secret/carbonshift-providers"]["stringData"]
    env: dict[str, str] = {}
    for var in docs["Deployment/carbonshift-controller"]["spec"]["template"]["spec"]["containers"][
        0
    ]["env"]:
        if "value" in var:
            env[var["name"]] = var["value"]
        elif "secretKeyRef" in var.get("valueFrom", {}):
            ref = var["valueFrom"]["secretKeyRef"]
            assert ref["name"] == "carbonshift-providers"
            env[var["name"]] = secret[ref["key"]]
    settings = ProviderSettings.from_env(env)
    assert settings.electricitymaps_token is not None
    assert settings.electricitymaps_token.reveal() == "ci-not-a-real-token"
    assert [s for chain in settings.chains.values() for s in chain] == [
        "electricitymaps",
        "embedded",
    ]


def test_an_existing_secret_is_referenced_and_none_is_created(helm: Any) -> None:
    docs = by_id(render(helm, CHART / "ci" / "hub-only-values.yaml"))
    assert not [k for k in docs if k.startswith("Secret/")]
    assert "Deployment/carbonshift-controller" not in docs
    hub = docs["Deployment/carbonshift-hub"]["spec"]["template"]["spec"]["containers"][0]
    refs = {v["name"]: v["valueFrom"]["secretKeyRef"] for v in hub["env"]}
    assert refs["CARBONSHIFT_ELECTRICITYMAPS_TOKEN"] == {
        "name": "carbonshift-provider-keys",
        "key": "electricitymaps-token",
        "optional": True,
    }
    assert hub["image"].startswith("ghcr.io/carbonshift/carbonshift@sha256:")


def test_monitoring_objects_carry_the_observability_pack(helm: Any) -> None:
    docs = render(helm, CHART / "ci" / "monitoring-values.yaml")
    ids = by_id(docs)
    rule = ids["PrometheusRule/carbonshift"]
    want_rules = yaml.safe_load(
        (REPO / "deploy" / "observability" / "carbonshift-rules.yaml").read_text()
    )
    assert rule["spec"] == want_rules
    dashboards = [
        d for d in docs if d["kind"] == "ConfigMap" and "dashboard" in d["metadata"]["name"]
    ]
    want_files = sorted(
        p.name for p in (REPO / "deploy" / "observability" / "dashboards").glob("*.json")
    )
    assert sorted(n for d in dashboards for n in d["data"]) == want_files
    for d in dashboards:
        assert d["metadata"]["labels"]["grafana_dashboard"] == "1"
        for name, text in d["data"].items():
            assert text == (
                REPO / "deploy" / "observability" / "dashboards" / name
            ).read_text().rstrip("\n")
    monitor = ids["ServiceMonitor/carbonshift"]
    services = [d for d in docs if d["kind"] == "Service"]
    scraped = [
        s["metadata"]["name"]
        for s in services
        if monitor["spec"]["selector"]["matchLabels"].items() <= s["metadata"]["labels"].items()
    ]
    assert sorted(scraped) == ["carbonshift-hub-metrics", "carbonshift-metrics"]


# -- against the fake API server -------------------------------------------------------------


def install_crds(fakekube: FakeKube, *, chart_crds: bool = True) -> None:
    """The CRDs of ci/crds (and the chart's own, as helm install puts crds/ first)."""
    for path in [*CI_CRDS, *([CHART / "crds" / "carboncluster.yaml"] if chart_crds else [])]:
        fakekube.create(yaml.safe_load(path.read_text()))


@pytest.fixture
def kube_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "KUBECACHEDIR": str(tmp_path / "kubecache")}


#: Kinds the fake API server does not serve (docs/fakekube.md); checked offline only.
NOT_SERVED_BY_FAKEKUBE = {"NetworkPolicy"}


@pytest.mark.e2e
@pytest.mark.parametrize("values_file", CI_VALUES, ids=lambda p: p.stem)
def test_server_side_dry_run_against_the_fake_server(
    helm: Any, fakekube: FakeKube, values_file: Path, tmp_path: Path, kube_env: dict[str, str]
) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    install_crds(fakekube)
    docs = render(helm, values_file)
    # As on a real server, a dry run cannot place objects in a namespace it did not create
    # (helm install --create-namespace, or kubectl create namespace, comes first).
    fakekube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    served = [d for d in docs if d["kind"] not in NOT_SERVED_BY_FAKEKUBE]
    manifest = tmp_path / "rendered.yaml"
    manifest.write_text(yaml.safe_dump_all(served))
    done = subprocess.run(
        [
            KUBECTL,
            "--kubeconfig",
            str(fakekube.kubeconfig),
            "apply",
            "--dry-run=server",
            "-f",
            str(manifest),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=kube_env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("(server dry run)") == len(served)
    assert fakekube.list("Deployment", NAMESPACE, "apps/v1") == []


@pytest.mark.e2e
def test_helm_installs_upgrades_and_uninstalls_on_a_fresh_fake_cluster(
    helm: Any, fakekube: FakeKube
) -> None:
    """The real Helm install path (Helm's kube client, release Secret, crds/) end to end."""
    install_crds(fakekube, chart_crds=False)  # cert-manager, prometheus-operator: as installed
    values = values_of(CHART / "ci" / "monitoring-values.yaml")
    # Release records in memory: Helm's typed client deletes its release Secret with a
    # protobuf DeleteOptions body, which the fake server does not decode (docs/fakekube.md).
    config = helm.Config(
        kubeconfig_path=str(fakekube.kubeconfig), namespace=NAMESPACE, storage_driver="memory"
    )
    try:
        release = config.install(
            str(CHART), RELEASE, values, namespace=NAMESPACE, create_namespace=True, timeout=60
        )
        assert release["status"] == "deployed"
        crd = fakekube.get(
            "CustomResourceDefinition",
            "carbonclusters.carbonshift.io",
            "",
            "apiextensions.k8s.io/v1",
        )
        assert crd["spec"]["group"] == "carbonshift.io"  # from the chart's crds/
        deployments = {
            d["metadata"]["name"] for d in fakekube.list("Deployment", NAMESPACE, "apps/v1")
        }
        assert deployments == {"carbonshift-controller", "carbonshift-hub"}
        rules = fakekube.list("PrometheusRule", NAMESPACE, "monitoring.coreos.com/v1")
        assert [r["metadata"]["name"] for r in rules] == ["carbonshift"]

        values["controller"] = {"replicas": 3}
        upgraded = config.upgrade(str(CHART), RELEASE, values, namespace=NAMESPACE, timeout=60)
        assert upgraded["revision"] == 2
        controller = fakekube.get("Deployment", "carbonshift-controller", NAMESPACE, "apps/v1")
        assert controller["spec"]["replicas"] == 3

        config.uninstall(RELEASE, timeout=60)
        assert fakekube.list("Deployment", NAMESPACE, "apps/v1") == []
        assert fakekube.list("PrometheusRule", NAMESPACE, "monitoring.coreos.com/v1") == []
        crds = fakekube.list("CustomResourceDefinition", None, "apiextensions.k8s.io/v1")
        assert "carbonclusters.carbonshift.io" in {c["metadata"]["name"] for c in crds}
    finally:
        config.close()


@pytest.mark.e2e
def test_an_upgrade_keeps_the_generated_certificate(helm: Any, fakekube: FakeKube) -> None:
    config = helm.Config(kubeconfig_path=str(fakekube.kubeconfig), namespace=NAMESPACE)
    try:
        config.install(
            str(CHART), RELEASE, {}, namespace=NAMESPACE, create_namespace=True, timeout=60
        )
        before = fakekube.get("Secret", "carbonshift-tls", NAMESPACE)["data"]
        config.upgrade(
            str(CHART), RELEASE, {"controller": {"replicas": 1}}, namespace=NAMESPACE, timeout=60
        )
        after = fakekube.get("Secret", "carbonshift-tls", NAMESPACE)["data"]
        assert after == before  # lookup found the Secret: webhook clients keep trusting it
        webhook = fakekube.get(
            "MutatingWebhookConfiguration", "carbonshift", "", "admissionregistration.k8s.io/v1"
        )
        assert webhook["webhooks"][0]["clientConfig"]["caBundle"] == before["ca.crt"]
    finally:
        config.close()


@pytest.mark.e2e
async def test_the_installed_webhook_holds_a_pod_with_the_charts_certificate(
    helm: Any, fakekube: FakeKube, tmp_path: Path
) -> None:
    """Helm installs the chart; a controller runs with the chart's config.yaml and generated
    certificate; the fake API server calls it through the chart's webhook configuration,
    verifying TLS against the chart's caBundle for carbonshift-webhook.<ns>.svc."""
    from carbonshift.k8s.clock import ExternalClock
    from tests.k8s.certs import Certs
    from tests.k8s.harness import Harness
    from tests.k8s.objects import pod

    def install() -> None:
        config = helm.Config(
            kubeconfig_path=str(fakekube.kubeconfig), namespace=NAMESPACE, storage_driver="memory"
        )
        try:
            config.install(
                str(CHART), RELEASE, {}, namespace=NAMESPACE, create_namespace=True, timeout=60
            )
        finally:
            config.close()

    await asyncio.to_thread(install)
    await asyncio.to_thread(
        fakekube.create, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "batch"}}
    )
    secret = (await asyncio.to_thread(fakekube.get, "Secret", "carbonshift-tls", NAMESPACE))["data"]
    cert_file, key_file = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert_file.write_bytes(base64.b64decode(secret["tls.crt"]))
    key_file.write_bytes(base64.b64decode(secret["tls.key"]))
    config_map = await asyncio.to_thread(fakekube.get, "ConfigMap", "carbonshift-config", NAMESPACE)
    raw = yaml.safe_load(config_map["data"]["config.yaml"])
    for server in ("webhook", "extender", "metrics"):  # loopback, any free port, the files here
        raw[server].update(host="127.0.0.1", port=0)
    for server in ("webhook", "extender"):
        raw[server].update(cert_file=str(cert_file), key_file=str(key_file))
    harness = Harness(
        fakekube,
        ExternalClock(fakekube.now, poll_s=3600.0),
        Certs(base64.b64decode(secret["ca.crt"]), cert_file, key_file),
    )
    await harness.start(parse_config(raw))
    try:
        await harness.create(pod("p", created=None))
        created = await harness.get("Pod", "p")
        assert [g["name"] for g in created["spec"]["schedulingGates"]] == ["carbonshift.io/hold"]
    finally:
        await harness.stop()
