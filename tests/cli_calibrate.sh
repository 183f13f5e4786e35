#!/bin/sh
# spsim calibrate from the command line: exit codes, the written profile through `spsim check`,
# `spsim collective` on it against the log's measured times (issue 5: within 10 % from 1 MiB),
# and an existing output left as it was when a run fails. Then --runs: a runs file of spsim's
# sweep columns fitted into a profile `spsim check` accepts, labelled fitted; every row spsim
# cannot state refused with exit 3 and one line naming the file, the line and the reason;
# --help explains --runs.
# Usage: cli_calibrate.sh SPSIM SOURCE_ROOT
set -u
spsim=$1
logs=$2/tests/data/nccl-tests
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spsim=$(sh "$(dirname "$0")/wrap_spsim.sh" "$spsim" "$tmp") || exit 1

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# expect CODE COMMAND...: run it, stdout to $tmp/out, stderr to $tmp/err, check the exit code
expect() {
    want=$1
    shift
    "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    [ "$got" = "$want" ] || fail "'$*' exited $got, expected $want: $(cat "$tmp/err")"
}

# reproduces PROFILE OP GPUS NODES LOG: spsim collective within 10 % of every row >= 1 MiB
reproduces() {
    awk 'NF == 13 && $3 == "float" && $1 >= 1048576 { print $1, $6 }' "$5" >"$tmp/measured"
    [ -s "$tmp/measured" ] || fail "no rows >= 1 MiB in $5"
    sizes=$(awk '{ printf "%s%s", sep, $1; sep = "," }' "$tmp/measured")
    expect 0 "$spsim" collective --hw "$1" --op "$2" --gpus "$3" --nodes "$4" --bytes "$sizes" \
        --format csv
    tail -n +2 "$tmp/out" | cut -d, -f6 | paste -d' ' "$tmp/measured" - |
        awk '{ e = ($3 * 1e6 - $2) / $2; if (e < 0) e = -e; if (e > 0.10) { print; bad = 1 } }
             END { exit bad }' || fail "$1: spsim collective is more than 10 % off $5"
}

a100=$logs/a100x8_all_reduce_thanos_threads.txt
azure=$logs/a100x8x2nodes_ib_hdr_all_reduce_azure_ndmv4_aks.txt

expect 0 "$spsim" calibrate --help
grep -q -- "--from-nccl-tests LOG" "$tmp/out" || fail "--help does not show --from-nccl-tests"

# Usage errors (2), input errors (3).
expect 2 "$spsim" calibrate --from-nccl-tests "$a100"
grep -q "^spsim: error: -o OUT.json is required" "$tmp/err" || fail "no -o: $(cat "$tmp/err")"
expect 2 "$spsim" calibrate --from-nccl-tests "$azure" -o "$tmp/x.json"
grep -q "names no GPU; give the base profile with --base" "$tmp/err" || fail "azure without --base"
expect 2 "$spsim" calibrate --from-nccl-tests "$a100" --op broadcast -o "$tmp/x.json"
expect 2 "$spsim" calibrate --from-nccl-tests "$a100" --iters 5 -o "$tmp/x.json"
expect 2 "$spsim" calibrate --from-nccl-tests "$a100" --fp8 -o "$tmp/x.json"
grep -q -- "--fp8 are for measuring on the local GPUs" "$tmp/err" || fail "--fp8 with logs"
printf '#  Rank  0 Group  0 Pid 1 on h device 0 [0x07] NVIDIA A100-SXM4-80GB\n     1048576  262144  float  sum  -1  52.61  19.93\n' >"$tmp/trunc.txt"
expect 3 "$spsim" calibrate --from-nccl-tests "$tmp/trunc.txt" --gpus 8 --op all_reduce -o "$tmp/x.json"
grep -q "trunc.txt: line 2: truncated data row" "$tmp/err" || fail "truncated: $(cat "$tmp/err")"
expect 3 "$spsim" calibrate --from-nccl-tests "$tmp/none.txt" -o "$tmp/x.json"
[ ! -e "$tmp/x.json" ] || fail "a failed run wrote $tmp/x.json"

