#!/bin/sh
# The flex token dispatcher (--moe-dispatcher flex, DeepEP and HybridEP backends) through the
# command line: query, explain, sweep, the Megatron launch line and Bridge YAML both ways, and
# the refusals with their exit codes (issue 11). Usage: cli_flex.sh SPSIM
set -u
spsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# DeepSeek-V3 on DGX H100: ep 64 over 8 nodes of 8, group-limited routing (8 groups, 4 kept).
cfg="--model deepseek-v3 --hw dgx-h100 --tp 8 --ep 64 --etp 1 --pp 16 --vpp 1 --dp 8 --gbs 1024
    --first-stage-layers 2 --last-stage-layers 3 --moe-dispatcher flex"
for b in deepep hybridep; do
    # shellcheck disable=SC2086
    "$spsim" query $cfg --moe-flex-dispatcher-backend $b --format json >"$tmp/$b.json" \
        2>"$tmp/err" || fail "query $b: $(cat "$tmp/err")"
    grep -q '"ep_forward_wire_bytes_per_layer": [1-9]' "$tmp/$b.json" || fail "query $b: no EP bytes"
done
# Fewer bytes cross the NICs than alltoall's per-copy exchange: flex's EP time is the smaller.
# shellcheck disable=SC2086
"$spsim" query $cfg --moe-dispatcher alltoall --format json >"$tmp/a2a.json" 2>"$tmp/err" ||
    fail "query alltoall: $(cat "$tmp/err")"
ep_s() { sed -n 's/.*"ep_exposed_s": \([0-9.e+-]*\).*/\1/p' "$1" | head -1; }
awk -v f="$(ep_s "$tmp/hybridep.json")" -v a="$(ep_s "$tmp/a2a.json")" \
    'BEGIN { exit !(f > 0 && f < a) }' || fail "flex EP time not below alltoall's"

# explain: the fused steps, forward and backward, with the backend in the header.
# shellcheck disable=SC2086
"$spsim" explain $cfg --moe-flex-dispatcher-backend hybridep --moe-flex-dispatcher-num-sms 16 \
    >"$tmp/explain" 2>"$tmp/err" || fail "explain: $(cat "$tmp/err")"
grep -qF "flex (hybridep, 16 SMs) dispatcher" "$tmp/explain" || fail "explain: no header"
for row in "flex dispatch (HybridEP: NVLink + RDMA)" "flex combine (HybridEP: NVLink + RDMA)" \
    "permute (received tokens into expert order)"; do
    grep -qF "$row" "$tmp/explain" || fail "explain: no '$row'"
done
grep "backward" "$tmp/explain" | grep -qF "flex dispatch" || fail "explain: no backward dispatch"

# The launch line: written and read back to the same configuration (pp 1: the exporter writes
# no uneven split).
one="--model deepseek-v3 --hw dgx-h100 --tp 8 --ep 64 --etp 1 --pp 1 --dp 8 --gbs 1024
    --moe-dispatcher flex --moe-flex-dispatcher-backend hybridep"
# shellcheck disable=SC2086
"$spsim" query $one --format json >"$tmp/one.json" 2>"$tmp/err" || fail "pp 1: $(cat "$tmp/err")"
# shellcheck disable=SC2086
"$spsim" query $one --moe-flex-dispatcher-num-sms 16 --format megatron >"$tmp/line.sh" \
    2>"$tmp/err" || fail "export: $(cat "$tmp/err")"
for flag in "--moe-token-dispatcher-type flex" "--moe-flex-dispatcher-backend hybridep" \
    "--moe-flex-dispatcher-num-sms 16" "--moe-router-num-groups 8" "--moe-router-group-topk 4"; do
    grep -qF -- "$flag" "$tmp/line.sh" || fail "export: no '$flag'"
done
"$spsim" query --megatron-args "$tmp/line.sh" --hw dgx-h100 --format json >"$tmp/back.json" \
    2>"$tmp/err" || fail "import: $(cat "$tmp/err")"
[ "$(ep_s "$tmp/back.json")" = "$(ep_s "$tmp/one.json")" ] || fail "round trip: EP time"

# Bridge YAML: the recipe's fields.
cat >"$tmp/recipe.yaml" <<'EOF'
model:
  num_layers: 4
  hidden_size: 1024
  num_attention_heads: 8
  ffn_hidden_size: 4096
  seq_length: 4096
  vocab_size: 32768
  num_moe_experts: 16
  moe_router_topk: 2
  moe_ffn_hidden_size: 1024
  moe_router_num_groups: 4
  moe_router_group_topk: 2
  expert_model_parallel_size: 8
  moe_token_dispatcher_type: flex
  moe_flex_dispatcher_backend: hybridep
  moe_hybridep_num_sms: 32
  tensor_model_parallel_size: 1
  bf16: true
train:
  micro_batch_size: 1
  global_batch_size: 8
EOF
"$spsim" query --megatron-args "$tmp/recipe.yaml" --dp 8 --hw dgx-h100 --format megatron \
    >"$tmp/yaml.sh" 2>"$tmp/err" || fail "yaml: $(cat "$tmp/err")"
