#!/bin/sh
# --first-last-layers-bf16 through the command (issue 12, engine/bf16_layers.c): the options,
# Megatron's refusals (exit 4, its messages), spsim's limits, bad values (exit 2), the JSON
# fields, explain, and the launch line out and back in. Usage: cli_bf16_layers.sh SPSIM
set -u
spsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# expect CODE TEXT ARGS...: spsim ARGS exits CODE with TEXT in its one-line error.
expect() {
    code=$1
    text=$2
    shift 2
    "$spsim" "$@" >/dev/null 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq "$code" ] || fail "spsim $*: exit $rc, not $code"
    grep -qF -- "$text" "$tmp/err" || fail "spsim $*: '$(cat "$tmp/err")' lacks '$text'"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "spsim $*: not one line"
}

cfg="--model llama3-8b --hw dgx-h100 --tp 2 --sp --pp 2 --vpp 1 --dp 2 --gbs 64"
fp8="--dtype fp8 --fp8-recipe current"
# shellcheck disable=SC2086
{
    expect 4 "field 'first_last_layers_bf16': Delayed scaling does not support first / last layer in BF16." \
        query $cfg --dtype fp8 --first-last-layers-bf16
    expect 4 "num_layers_at_start_in_bf16 (17) must be between 0 and number of layers per pipeline stage (16)." \
        query $cfg $fp8 --first-last-layers-bf16 --num-layers-at-start-in-bf16 17
    expect 4 "num_layers_at_end_in_bf16 (17) must be between 0 and number of layers per pipeline stage (16)." \
        explain $cfg $fp8 --first-last-layers-bf16 --num-layers-at-end-in-bf16 17
    expect 4 "BF16 layers in a mixture-of-experts model are not modelled" \
        query --model mixtral-8x7b --hw dgx-h100 --tp 2 --sp --pp 2 --dp 2 --gbs 64 $fp8 \
        --first-last-layers-bf16
    expect 4 "with a recompute method or offload_layers is not modelled" \
        query $cfg $fp8 --first-last-layers-bf16 --recompute full --recompute-method block \
        --recompute-layers 1
    expect 2 "--num-layers-at-start-in-bf16: '-1' is not an integer in [0, 65536]" \
        query $cfg $fp8 --num-layers-at-start-in-bf16 -1
    expect 2 "--num-layers-at-end-in-bf16: 'x' is not an integer in [0, 65536]" \
        query $cfg $fp8 --num-layers-at-end-in-bf16 x

    "$spsim" query $cfg $fp8 --format json >"$tmp/q.json" || fail "query fp8 exits $?"
    "$spsim" query $cfg $fp8 --first-last-layers-bf16 --num-layers-at-start-in-bf16 2 \
        --format json >"$tmp/b.json" || fail "query bf16 ends exits $?"
    "$spsim" explain $cfg $fp8 --first-last-layers-bf16 >/dev/null || fail "explain exits $?"
    "$spsim" query $cfg $fp8 --first-last-layers-bf16 --num-layers-at-start-in-bf16 2 \
        >"$tmp/b.txt" || fail "query table exits $?"
    "$spsim" query $cfg --first-last-layers-bf16 >"$tmp/p.txt" || fail "query bf16 table exits $?"
    # BF16 training: ignored, as Megatron ignores it.
    "$spsim" query $cfg --format json >"$tmp/p.json" || fail "query bf16 exits $?"
    "$spsim" query $cfg --first-last-layers-bf16 --format json >"$tmp/pb.json" ||
        fail "query bf16 with the flag exits $?"
    "$spsim" query $cfg $fp8 --first-last-layers-bf16 --num-layers-at-end-in-bf16 0 \
        --format megatron >"$tmp/l.sh" || fail "megatron export exits $?"
}
grep -q '"first_last_layers_bf16": true' "$tmp/b.json" || fail "json: the flag"
grep -q " · BF16 layers: first 2, last 1$" "$tmp/b.txt" || fail "table: the BF16 layers"
grep -q "BF16 layers" "$tmp/p.txt" && fail "table: BF16 layers of a bf16 run"
grep -q '"bf16_layers_start": 2' "$tmp/b.json" || fail "json: the start count"
grep -q '"bf16_layers_end": 1' "$tmp/b.json" || fail "json: Megatron's default end count"
# Three BF16 layers are slower than FP8 ones: the iteration grows.
q=$(sed -n 's/.*"iteration_s": \([0-9.e+-]*\).*/\1/p' "$tmp/q.json")
b=$(sed -n 's/.*"iteration_s": \([0-9.e+-]*\).*/\1/p' "$tmp/b.json")
awk -v q="$q" -v b="$b" 'BEGIN { exit !(b > q) }' || fail "iteration $b not above $q"
[ "$(grep '"iteration_s"' "$tmp/p.json")" = "$(grep '"iteration_s"' "$tmp/pb.json")" ] ||
    fail "bf16: the flag changed the iteration"
grep -q -- "--first-last-layers-bf16" "$tmp/l.sh" || fail "megatron: the flag"
grep -q -- "--num-layers-at-start-in-bf16 1" "$tmp/l.sh" || fail "megatron: the start count"
grep -q -- "--num-layers-at-end-in-bf16 0" "$tmp/l.sh" || fail "megatron: the end count"
"$spsim" query --megatron-args "$tmp/l.sh" --hw dgx-h100 --format json >"$tmp/back.json" ||
    fail "launch line read back exits $?"
grep -q '"bf16_layers_end": 0' "$tmp/back.json" || fail "read back: the end count"

[ "$failures" -eq 0 ] && echo "cli_bf16_layers: all checks passed"
exit $((failures > 0))