# The GPU path without GPU support, or without a GPU: exit 5 and one line.
if ! (command -v nvidia-smi && nvidia-smi -L) >/dev/null 2>&1; then
    expect 5 "$spsim" calibrate -o "$tmp/gpu.json"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "GPU path: $(cat "$tmp/err")"
    expect 5 "$spsim" calibrate --fp8 -o "$tmp/gpu.json"
    [ ! -e "$tmp/gpu.json" ] || fail "the GPU path wrote a profile without a GPU"
fi

# Calibrate, check, reproduce: one node (base from the GPU name) and two nodes (--base).
expect 0 "$spsim" calibrate --from-nccl-tests "$a100" -o "$tmp/a100.json"
grep -q "^# wrote $tmp/a100.json" "$tmp/out" || fail "no 'wrote' line"
expect 0 "$spsim" check "$tmp/a100.json"
reproduces "$tmp/a100.json" all_reduce 8 1 "$a100"
expect 0 "$spsim" calibrate --from-nccl-tests "$azure" --base dgx-a100-80g -o "$tmp/azure.json"
expect 0 "$spsim" check "$tmp/azure.json"
reproduces "$tmp/azure.json" all_reduce 16 2 "$azure"

# A failed run leaves an existing profile as it was.
cp "$tmp/a100.json" "$tmp/keep.json"
expect 3 "$spsim" calibrate --from-nccl-tests "$tmp/trunc.txt" --gpus 8 --op all_reduce \
    -o "$tmp/keep.json"
cmp -s "$tmp/a100.json" "$tmp/keep.json" || fail "a failed run changed $tmp/keep.json"

# ---- --runs: measured training runs ----

# refused FILE LINE NEEDLE: exit 3, one line on stderr naming FILE: line LINE and NEEDLE, and the
# output left alone
refused() {
    echo old >"$tmp/old.json"
    expect 3 "$spsim" calibrate --runs "$1" --no-cross-validate -o "$tmp/old.json"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$1: not one line: $(cat "$tmp/err")"
    grep -q "^spsim: error: $1: line $2: .*$3" "$tmp/err" || fail "$1: $(cat "$tmp/err")"
    [ "$(cat "$tmp/old.json")" = old ] || fail "$1: the output was replaced"
}

expect 0 "$spsim" calibrate --help
grep -q -- "--runs" "$tmp/out" || fail "calibrate --help does not explain --runs"
grep -q "measured_iteration_s" "$tmp/out" || fail "calibrate --help does not name the time column"

# A runs file: sweep columns (a # comment line, a quoted field, args for an option no column
# has), measured times near what the shipped profile predicts.
cat >"$tmp/runs.csv" <<'CSV'
# two Llama 3 8B runs on DGX H100
model,hw,tp,pp,dp,vpp,mbs,gbs,seq,sp,recompute,measured_iteration_s,id,args
llama3-8b,dgx-h100,1,1,8,1,1,64,4096,false,none,2.9,"first, run",
llama3-8b,dgx-h100,2,1,4,1,1,64,8192,true,none,6.1,second,--no-overlap-grad-reduce
CSV
expect 0 "$spsim" calibrate --runs "$tmp/runs.csv" --no-cross-validate -o "$tmp/fit.json"
grep -q "first, run" "$tmp/out" || fail "the run's id is not in the report"
grep -q "^#   gemm_bf16 " "$tmp/out" || fail "no gemm_bf16 line: $(cat "$tmp/out")"
expect 0 "$spsim" check "$tmp/fit.json"
grep -q '"kind":[[:space:]]*"fitted"' "$tmp/fit.json" || fail "the profile is not labelled fitted"
grep -q '"name":[[:space:]]*"fit"' "$tmp/fit.json" || fail "the profile's name is not OUT's"

# A profile's multi-token-prediction layers stay (a row's options start from "the profile's",
# not from zero MTP layers): DeepSeek-V3's layout with its MTP depth 'm' is accepted.
printf '%s\n' 'model,hw,measured_iteration_s,args' \
    'deepseek-v3,dgx-h100,30,"--tp 1 --pp 2 --dp 64 --ep 64 --gbs 1024 --seq 4096 --pipeline-layout Et*30|t*31mL"' \
    >"$tmp/mtp.csv"
expect 0 "$spsim" calibrate --runs "$tmp/mtp.csv" --no-cross-validate -o "$tmp/mtp.json"

