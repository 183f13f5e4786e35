#!/bin/sh
# Build the libFuzzer targets (tests/fuzz, doc/fuzzing.md) with clang, ASan and UBSan in
# build-fuzz, and run each for SECONDS (default 25) on its seed corpus: the shipped profiles,
# sweep specs and nccl-tests logs, and tests/fuzz/corpus/TARGET (inputs that once failed).
# Usage: scripts/fuzz.sh [SECONDS [TARGET...]]   (targets: model hardware spec nccl_log cli
# launch yaml hf python)
# New inputs go to build-fuzz/corpus/TARGET, findings to build-fuzz/crash-TARGET-*; exit 1 on
# a finding.
set -eu
cd "$(dirname "$0")/.."
seconds="${1:-25}"
[ $# -gt 0 ] && shift
targets="${*:-model hardware spec nccl_log cli launch yaml hf python}"
dir="${FUZZ_BUILDDIR:-build-fuzz}"
CC=clang BUILDDIR="$dir" \
    MESON_ARGS="-Dfuzz=enabled -Db_sanitize=address,undefined -Db_lundef=false -Dc_args=['-fsanitize=fuzzer-no-link','-fno-sanitize-recover=all']" \
    scripts/setup.sh
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
export SPSIM_DATA_DIR="$PWD"
# Absolute paths: the CLI target runs in a scratch directory of its own.
src="$PWD"
dir=$(cd "$dir" && pwd)
status=0
for t in $targets; do
    case $t in
    model) seeds=$src/models dict=json ;;
    hardware) seeds=$src/hardware dict=json ;;
    spec) seeds=$src/examples/sweeps dict=json ;;
    nccl_log) seeds=$src/tests/data/nccl-tests dict=nccl_log ;;
    cli) seeds="" dict=cli ;;
    launch) seeds=$src/tests/data/megatron dict=launch ;;
    yaml) seeds="$src/tests/data/megatron $src/tests/data/megatron-functional" dict=yaml ;;
    hf) seeds=$src/tests/data/hf dict=hf ;;
    python) seeds="" dict=python ;;
    *) echo "fuzz: unknown target '$t'" >&2; exit 2 ;;
    esac
    mkdir -p "$dir/corpus/$t"
    if [ ! -x "$dir/tests/fuzz/fuzz_$t" ]; then # python: built only with python3-embed
        echo "fuzz: $t not built here, skipped" >&2
        continue
    fi
    echo "fuzz: $t for $seconds s" >&2
    # The embedded interpreter keeps its objects to the end: its leaks are not spsim's.
    leaks=1
    [ "$t" = python ] && leaks=0
    # shellcheck disable=SC2086
    ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=$leaks" \
    "$dir/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -detect_leaks=$leaks \
        -dict="$src/tests/fuzz/$dict.dict" -artifact_prefix="$dir/crash-$t-" -print_final_stats=1 \
        "$dir/corpus/$t" $seeds "$src/tests/fuzz/corpus/$t" 2>"$dir/fuzz-$t.log" || {
        status=1
        tail -n 40 "$dir/fuzz-$t.log" >&2
    }
    grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$dir/fuzz-$t.log" >&2 || true
done
exit $status
