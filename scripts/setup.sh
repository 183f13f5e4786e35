#!/bin/sh
# Install what is missing (Debian/Ubuntu, apt-get, only the packages not yet installed), then
# configure and build. Used by run.sh and test.sh. Environment: BUILDDIR (default: build),
# MESON_ARGS (extra arguments for 'meson setup'), CC (with CC=clang, clang and its sanitizer and
# libFuzzer runtimes are installed too; the default build needs only gcc). python3-dev and
# python3-matplotlib are for the Python module (BUILD/python: PYTHONPATH=build/python
# /usr/bin/python3 -c 'import spsim') and `spsim plot`; they belong to the system interpreter
# /usr/bin/python3, the one built for. libyaml-dev is for YAML recipes in --megatron-args.
set -eu
cd "$(dirname "$0")/.."

# install_missing PACKAGE...: apt-get install those of them not yet installed.
install_missing() {
    missing=""
    for pkg in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
            missing="$missing $pkg"
        fi
    done
    [ -n "$missing" ] || return 0
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
    # shellcheck disable=SC2086
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
}

install_missing gcc meson ninja-build pkg-config libgsl-dev libcjson-dev check python3-dev \
    python3-matplotlib libyaml-dev
case "${CC:-}" in
*clang*)
    install_missing clang
    # ASan, UBSan and libFuzzer: libclang-rt-N-dev (Debian 12, Ubuntu 22.04 and later), which
    # clang only recommends; older releases ship them in libclang-common-N-dev.
    major=$("${CC}" -dumpversion | cut -d. -f1)
    if apt-cache show "libclang-rt-$major-dev" >/dev/null 2>&1; then
        install_missing "libclang-rt-$major-dev"
    fi
    ;;
esac

builddir="${BUILDDIR:-build}"
if [ ! -f "$builddir/build.ninja" ]; then
    # shellcheck disable=SC2086
    meson setup "$builddir" ${MESON_ARGS:-}
fi
meson compile -C "$builddir"
