#!/bin/sh
# `spsim validate` from the command line: --help, option and configuration errors with their
# documented exit codes, the plan (no GPU needed), atomic -o, and the no-GPU error (exit 5, one
# line on stderr) where no GPU is present. Usage: cli_validate.sh PATH/TO/spsim
set -u
spsim=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
spsim=$(sh "$(dirname "$0")/wrap_spsim.sh" "$spsim" "$tmp") || exit 1
fail=0

# expect CODE WHAT ARGS...: run `spsim validate ARGS`, check its exit status
expect() {
    want=$1
    what=$2
    shift 2
    "$spsim" validate "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL: $what: exit $got, want $want"
        cat "$tmp/err"
        fail=1
    fi
}

# a layer that one GPU can replay
set -- --model gpt3-175b --hw hgx-h200 --tp 1 --no-sp --pp 1 --vpp 1 --gbs 1

expect 0 "--help" --help
grep -q '^Usage: spsim validate' "$tmp/out" || { echo "FAIL: --help text"; fail=1; }
expect 2 "unknown option" --bogus
expect 2 "--iters 0" --iters 0
expect 2 "--format xml" --format xml
expect 2 "stray argument" "$@" extra
expect 3 "missing model file" --model /nonexistent/model.json --plan
expect 4 "SP with tp 1 (Megatron's rule)" --tp 1 --sp --plan

expect 0 "plan" "$@" --plan
# QKV appears three times: forward, dgrad, wgrad (spsim explain's schedule)
n=$(grep -c 'QKV GEMM (column-parallel)' "$tmp/out")
[ "$n" -eq 3 ] || { echo "FAIL: plan lists QKV $n times, want 3"; fail=1; }
grep -q 'device-to-device copies' "$tmp/out" || { echo "FAIL: plan does not say how memory-bound ops are replayed"; fail=1; }

# FP8 as Transformer Engine runs it: the 4 forward GEMMs with cuBLASLt's fast accumulation,
# the 8 dgrad and wgrad GEMMs with the split accumulator
expect 0 "fp8 plan" "$@" --dtype fp8 --plan --format json
n=$(grep -c '"fp8_fast_accum": true' "$tmp/out")
[ "$n" -eq 4 ] || { echo "FAIL: fp8 plan has $n fast-accumulation GEMMs, want 4"; fail=1; }

expect 0 "plan as json to a file" "$@" --plan --format json -o "$tmp/plan.json"
grep -q '"plan_only": true' "$tmp/plan.json" || { echo "FAIL: -o json"; fail=1; }
[ -s "$tmp/out" ] && { echo "FAIL: output went to stdout despite -o"; fail=1; }

"$spsim" validate "$@" --iters 1 --warmup 0 >"$tmp/out" 2>"$tmp/err"
rc=$?
case $rc in
0)
    echo "a GPU is present: the no-GPU error is not tested here"
    ;;
5)
    lines=$(wc -l <"$tmp/err")
    if [ "$lines" -ne 1 ] || ! grep -q '^spsim: error: ' "$tmp/err"; then
        echo "FAIL: no-GPU error is not one 'spsim: error:' line:"
        cat "$tmp/err"
        fail=1
    fi
    [ -s "$tmp/out" ] && { echo "FAIL: output despite the error"; fail=1; }
    ;;
*)
    echo "FAIL: validate without a GPU: exit $rc, want 5 (or 0 on a GPU)"
    cat "$tmp/err"
    fail=1
    ;;
esac
exit $fail
