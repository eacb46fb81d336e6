#!/usr/bin/env bash
# A local base image for lorebot's Containerfile, for machines that reach no image
# registry (as the test machines): Debian bookworm's minbase with Python 3.11, made by
# debootstrap and imported with podman. pip inside the build trusts the certificate
# authorities this machine's pip trusts.
#
#   tests/support/make_container_base.sh [IMAGE]     # localhost/lorebot-base:bookworm
set -euo pipefail
IMAGE=${1:-localhost/lorebot-base:bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if podman image exists "$IMAGE"; then
    exit 0
fi
ROOT=$(mktemp -d)
trap 'rm -rf "$ROOT"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$ROOT" "$MIRROR" >/dev/null
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/certs/ca-certificates.crt"
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$ROOT/etc/pip.conf"
fi
rm -rf "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/*
tar -C "$ROOT" -c . | podman import - "$IMAGE" >/dev/null
echo "$IMAGE"