for flag in "--moe-flex-dispatcher-backend hybridep" "--moe-flex-dispatcher-num-sms 32" \
    "--moe-router-num-groups 4"; do
    grep -qF -- "$flag" "$tmp/yaml.sh" || fail "yaml: no '$flag'"
done

# sweep: flex is a value of the dispatcher axis.
"$spsim" sweep --model mixtral-8x7b --hw dgx-h100 --tp 2 --pp 4 --dp 4 --ep 8 --etp 1 \
    --moe-dispatcher alltoall,flex --gbs 256 >"$tmp/sweep.csv" 2>"$tmp/err" ||
    fail "sweep: $(cat "$tmp/err")"
grep -q ",flex," "$tmp/sweep.csv" || fail "sweep: no flex row"

# Refusals: ncclep is not modelled (exit 2); DeepEP needs etp·ep > 1 (exit 4).
"$spsim" query --moe-flex-dispatcher-backend ncclep >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "'ncclep' (TE NCCL EP) is not modelled" "$tmp/err" || fail "ncclep: $(cat "$tmp/err")"
"$spsim" query --model mixtral-8x7b --hw dgx-h100 --tp 1 --pp 4 --dp 1 --gbs 8 \
    --moe-dispatcher flex >/dev/null 2>"$tmp/err"
[ $? -eq 4 ] && grep -q "DeepEP dispatcher requires TPxEP > 1" "$tmp/err" ||
    fail "deepep ep 1: $(cat "$tmp/err")"

# Qwen3-30B-A3B's aux loss (models/qwen3-30b-a3b.json) all-reduces its tokens-per-expert
# counts over TP at cp 1: the query's breakdown shows that time on its own line, the JSON in
# time.moe_aux_allreduce_s (above 0) and none of it in time.cp_exposed_s.
"$spsim" query --model qwen3-30b-a3b --hw dgx-h100 --tp 2 --sp --ep 8 --etp 1 --pp 1 --dp 32 \
    --gbs 512 >"$tmp/aux.txt" 2>"$tmp/err" || fail "aux query: $(cat "$tmp/err")"
grep -q "MoE aux-loss AllReduces" "$tmp/aux.txt" || fail "no aux-loss line: $(cat "$tmp/aux.txt")"
grep -q "exposed CP exchanges" "$tmp/aux.txt" && fail "cp 1 query names CP exchanges"
"$spsim" query --model qwen3-30b-a3b --hw dgx-h100 --tp 2 --sp --ep 8 --etp 1 --pp 1 --dp 32 \
    --gbs 512 --format json >"$tmp/aux.json" 2>"$tmp/err" || fail "aux json: $(cat "$tmp/err")"
grep -q '"cp_exposed_s": 0,' "$tmp/aux.json" || fail "aux AllReduce in time.cp_exposed_s"
grep -Eq '"moe_aux_allreduce_s": (0\.[0-9]*[1-9]|[1-9])' "$tmp/aux.json" || fail "no time.moe_aux_allreduce_s"

# --moe-routing (src/engine/moe_imbalance.c): random (the default) times the most-loaded EP rank,
# so its iteration and its received EP bytes exceed balanced's; both named in config.moe_routing
# and in explain's header; an unknown value is a usage error (exit 2).
for r in random balanced; do
    # shellcheck disable=SC2086
    "$spsim" query $cfg --moe-routing $r --format json >"$tmp/route-$r.json" 2>"$tmp/err" ||
        fail "query --moe-routing $r: $(cat "$tmp/err")"
    grep -q "\"moe_routing\": \"$r\"" "$tmp/route-$r.json" || fail "no config.moe_routing $r"
done
cmp -s "$tmp/route-random.json" "$tmp/deepep.json" || fail "--moe-routing random is not the default"
it_s() { sed -n 's/.*"iteration_s": \([0-9.e+-]*\).*/\1/p' "$1" | head -1; }
epb() { sed -n 's/.*"ep_forward_wire_bytes_per_layer": \([0-9]*\).*/\1/p' "$1" | head -1; }
awk -v r="$(it_s "$tmp/route-random.json")" -v b="$(it_s "$tmp/route-balanced.json")" \
    -v rb="$(epb "$tmp/route-random.json")" -v bb="$(epb "$tmp/route-balanced.json")" \
    'BEGIN { exit !(r > b && rb > bb) }' || fail "random routing not slower than balanced"
# shellcheck disable=SC2086
"$spsim" explain $cfg >"$tmp/explain-r" 2>"$tmp/err" || fail "explain random: $(cat "$tmp/err")"
grep -qF "random routing: the expected most-loaded EP rank" "$tmp/explain-r" ||
    fail "explain: no random-routing header"
# shellcheck disable=SC2086
"$spsim" query $cfg --moe-routing skewed >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "^spsim: error: --moe-routing: 'skewed' is not one of random, balanced" \
    "$tmp/err" || fail "--moe-routing skewed: $(cat "$tmp/err")"

[ "$failures" -eq 0 ] || exit 1
echo "all flex CLI checks passed"