# Refusals, each one line with the file and line.
printf 'model,hw,tp,measured_iteration_s,colour\nllama3-8b,dgx-h100,1,1,red\n' >"$tmp/r1.csv"
refused "$tmp/r1.csv" 1 "column 'colour' is neither"
printf 'model,hw,tp,mbs,gbs,seq\nllama3-8b,dgx-h100,1,1,8,4096\n' >"$tmp/r2.csv"
refused "$tmp/r2.csv" 1 "no measured_iteration_s column"
printf 'model,hw,dp,gbs,seq,measured_iteration_s\nllama3-8b,dgx-h100,8,64,4096,-2\n' >"$tmp/r3.csv"
refused "$tmp/r3.csv" 2 "not a positive number"
printf 'model,hw,tp,dp,gbs,seq,measured_iteration_s\nllama3-8b,dgx-h100,3,1,3,4096,1\n' >"$tmp/r4.csv"
refused "$tmp/r4.csv" 2 "divisible"
printf 'model,hw,dp,gbs,seq,padded_vocab,measured_iteration_s\nllama3-8b,dgx-h100,8,64,4096,7,1\n' \
    >"$tmp/r5.csv"
refused "$tmp/r5.csv" 2 "column 'padded_vocab' is '7', but the configuration spsim states"
printf 'model,hw,dp,gbs,seq,measured_iteration_s\nllama3-8b,dgx-h100,8,64,4096,1\nllama3-8b,dgx-b200,8,64,4096,1\n' \
    >"$tmp/r6.csv"
refused "$tmp/r6.csv" 3 "one fit is one profile"
printf 'model,hw,dp,gbs,seq,measured_iteration_s,args\nllama3-8b,dgx-h100,8,64,4096,1,--colour red\n' \
    >"$tmp/r7.csv"
refused "$tmp/r7.csv" 2 "colour"
printf 'model,hw,dp,gbs,seq,sp,measured_iteration_s\nllama3-8b,dgx-h100,8,64,4096,maybe,1\n' \
    >"$tmp/r8.csv"
refused "$tmp/r8.csv" 2 "'maybe' is not true or false"
printf 'model,hw,dp,gbs,seq,measured_iteration_s\nllama3-8b,dgx-h100,8,64\n' >"$tmp/r9.csv"
refused "$tmp/r9.csv" 2 "fields, the header has"
printf 'model,hw,dp,gbs,seq,measured_iteration_s\nnot-a-model,dgx-h100,8,64,4096,1\n' >"$tmp/r10.csv"
refused "$tmp/r10.csv" 2 "not-a-model"

# A Megatron-LM training log is one run (tests/data/megatron-logs: BigScience's V100 logs, on
# an A100 profile here only to test the reading): its hardware from --base; a log without
# --base, and one with no iteration line kept, refused in one line naming the file.
meglogs=$2/tests/data/megatron-logs
expect 0 "$spsim" calibrate --runs "$meglogs/meg_gpt2_base_n4_dp1_tp4_pp4-1809579.out" \
    --base dgx-a100-80g --no-cross-validate -o "$tmp/log.json"
grep -q "meg_gpt2_base_n4_dp1_tp4_pp4-1809579.out .* 1.3806 " "$tmp/out" ||
    fail "the log's median 1.3806 s is not in the report: $(cat "$tmp/out")"
expect 3 "$spsim" calibrate --runs "$meglogs/meg_gpt2_base_n4_dp1_tp4_pp4-1809579.out" \
    -o "$tmp/log.json"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "names no hardware: give --base" "$tmp/err" ||
    fail "a log without --base: $(cat "$tmp/err")"
expect 3 "$spsim" calibrate --runs "$meglogs/meg_gpt2_perf_n16.out" --base dgx-a100-80g \
    -o "$tmp/log.json"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "meg_gpt2_perf_n16.out: no measured iteration" "$tmp/err" ||
    fail "a log without a kept iteration: $(cat "$tmp/err")"

# Command-line errors: exit 2.
expect 2 "$spsim" calibrate --runs -o "$tmp/x.json"
expect 2 "$spsim" calibrate --runs "$tmp/runs.csv" --from-nccl-tests -o "$tmp/x.json"
expect 2 "$spsim" calibrate --runs "$tmp/runs.csv" --op all_reduce -o "$tmp/x.json"
expect 2 "$spsim" calibrate --no-cross-validate --from-nccl-tests "$tmp/runs.csv" -o "$tmp/x.json"
exit 0
