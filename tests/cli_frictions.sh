#!/bin/sh
# What a new user runs into on the command line (issue 24 item 7): --gpus deriving dp, options
# that contradict each other refused with one line naming both, "did you mean" for every profile
# name, capacities as the GPU reports them beside the marketed size. Usage: cli_frictions.sh SPSIM
set -u
spsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# expect CODE TEXT -- ARGS: exit status CODE and TEXT on standard error.
expect() {
    code=$1 text=$2
    shift 3
    "$spsim" "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    [ "$got" -eq "$code" ] || fail "spsim $*: exit $got, want $code ($(cat "$tmp/err"))"
    grep -qF -- "$text" "$tmp/err" || fail "spsim $*: no '$text' in: $(cat "$tmp/err")"
}

# field PATH ARGS: one number of `spsim query --format json`.
field() {
    path=$1
    shift
    "$spsim" query --format json "$@" 2>/dev/null |
        /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin)
for k in '$path'.split('.'): d=d[k]
print(d)"
}

# --gpus N: dp = N / (tp·cp·pp) (64 / (2·1·4) = 8), the same query as --dp 8.
q="--model llama3-8b --hw dgx-h100 --tp 2 --pp 4 --gbs 512"
[ "$(field config.dp $q --gpus 64)" = 8 ] || fail "--gpus 64 at tp 2, pp 4: dp $(field config.dp $q --gpus 64), want 8"
[ "$(field time.iteration_s $q --gpus 64)" = "$(field time.iteration_s $q --dp 8)" ] ||
    fail "--gpus 64 and --dp 8 differ"
# with cp: 64 / (2·2·4) = 4
[ "$(field config.dp $q --cp 2 --gpus 64)" = 4 ] || fail "--gpus 64 at tp 2, cp 2, pp 4: dp, want 4"
expect 2 "--gpus 60 is not a multiple of tp·cp·pp = 2·1·4 = 8" -- query $q --gpus 60
# with tp and pp left at the paper's defaults (8, 8) the message says so and what to give
expect 2 "--gpus 8 is not a multiple of tp·cp·pp = 8·1·8 = 64 (tp and pp are the defaults, the paper's GPT-3 175B setting: give --tp and --pp, or try 'spsim optimize')" -- query --model llama3-8b --gpus 8
expect 2 "--dp 4 contradicts --gpus 64 (tp·cp·pp = 8 gives dp 8): give one of them" -- \
    query $q --gpus 64 --dp 4

# Contradictions, one line naming both.
m="--model llama3-8b --hw dgx-h100 --tp 8 --pp 1 --gbs 8"
expect 2 "--distributed-optimizer contradicts --zero 0: the distributed optimizer is ZeRO-1" -- \
    query $m --distributed-optimizer --zero 0
expect 2 "--distributed-optimizer contradicts --zero 0" -- query $m --zero 0 --distributed-optimizer
expect 2 "--sp contradicts --no-sp: give one of them" -- query $m --sp --no-sp
expect 2 "--grad-reduce-in-fp32 contradicts --grad-reduce-in-bf16" -- \
    query $m --grad-reduce-in-bf16 --grad-reduce-in-fp32
expect 2 "--zero 1 contradicts --fsdp (ZeRO-3)" -- query $m --zero 1 --fsdp optim_grads_params
expect 2 "--overlap-param-gather contradicts --no-overlap-param-gather" -- \
    query $m --overlap-param-gather --no-overlap-param-gather
# The same sharding said twice is no contradiction, nor is an option before --megatron-args
# (whose file replaces it).
"$spsim" query $m --zero 1 --fsdp optim >/dev/null 2>&1 || fail "--zero 1 --fsdp optim refused"
"$spsim" query $m --distributed-optimizer --zero 1 >/dev/null 2>&1 ||
    fail "--distributed-optimizer --zero 1 refused"
printf -- '--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size 1000 --bf16\n' >"$tmp/flags.sh"
"$spsim" query --hw dgx-h100 --sp --megatron-args "$tmp/flags.sh" --no-sp >/dev/null 2>&1 ||
    fail "--sp before --megatron-args and --no-sp after it refused"

# "Did you mean" for every profile name: misspelt, or a part of a name.
expect 3 "no hardware profile named 'h100'; did you mean 'dgx-h100' or 'dgx-h100-fitted'?" -- query --hw h100
expect 3 "did you mean 'hgx-h200'?" -- query --hw H200
expect 3 "no model profile named 'llama3'; did you mean 'llama3-405b', 'llama3-70b' or 'llama3-8b'?" -- \
    query --model llama3
expect 3 "did you mean 'llama3-8b'?" -- query --model llama3-8

