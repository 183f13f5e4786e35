#!/bin/sh
# CUDA graphs and host launches through the command (issue 12): the options and their errors,
# query's and explain's lines, the JSON fields, and the Megatron launch line and Bridge YAML in
# and out. The shipped profiles price a launch at cudaLaunchKernel's 3.259 us (doc/profiles.md
# "host"), which binds no block of Llama 3 8B at 8192 tokens, so the time is the GPU's but for
# what follows the loss checks' device-to-host wait in each micro-batch (engine/mb_host.c: isinf,
# its bool and forward_step_calc_loss, 6 torch calls at 6.866 us and 5 launches at 3.259 us):
# 16 micro-batches x 57.491 us = 919.856 us. Usage:
# cli_graphs.sh SPSIM
set -u
spsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

cfg="--model llama3-8b --hw dgx-h100 --tp 2 --pp 1 --vpp 1 --dp 4 --gbs 64 --recompute none"
# shellcheck disable=SC2086
"$spsim" query $cfg --format json >"$tmp/eager.json" || fail "query eager exits $?"
# shellcheck disable=SC2086
"$spsim" query $cfg --cuda-graph-impl transformer_engine --cuda-graph-scope attn \
    --format json >"$tmp/te.json" || fail "query te exits $?"
grep -q '"cuda_graph_impl": "transformer_engine"' "$tmp/te.json" || fail "json: impl"
grep -q '"cuda_graph_scope": "attn"' "$tmp/te.json" || fail "json: scope"
grep -q '"kernel_launch_us": 3.259,' "$tmp/te.json" || fail "json: the shipped launch figure"
grep -q '"host_op_us": 42.76,' "$tmp/te.json" || fail "json: the shipped framework-op figure"
h=$(sed -n 's/.*"host_exposed_s": \([0-9.e-]*\),.*/\1/p' "$tmp/te.json")
awk -v h="$h" 'BEGIN { d = h - 919.856e-6; exit !(d < 1e-9 && d > -1e-9) }' ||
    fail "json: the 8B layer's host time beyond the loss checks' wait: $h"
# Where the launches do not bind, the graphs change the launches, not the time.
e=$(grep '"layer_forward_launches"' "$tmp/eager.json")
g=$(grep '"layer_forward_launches"' "$tmp/te.json")
[ "$e" != "$g" ] || fail "json: attn graph leaves the launches at $e"
[ "$(grep '"iteration_s"' "$tmp/eager.json")" = "$(grep '"iteration_s"' "$tmp/te.json")" ] ||
    fail "json: the iteration changed where the launches do not bind"
# shellcheck disable=SC2086
"$spsim" query $cfg --cuda-graph-impl local >"$tmp/q.txt" || fail "query local exits $?"
# backward: the replay and the two RMSNorm weights' main_grad.add_ in their DDP hooks
grep -q "host launches per layer: 1 forward, 3 backward (CUDA graphs local)" "$tmp/q.txt" ||
    fail "query: the launches line"
grep -q "at 3.259 us a launch and 42.76 us a framework op, host-bound time beyond the GPU's: 919.9 us" \
    "$tmp/q.txt" ||
    fail "query: the launch figure's line"
# shellcheck disable=SC2086
"$spsim" query $cfg >"$tmp/plain.txt" || fail "query exits $?"
grep -q "host launches per layer: 15 forward, 23 backward (CUDA graphs none)" "$tmp/plain.txt" ||
    fail "query: eager launches with the shipped figure"
# A profile without host.kernel_launch_us (the hand-worked terms profile) says so.
terms="${SPSIM_DATA_DIR:-.}/tests/data/terms"
"$spsim" query --model "$terms/terms-model.json" --hw "$terms/terms-hw.json" --tp 1 --pp 1 \
    --dp 1 --gbs 2 --cuda-graph-impl local >"$tmp/nofig.txt" || fail "query terms exits $?"
grep -q "host launch cost not modelled: no sourced figure" "$tmp/nofig.txt" ||
    fail "query: says nothing of the missing figure"
# shellcheck disable=SC2086
"$spsim" explain $cfg --cuda-graph-impl transformer_engine --cuda-graph-scope mlp \
    >"$tmp/x.txt" || fail "explain exits $?"
grep -q "^CUDA graphs (transformer_engine mlp)" "$tmp/x.txt" || fail "explain: legend"
grep -qE "^[0-9]+\* +forward +FC1 GEMM" "$tmp/x.txt" || fail "explain: FC1 not marked graphed"
grep -qE "^[0-9]+ +forward +QKV GEMM" "$tmp/x.txt" || fail "explain: QKV marked graphed"

