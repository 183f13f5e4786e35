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

[ "$failures" -eq 0 ] && echo "cli_frictions: all checks passed"
[ "$failures" -eq 0 ]
