#!/bin/sh
# Install what is missing (Debian/Ubuntu, apt-get, only the packages not yet installed), then
# configure and build. Used by run.sh and test.sh. Environment: BUILDDIR (default: build),
# MESON_ARGS (extra arguments for 'meson setup').
set -eu
cd "$(dirname "$0")/.."

packages="gcc meson ninja-build pkg-config libgsl-dev libcjson-dev check libyaml-dev"
missing=""
for pkg in $packages; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $pkg"
    fi
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" -eq 0 ]; then
        sudo=""
    elif command -v sudo >/dev/null 2>&1; then
        sudo="sudo"
    else
        echo "setup: missing packages:$missing; run as root or install sudo" >&2
        exit 1
    fi
    echo "setup: installing$missing" >&2
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi

builddir="${BUILDDIR:-build}"
if [ ! -f "$builddir/build.ninja" ]; then
    # shellcheck disable=SC2086
    meson setup "$builddir" ${MESON_ARGS:-}
fi
meson compile -C "$builddir"
