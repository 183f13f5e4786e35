#!/bin/sh
# spsim sweep --columns and the short set at a terminal: the chosen columns are the full rows'
# columns (cut from the full CSV by header position, with awk, not by spsim), in the order
# given; bad lists are usage errors; without a terminal the full header is unchanged.
# Usage: cli_columns.sh SPSIM
set -u
spsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

space="--model llama3-8b --hw dgx-h100,dgx-a100-80g --gpus 16 --tp 1,2,4 --pp 1,2 --vpp 1 --sp off --recompute none,full --gbs 64 --quiet"
# shellcheck disable=SC2086
"$spsim" sweep $space -o "$tmp/full.csv" || fail "full sweep exits $?"
cols="time_mfu,tp,model,memory_total_bytes,hw,recompute"
# shellcheck disable=SC2086
"$spsim" sweep $space --columns "$cols" -o "$tmp/some.csv" || fail "--columns exits $?"
awk -F, -v want="$cols" 'NR == 1 { for (i = 1; i <= NF; i++) at[$i] = i; n = split(want, w, ",") }
    { line = ""; for (j = 1; j <= n; j++) line = line (j > 1 ? "," : "") $(at[w[j]]); print line }' \
    "$tmp/full.csv" >"$tmp/expected.csv"
cmp -s "$tmp/some.csv" "$tmp/expected.csv" || fail "--columns $cols: not the full rows' columns"
[ "$(wc -l <"$tmp/some.csv")" -gt 10 ] || fail "--columns: too few rows"

# JSON Lines: the same keys in the same order.
# shellcheck disable=SC2086
"$spsim" sweep $space --columns tp,time_mfu --format jsonl | head -1 >"$tmp/first.jsonl"
grep -qE '^\{"tp":1,"time_mfu":[0-9.e-]+\}$' "$tmp/first.jsonl" ||
    fail "jsonl --columns: $(cat "$tmp/first.jsonl")"

# Bad lists: exit 2, the name in the message, no output file.
for bad in "tp,nope" "tp,tp" "" "tp,,pp" "tp," ",tp"; do
    # shellcheck disable=SC2086
    "$spsim" sweep $space --columns "$bad" -o "$tmp/bad.csv" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "--columns '$bad': exit $rc, want 2"
    grep -q "^spsim: error: --columns: " "$tmp/err" || fail "--columns '$bad': $(cat "$tmp/err")"
    [ ! -e "$tmp/bad.csv" ] || fail "--columns '$bad' wrote its output"
done

# Not a terminal: every column, the header of `spsim query --format csv`.
# shellcheck disable=SC2086
"$spsim" sweep $space | head -1 >"$tmp/h1"
"$spsim" query --format csv | head -1 >"$tmp/h2"
cmp -s "$tmp/h1" "$tmp/h2" || fail "the full header changed without a terminal"

# A terminal (script(1) gives the command a pseudo-terminal): the short set; of the axes that
# vary, recompute is the one not already among model,hw,tp,pp,dp.
if command -v script >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    script -qec "$spsim sweep $space" /dev/null | tr -d '\r' | head -1 >"$tmp/tty"
    want="model,hw,tp,pp,dp,recompute,memory_total_bytes,memory_fits,time_iteration_s,time_tokens_per_s_per_gpu,time_mfu"
    [ "$(cat "$tmp/tty")" = "$want" ] || fail "terminal header: '$(cat "$tmp/tty")', want '$want'"
else
    echo "script(1) missing: the terminal case is not checked"
fi

# Every output column says its unit (issue 13): bytes, seconds (_s), GiB, FLOP counts or
# rates, or a count that names what it counts (parameters, layers, chunks, micro-batches, ranks,
# buckets, kernel launches), microseconds (_us), a tier, a ratio (MFU, HFU, utilisation, factor), a yes/no or a stage index; the
# rest are the configuration's own options. A new column without one of these fails here.
"$spsim" query --format csv | head -1 | tr ',' '\n' >"$tmp/names"
grep -vE "_bytes($|_)|_s($|_)|_gib$|flops|_per_s|parameters|layers|chunks|microbatches|_ranks$|_buckets$|_launches$|_tensors$|_us$|_tier$|^time_(mfu|hfu)(_dtype)?$|utilisation|factor|_fits$|_stage$" "$tmp/names" |
    grep -vxE "model|hw|tp|pp|dp|vpp|sp|recompute|mbs|gbs|seq|flash_attn|distributed_optimizer|overlap_grad_reduce|dtype|fp8_recipe|fp8_param_gather|first_stage_layers|last_stage_layers|account_embedding|account_loss|gpus|padded_vocab|recompute_modules|recompute_method|recompute_layers|offload_layers|cp|cp_comm_type|zero|grad_reduce_in_fp32|overlap_param_gather|no_overlap_p2p|ddp_bucket_size|tp_comm_overlap|ep|etp|moe_dispatcher|moe_a2a_overlap|delay_wgrad_compute|moe_routing|cuda_graph_impl|cuda_graph_scope|precision_aware_optimizer|main_grads_dtype|main_params_dtype|exp_avg_dtype|exp_avg_sq_dtype|attention_backend|lora_rank|lora_targets|lora_dropout|packed_subseq_len" >"$tmp/unitless"
[ -s "$tmp/unitless" ] && fail "columns without a unit: $(tr '\n' ' ' <"$tmp/unitless")"
[ "$(wc -l <"$tmp/names")" -gt 100 ] || fail "query --format csv: only $(wc -l <"$tmp/names") columns"

[ "$failures" -eq 0 ] || exit 1
echo "ok"
