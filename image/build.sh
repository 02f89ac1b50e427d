#!/usr/bin/env bash
# Build the carbonshift OCI image with buildah (no daemon: vfs storage, chroot isolation), run
# `carbonshift --version` and `carbonshift controller --check` inside it, and export it as an
# OCI archive. Runs as root on a Debian machine with buildah and debootstrap
# (apt-get install buildah debootstrap); needs Debian's mirror and PyPI. docs/install.md.
#
#   image/build.sh                      -> dist/carbonshift-<version>.oci.tar
#   IMAGE_NAME=registry.example/cs image/build.sh
#
# Environment: IMAGE_NAME (default below; deploy/*/kustomization.yaml name it), PYTHON (to
# build the wheel: needs the `build` package), IMAGE_CACHE (the debootstrapped base is kept
# there between runs), DEBIAN_MIRROR, OUT (where the archive goes), HOST_CA (the CA bundle pip
# trusts during the build; the host's), PIP_INDEX_URL (a PyPI mirror).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE_NAME="${IMAGE_NAME:-ghcr.io/carbonshift/carbonshift}"
PYTHON="${PYTHON:-$(test -x .venv/bin/python && echo .venv/bin/python || echo python3)}"
IMAGE_CACHE="${IMAGE_CACHE:-/var/tmp/carbonshift-image}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
OUT="${OUT:-dist}"
HOST_CA="${HOST_CA:-/etc/ssl/certs/ca-certificates.crt}"
SUITE=bookworm
BASE_PACKAGES=python3,python3-venv
export BUILDAH_ISOLATION=chroot
# vfs storage (works inside containers and on any file system) in a store of our own, so that
# no other store's driver is mixed in. To look at it by hand:
#   buildah --root /var/tmp/carbonshift-image/storage --storage-driver vfs images
store=(--root "$IMAGE_CACHE/storage" --runroot "$IMAGE_CACHE/run" --storage-driver vfs)
buildah() { command buildah "${store[@]}" "$@"; }

for tool in buildah debootstrap; do
  command -v "$tool" >/dev/null || { echo "image/build.sh: $tool is missing; apt-get install buildah debootstrap" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "image/build.sh: run as root (debootstrap and buildah's vfs storage)" >&2; exit 2; }

meta() {  # one field of pyproject.toml's [project]
  python3 -c 'import sys, tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print(eval(sys.argv[1]))' "$1"
}
VERSION="$(meta 'p["version"]')"
LICENSES="$(meta 'p["license"]')"
SOURCE="$(meta 'p["urls"]["Source"]')"
IMAGE="$IMAGE_NAME:$VERSION"
start_s=$SECONDS
step() { echo "== image/build.sh [$((SECONDS - start_s)) s] $*" >&2; }

# 1. The base: Debian minbase with Debian's python3, made here, cached by its recipe.
key="$(echo "$SUITE $BASE_PACKAGES $DEBIAN_MIRROR v1" | sha256sum | cut -c1-12)"
base_tar="$IMAGE_CACHE/base-$SUITE-$key.tar"
if [ ! -s "$base_tar" ]; then
  step "debootstrap $SUITE minbase + $BASE_PACKAGES"
  mkdir -p "$IMAGE_CACHE"
  rootfs="$(mktemp -d "$IMAGE_CACHE/rootfs.XXXXXX")"
  debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$rootfs" "$DEBIAN_MIRROR" >&2
  # what a runtime image never reads: package caches and lists, docs, man pages, translations
  rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* \
    "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/var/log/*
  find "$rootfs"/usr/share/locale -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  tar --numeric-owner -C "$rootfs" -cf "$base_tar.tmp" .
  mv "$base_tar.tmp" "$base_tar"
  rm -rf "$rootfs"
fi

# 2. The wheel of this tree.
wheel="dist/carbonshift-$VERSION-py3-none-any.whl"
if [ ! -s "$wheel" ] || [ -n "$(find src pyproject.toml -newer "$wheel" -print -quit)" ]; then
  step "building $wheel"
  "$PYTHON" -m build --wheel --outdir dist . >&2
fi

# 3. The image, from a build context holding only what the Containerfile copies.
context="$(mktemp -d)"
trap 'rm -rf "$context"; [ -z "${ctr:-}" ] || buildah rm "$ctr" >/dev/null' EXIT
ln "$base_tar" "$context/base.tar" 2>/dev/null || cp "$base_tar" "$context/base.tar"
cp requirements/image.lock "$wheel" image/Containerfile "$context/"
step "buildah bud $IMAGE"
previous="$(buildah images --quiet --noheading "$IMAGE" 2>/dev/null || true)"
pip_args=()  # pip inside the build trusts what the host trusts, and uses the host's index
if [ -s "$HOST_CA" ]; then
  pip_args+=(--volume "$HOST_CA:/run/host-ca.crt:ro" --build-arg PIP_CERT=/run/host-ca.crt)
fi
[ -z "${PIP_INDEX_URL:-}" ] || pip_args+=(--build-arg PIP_INDEX_URL="$PIP_INDEX_URL")
buildah bud --quiet --layers=false --file "$context/Containerfile" --tag "$IMAGE" \
  --build-arg VERSION="$VERSION" --build-arg SOURCE="$SOURCE" --build-arg LICENSES="$LICENSES" \
  "${pip_args[@]}" "$context" >&2

now="$(buildah images --quiet --noheading "$IMAGE")"
if [ -n "$previous" ] && [ "$previous" != "$now" ]; then  # vfs keeps whole copies: drop ours
  buildah rmi "$previous" >/dev/null || true
fi

# 4. Run it: the version, a non-root user, and the controller's configuration check.
step "running carbonshift inside $IMAGE"
ctr="$(buildah from --quiet "$IMAGE")"
got="$(buildah run "$ctr" -- carbonshift --version)"
[ "$got" = "carbonshift $VERSION" ] || { echo "image/build.sh: --version said '$got'" >&2; exit 1; }
uid="$(buildah run "$ctr" -- python3 -c 'import os; print(os.getuid())')"
[ "$uid" != 0 ] || { echo "image/build.sh: the image runs as root" >&2; exit 1; }
buildah run --volume "$PWD/deploy/base/config.yaml:/etc/carbonshift/config.yaml:ro" "$ctr" -- \
  carbonshift controller --check --config /etc/carbonshift/config.yaml
buildah run --volume "$PWD/deploy/hub/hub.yaml:/etc/carbonshift/hub.yaml:ro" "$ctr" -- \
  python3 -c 'import pathlib, carbonshift.k8s.multicluster.config as c; c.load_hub_config(pathlib.Path("/etc/carbonshift/hub.yaml"))'
if buildah run "$ctr" -- python3 -c 'import matplotlib' 2>/dev/null \
  || buildah run "$ctr" -- python3 -c 'import pandas' 2>/dev/null; then
  echo "image/build.sh: the image carries the plotting stack (carbonshift[sim])" >&2; exit 1
fi

# 5. Export.
mkdir -p "$OUT"
archive="$OUT/carbonshift-$VERSION.oci.tar"
rm -f "$archive"
buildah push --quiet "$IMAGE" "oci-archive:$archive:$IMAGE" >&2
size="$(buildah images --format '{{.Size}}' "$IMAGE")"
step "done: $IMAGE (uid $uid, $size unpacked), $archive ($(du -m "$archive" | cut -f1) MB)"