# Bad values: exit 2; Megatron's rules: exit 4 with the field named.
"$spsim" query --cuda-graph-impl cudnn >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "--cuda-graph-impl cudnn: not exit 2"
grep -q "spsim: error: --cuda-graph-impl: 'cudnn'" "$tmp/err" || fail "impl error: $(cat "$tmp/err")"
"$spsim" query --cuda-graph-impl local --cuda-graph-scope attn,lm_head >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "--cuda-graph-scope lm_head: not exit 2"
"$spsim" query --cuda-graph-scope attn >/dev/null 2>"$tmp/err"
[ $? -eq 4 ] || fail "scope without impl: not exit 4"
grep -q "field 'cuda_graph_scope'" "$tmp/err" || fail "scope error: $(cat "$tmp/err")"

# The Megatron launch line: read (the newer --cuda-graph-modules too, and the legacy local +
# full_iteration), written, read back.
cat >"$tmp/run.sh" <<'SH'
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 \
    --num-attention-heads 32 --ffn-hidden-size 14336 --group-query-attention \
    --num-query-groups 8 --seq-length 8192 --max-position-embeddings 8192 --swiglu \
    --normalization RMSNorm --position-embedding-type rope --disable-bias-linear \
    --vocab-size 128256 --micro-batch-size 1 --global-batch-size 64 \
    --tensor-model-parallel-size 2 --sequence-parallel --recompute-activations \
    --recompute-modules core_attn layernorm \
    --cuda-graph-impl transformer_engine --cuda-graph-modules attn mlp --bf16
SH
"$spsim" query --megatron-args "$tmp/run.sh" --hw dgx-h100 --format json >"$tmp/a.json" ||
    fail "megatron-args exits $?"
grep -q '"cuda_graph_scope": "attn+mlp"' "$tmp/a.json" || fail "megatron-args: modules"
grep -q '"recompute_modules": "core_attn+layernorm"' "$tmp/a.json" ||
    fail "megatron-args: recompute modules lost beside the graph modules"
mkdir "$tmp/back"
"$spsim" query --megatron-args "$tmp/run.sh" --hw dgx-h100 --format megatron \
    >"$tmp/back/run.sh" || fail "format megatron exits $?"
grep -q -- "--cuda-graph-scope attn mlp" "$tmp/back/run.sh" || fail "format megatron: scope"
"$spsim" query --megatron-args "$tmp/back/run.sh" --hw dgx-h100 --format json >"$tmp/b.json" ||
    fail "read back exits $?"
cmp -s "$tmp/a.json" "$tmp/b.json" || fail "launch line round trip differs"
sed -e 's/--cuda-graph-impl transformer_engine --cuda-graph-modules attn mlp/--enable-cuda-graph --cuda-graph-scope full_iteration/' \
    -e 's/--recompute-activations//' -e 's/--recompute-modules core_attn layernorm//' \
    "$tmp/run.sh" >"$tmp/legacy.sh"
"$spsim" query --megatron-args "$tmp/legacy.sh" --hw dgx-h100 --format json >"$tmp/l.json" ||
    fail "legacy exits $?"
grep -q '"cuda_graph_impl": "full_iteration"' "$tmp/l.json" || fail "legacy: not full_iteration"
grep -q '"layer_forward_launches": 0,' "$tmp/l.json" || fail "legacy: launches"

# A Megatron-Bridge recipe's YAML.
cat >"$tmp/r.yaml" <<'YAML'
model:
  num_layers: 32
  hidden_size: 4096
  num_attention_heads: 32
  num_query_groups: 8
  ffn_hidden_size: 14336
  seq_length: 8192
  gated_linear_unit: true
  normalization: RMSNorm
  position_embedding_type: rope
  add_bias_linear: false
  vocab_size: 128256
  tensor_model_parallel_size: 2
  sequence_parallel: true
  cuda_graph_impl: transformer_engine
  cuda_graph_scope: attn
  bf16: true
train:
  micro_batch_size: 1
  global_batch_size: 64
YAML
"$spsim" query --megatron-args "$tmp/r.yaml" --hw dgx-h100 --format json >"$tmp/y.json" 2>"$tmp/err" ||
    fail "yaml exits $?: $(cat "$tmp/err")"
grep -q '"cuda_graph_scope": "attn"' "$tmp/y.json" || fail "yaml: scope"

[ "$failures" -eq 0 ] && echo "cli_graphs: all checks passed"
exit $((failures > 0))
