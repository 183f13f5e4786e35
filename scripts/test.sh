#!/bin/sh
# Install what is missing, build, and run the whole test suite.
#   scripts/test.sh              normal build (./build)
#   scripts/test.sh --sanitize   AddressSanitizer + UndefinedBehaviorSanitizer build (./build-asan)
set -eu
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
    export BUILDDIR="${BUILDDIR:-build-asan}"
    export MESON_ARGS="${MESON_ARGS:-} -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug"
    export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
fi
scripts/setup.sh
meson test -C "${BUILDDIR:-build}" --print-errorlogs