# Capacities: the marketed GB beside what the GPU reports in GiB (H100: 80 GB, 81559 MiB =
# 79.6 GiB; the list said 86 GB, the reported bytes over 10^9).
"$spsim" list hardware >"$tmp/hw" 2>&1 || fail "list hardware exits $?"
head -1 "$tmp/hw" | grep -q " hbmGB    GiB " || fail "list hardware header: $(head -1 "$tmp/hw")"
grep -qE '^dgx-h100 .* 80   79\.6 ' "$tmp/hw" || fail "list hardware H100: $(grep dgx-h100 "$tmp/hw")"
grep -qE '^hgx-h200 .* 141  140\.4 ' "$tmp/hw" || fail "list hardware H200: $(grep hgx-h200 "$tmp/hw")"

# The README said MoE profiles are refused as configurations, and MoE launch lines unread, while
# its "Mixture of experts" section runs both: a MoE profile runs, and the claims are gone.
"$spsim" query --model mixtral-8x7b --hw dgx-h100 --tp 2 --sp --pp 4 --ep 4 --gbs 64 --gpus 32 >/dev/null 2>&1 ||
    fail "a MoE profile does not run"
readme="$(dirname "$0")/../README.md"
for claim in "refuses these as configurations until it models their layers" \
    "Megatron launch lines with \`--num-experts\`."; do
    grep -qF -- "$claim" "$readme" && fail "README still says: $claim"
done

# sweep --top without --feasible-only ranks configurations that do not fit: said on standard
# error (README's Llama 3 70B spec: 2856 valid, 994 that fit), and not with --feasible-only.
spec="$(dirname "$0")/../examples/sweeps/llama3-70b-h100.json"
"$spsim" sweep --spec "$spec" --top 3 --by mfu >/dev/null 2>"$tmp/top" || fail "sweep --top exits $?"
grep -qF -- "--top ranked every valid configuration, 1862 of which do not fit in HBM" "$tmp/top" ||
    fail "sweep --top: no note on the rows that do not fit: $(cat "$tmp/top")"
"$spsim" sweep --spec "$spec" --top 3 --by mfu --feasible-only >/dev/null 2>"$tmp/top" ||
    fail "sweep --top --feasible-only exits $?"
grep -q "do not fit" "$tmp/top" && fail "sweep --top --feasible-only: a note where none applies"

# Figures that look wrong are said why, once (query.c print_exposed_note, print_rates): with TE
# userbuffers an exposed TP time above the collective's own, and HFU below MFU with flash
# attention (the model FLOPs count the whole s×s scores); without flash attention HFU is above
# MFU and nothing is said.
u="--model llama3-8b --hw dgx-h100 --tp 8 --pp 1 --gbs 8"
"$spsim" query $u --tp-comm-overlap >"$tmp/ub" 2>&1 || fail "--tp-comm-overlap query exits $?"
[ "$(grep -c "^  exposed above time: with TE userbuffers the GEMM beside the collective" "$tmp/ub")" = 1 ] ||
    fail "--tp-comm-overlap: the exposed-above-time note is not said once"
grep -q "^  HFU below MFU: the model FLOPs count attention's whole s×s scores" "$tmp/ub" ||
    fail "flash attention: no HFU-below-MFU note"
"$spsim" query $u --no-flash-attn >"$tmp/std" 2>&1 || fail "--no-flash-attn query exits $?"
grep -q "HFU below MFU\|exposed above time" "$tmp/std" && fail "standard attention: a note where none applies"

# --megatron-log: a real training log's configuration, and what it measured beside the
# prediction (tests/data/megatron-logs; figures worked in tests/test_megatron_runs.c).
log="$(dirname "$0")/data/megatron-logs/meg_gpt2_base_n4_dp1_tp4_pp4-1809579.out"
l="--megatron-log $log --hw dgx-a100-80g"
[ "$(field measured.iteration_s $l)" = 1.3805999999999998 ] || fail "--megatron-log: measured $(field measured.iteration_s $l)"
[ "$(field measured.lines $l)" = 17 ] || fail "--megatron-log: lines"
[ "$(field config.tp $l),$(field config.pp $l),$(field config.dp $l)" = 4,4,1 ] || fail "--megatron-log: grid"
"$spsim" query $l >"$tmp/out" 2>/dev/null || fail "--megatron-log table"
grep -q "median of 17 log lines (iterations 40..200, 10 a line); 3 left out" "$tmp/out" ||
    fail "--megatron-log table: $(tail -4 "$tmp/out")"
expect 3 "no measured iteration: 3" -- query --megatron-log "$(dirname "$0")/data/megatron-logs/meg_gpt2_perf_n16.out"
expect 2 "--gpus 32 contradicts the world size 16 of the --megatron-args or --megatron-log file" -- query $l --gpus 32

[ "$failures" -eq 0 ] && echo "cli_frictions: all checks passed"
[ "$failures" -eq 0 ]
