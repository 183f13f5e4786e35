#!/bin/sh
# The fine-tuning options through the command (issue 25): --lora-rank and
# --lora-target-modules reach the engine and the text report, --packed-subseq-len's rule gives
# the documented configuration error (exit 4). Usage: cli_finetune.sh SPSIM
set -u
spsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# Llama 3 70B, tp 2 (SP), pp 4 × vpp 20: 20 layers a rank, each with linear_qkv's adapter of
# rank 32 split over tp: 32·(8192 + 8192 + 2·1024)/2 = 294 912, 5 898 240 a rank; its fp32
# gradients 4 B each (Megatron's default grad_reduce_in_fp32): 23 592 960 B.
cfg="--model llama3-70b --hw dgx-h100 --tp 2 --sp --pp 4 --vpp 20 --dp 1 --mbs 1 --gbs 32
    --seq 4096 --recompute none --distributed-optimizer"
# shellcheck disable=SC2086
"$spsim" query $cfg --lora-rank 32 --lora-target-modules linear_qkv --format json \
    >"$tmp/q.json" 2>"$tmp/err" || fail "query --lora-rank: $(cat "$tmp/err")"
grep -q '"trainable_parameters_per_gpu": 5898240,' "$tmp/q.json" ||
    fail "trainable parameters: $(grep trainable "$tmp/q.json")"
grep -q '"gradients_bytes": 23592960,' "$tmp/q.json" ||
    fail "gradients: $(grep gradients_bytes "$tmp/q.json")"
# shellcheck disable=SC2086
"$spsim" query $cfg --lora-rank 32 --lora-target-modules linear_qkv >"$tmp/q" 2>"$tmp/err" ||
    fail "query --lora-rank (text): $(cat "$tmp/err")"
grep -q "LoRA adapters (all that is trained) *5.898e+06" "$tmp/q" || fail "no LoRA line in the report"
# Megatron-LM's launch line has no LoRA: the exported line says it trains the whole model.
# shellcheck disable=SC2086
"$spsim" query $cfg --lora-rank 32 --format megatron >"$tmp/launch" 2>"$tmp/err" ||
    fail "query --format megatron: $(cat "$tmp/err")"
grep -q "^# LoRA rank 32 is Megatron-Bridge's (peft), not a pretrain_gpt.py flag" "$tmp/launch" ||
    fail "the launch line does not say LoRA is left out"
# A sub-sequence longer than the packed row: exit 4, the field named.
# shellcheck disable=SC2086
"$spsim" query $cfg --packed-subseq-len 8192 >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 4 ] || fail "--packed-subseq-len 8192 exits $rc, not 4"
grep -q "field 'packed_subseq_len': 8192 exceeds the packed row's 4096 tokens" "$tmp/err" ||
    fail "packed error: $(cat "$tmp/err")"
[ "$failures" -eq 0 ] || exit 1
echo "cli_finetune: all checks passed"
