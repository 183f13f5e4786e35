#!/bin/sh
# Install what is missing, build, and run the whole test suite.
#   scripts/test.sh              normal build (./build)
#   scripts/test.sh --sanitize   AddressSanitizer + UndefinedBehaviorSanitizer: gcc (./build-asan),
#                                then clang (./build-asan-clang), whose UBSan also checks pointer
#                                arithmetic (-fsanitize=pointer-overflow: NULL + 1)
set -eu
cd "$(dirname "$0")/.."
if [ "${1:-}" != "--sanitize" ]; then
    scripts/setup.sh
    exec meson test -C "${BUILDDIR:-build}" --print-errorlogs
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
# Check's per-case limits (tcase_set_timeout, CK_DEFAULT_TIMEOUT) scale with the sanitizers too.
export CK_TIMEOUT_MULTIPLIER="${CK_TIMEOUT_MULTIPLIER:-3}"
sanitize="-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug"
gcc_dir="${BUILDDIR:-build-asan}"
BUILDDIR="$gcc_dir" MESON_ARGS="${MESON_ARGS:-} $sanitize" scripts/setup.sh
# Sanitized code runs several times slower: the timeouts (set for normal builds) are tripled,
# meson's here and Check's by CK_TIMEOUT_MULTIPLIER above.
meson test -C "$gcc_dir" --print-errorlogs --timeout-multiplier 3
# clang: every check fatal. Its 'undefined' group has pointer-overflow (named here, as it is
# why this build exists: gcc's UBSan does not check NULL + 1).
clang_dir="${CLANG_BUILDDIR:-build-asan-clang}"
CC=clang BUILDDIR="$clang_dir" \
    MESON_ARGS="${MESON_ARGS:-} $sanitize -Dc_args=['-fsanitize=pointer-overflow','-fno-sanitize-recover=all']" \
    scripts/setup.sh
meson test -C "$clang_dir" --print-errorlogs --timeout-multiplier 3
