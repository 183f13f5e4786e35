#!/bin/sh
# The doors in and out through the command line: a Hugging Face config.json (file or folder) as
# --model and in `spsim check`, --megatron-args from a file and from standard input, the one
# warning line of unmodelled flags, --format megatron read back by --megatron-args (query and
# optimize), and "did you mean" for profile names and options. Usage: cli_import.sh SPSIM
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

# meta-llama/Meta-Llama-3-8B's config.json (Hugging Face Hub), as published.
mkdir -p "$tmp/Meta-Llama-3-8B"
cat >"$tmp/Meta-Llama-3-8B/config.json" <<'JSON'
{
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 8192,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
}
JSON
"$spsim" check "$tmp/Meta-Llama-3-8B/config.json" >"$tmp/out" 2>&1 ||
    fail "check of the Llama 3 config: $(cat "$tmp/out")"
# The folder and the shipped llama3-8b profile (written from the same config) give the same
# query, but for the name.
cfg="--hw dgx-h100 --tp 2 --pp 2 --vpp 2 --dp 2 --gbs 32 --seq 8192 --format json"
"$spsim" query --model "$tmp/Meta-Llama-3-8B" $cfg >"$tmp/hf.json" || fail "query --model FOLDER"
"$spsim" query --model llama3-8b $cfg >"$tmp/shipped.json"
grep -q '"model": "Meta-Llama-3-8B"' "$tmp/hf.json" || fail "the folder does not name the model"
sed 's/"model": "Meta-Llama-3-8B"/"model": "llama3-8b"/' "$tmp/hf.json" | cmp -s - "$tmp/shipped.json" ||
    fail "the Llama 3 config and the shipped llama3-8b profile differ"
echo '{"model_type": "llama", "num_local_experts": 8}' >"$tmp/mixtral.json"
expect 3 "mixtral.json: field 'num_local_experts': mixture-of-experts layers (Mixtral) are not read for model_type 'llama'" -- check "$tmp/mixtral.json"
expect 3 "field 'num_local_experts'" -- query --model "$tmp/mixtral.json"
# The published MoE configs (tests/data/hf/) read and evaluate (DeepSeek-V3's multi-latent
# attention and MTP layer too: tests/cli_mla.sh); gpt-oss below.
hf="$(dirname "$0")/data/hf"
"$spsim" check "$hf/Mixtral-8x7B-v0.1" "$hf/Qwen3-30B-A3B" "$hf/DeepSeek-V3" >/dev/null ||
    fail "spsim check of the MoE configs"
"$spsim" query --model "$hf/DeepSeek-V3" --hw dgx-h100 --ep 8 --etp 1 --pp 1 --vpp 1 --gbs 8 \
    >"$tmp/out" 2>"$tmp/err" || fail "query of the DeepSeek-V3 config: $(cat "$tmp/err")"
grep -q "g: AllGather of the kv latent" "$tmp/out" || fail "query of the DeepSeek-V3 config: no MLA"
"$spsim" query --model "$hf/Mixtral-8x7B-v0.1" --hw dgx-h100 --ep 4 --etp 1 --dp 4 --gbs 64 \
    >"$tmp/out" 2>"$tmp/err" || fail "query of the Mixtral config with --ep 4: $(cat "$tmp/err")"
grep -q "MoE dispatch and combine" "$tmp/out" || fail "query of the Mixtral config: no MoE lines"

# gpt-oss's learned sinks run on TE's FusedAttention only (utils.py:1113-1155 at TE d0067d0):
# the flash backend is refused, and context parallelism other than a2a.
oss="--model $hf/gpt-oss-120b --hw dgx-h100 --tp 1 --ep 8 --pp 4 --gbs 64 --gpus 64"
expect 4 "field 'attention_backend': flash runs no attention sinks (the model's softmax_type learnable)" -- \
    query $oss --attention-backend flash
expect 4 "field 'cp_comm_type': attention sinks (the model's softmax_type learnable) run with context parallelism only with cp_comm_type a2a" -- \
    query $oss --cp 2 --seq 8192
"$spsim" query $oss --cp 2 --seq 8192 --cp-comm-type a2a >/dev/null 2>"$tmp/err" ||
    fail "gpt-oss at cp 2 over a2a: $(cat "$tmp/err")"
# The published dense and Kimi K2 configs: parameters_total at tp 1 (no vocabulary padding)
# as worked by hand in test_moe_model.c hf_published_counts (Llama 3.1 8B 8,030,261,248; Qwen3-8B
# 8,190,735,360; Kimi K2 1,026,408,209,408 total, 32,861,477,888 active; Qwen2.5-7B
# 7,615,616,512 and Qwen2.5-1.5B 1,543,714,304, their cards' 7.61B and 1.54B; Qwen3-Next
# 79,674,391,296 total, 3,874,929,408 active; Qwen3.5-27B 27,320,697,856: hf_gated_deltanet_counts;
# Nemotron-H-56B 56,324,350,464 and Nemotron 3 Nano 31,577,937,344 total, 3,580,073,408 active:
# hf_nemotron_h_counts; Mixtral-8x22B 140,620,634,112 total, 39,152,031,744 active; the 4-layer
# Mistral 7B v0.1 test config 9,636,096: hf_sliding_windows; Gemma 3 27B's language model
# 27,009,346,304: tests/test_gemma3.c gemma3_27b_parameters; gpt-oss-120b 116,829,156,672
# total, 5,711,982,912 active and gpt-oss-20b 20,914,757,184 and 4,187,440,704:
# test_moe_model.c hf_gpt_oss).
for case in Meta-Llama-3.1-8B:8030261248:8030261248 Qwen3-8B:8190735360:8190735360 \
    Kimi-K2-Instruct:1026408209408:32861477888 Qwen2.5-7B:7615616512:7615616512 \
    Qwen2.5-1.5B:1543714304:1543714304 Qwen3-Next-80B-A3B:79674391296:3874929408 \
    Qwen3.5-27B:27320697856:27320697856 Nemotron-H-56B-Base-8K:56324350464:56324350464 \
    NVIDIA-Nemotron-3-Nano-30B-A3B-BF16:31577937344:3580073408 \
    Mixtral-8x22B-v0.1:140620634112:39152031744 Mistral-7B-v0.1-4L:9636096:9636096 \
    gemma-3-27b:27009346304:27009346304 gpt-oss-120b:116829156672:5711982912 \
    gpt-oss-20b:20914757184:4187440704; do
    name=${case%%:*} active=${case##*:} total=${case#*:}
    total=${total%:*}
    "$spsim" query --model "$hf/$name" --hw dgx-h100 --seq 4096 --tp 1 --pp 1 --format json \
        >"$tmp/out" 2>"$tmp/err" || fail "query of $name: $(cat "$tmp/err")"
    grep -q "\"parameters_total\": $total," "$tmp/out" || fail "$name: parameters_total"
    grep -q "\"parameters_active\": $active," "$tmp/out" || fail "$name: parameters_active"
done
# The shipped Qwen3-Next profile (a hybrid model of 96 pattern layers) at pp 4 without --vpp:
# no interleaving is derived for a hybrid model (Megatron's vp_stage rule needs a layout), so
# the query runs rather than being refused for the vpp 3 that 96 layers would admit.
"$spsim" query --model qwen3-next-80b-a3b --hw dgx-h100 --tp 2 --ep 8 --etp 1 --pp 4 --dp 4 \
    --gbs 256 >"$tmp/out" 2>"$tmp/err" || fail "query of qwen3-next-80b-a3b at pp 4: $(cat "$tmp/err")"
grep -q "GDN\|vpp 1" "$tmp/out" || fail "qwen3-next-80b-a3b at pp 4: no vpp 1"
[ -s "$tmp/err" ] && fail "qwen3-next-80b-a3b warns: $(cat "$tmp/err")"
# Published families spsim does not model: refused naming what their layer has.
expect 3 "'gemma4': sliding-window attention on 5 of 6 layers" -- check "$hf/gemma-4-26B-A4B"
expect 3 "'llama4': chunked attention" -- check "$hf/Llama-4-Scout-17B-16E-Instruct"
expect 3 "'glm_moe_dsa': DeepSeek sparse attention's indexer" -- check "$hf/GLM-5"
expect 3 "'minimax_m2': rotary embedding on part of the head" -- check "$hf/MiniMax-M2.5"
expect 3 "'mimo': MiMo's multi-token prediction layers" -- query --model "$hf/MiMo-7B-Base"
expect 3 "'nemotron-nas': per-layer blocks" -- check "$hf/Llama-3_3-Nemotron-Super-49B-v1"
expect 3 "'deepseek_v4': compressed sparse attention" -- check "$hf/DeepSeek-V4-Flash"
# Gemma 3's post-norms (Megatron-Bridge's TERowParallelLinearLayerNorm) have no Megatron-LM flag:
# its launch line is refused naming them, and the vision tower left out is said.
expect 3 "--format megatron: model gemma-3-27b has post-attention and post-MLP norms" -- \
    query --model "$hf/gemma-3-27b" --hw dgx-h100 --tp 8 --pp 2 --format megatron
grep -qF "the vision tower (vision_config) is not counted" "$tmp/err" ||
    fail "gemma-3-27b: the vision tower left out is not said: $(cat "$tmp/err")"
expect 3 "'falcon': parallel attention and MLP branches" -- check "$hf/Falcon-180B"
# Mistral v0.1's sliding_window on every layer, read as Megatron-Bridge's window_size [W - 1, 0]
# and written back as Megatron-LM's flag.
"$spsim" query --model "$hf/Mistral-7B-v0.1-4L" --hw dgx-h100 --seq 4096 --tp 1 --pp 1 \
    --format megatron 2>"$tmp/err" | grep -q -- "--window-size 1023,0" ||
    fail "Mistral-7B-v0.1-4L: no --window-size 1023,0: $(cat "$tmp/err")"

# HSDP's levels in the text: the replica's shard and, across the replicas, Llama 3 8B's fp32
# gradient shard 4·8,030,261,248 / 8 = 4,015,130,624 B = 3.74 GiB (test_hsdp.c bytes_per_level).
"$spsim" query --model llama3-8b --hw dgx-h100 --tp 1 --pp 1 --dp 16 --gbs 128 --zero 1 \
    --num-distributed-optimizer-instances 2 >"$tmp/hsdp.txt" 2>"$tmp/err" || fail "hsdp query"
grep -qF "sharded over each HSDP replica's 8 of dp·cp = 16 (zero 1)" "$tmp/hsdp.txt" ||
    fail "hsdp: no inner shard line"
grep -qF "across the 2 replicas: gradient shard 3.74 GiB on the wire per rank (network)" \
    "$tmp/hsdp.txt" || fail "hsdp: no outer line: $(grep -i replica "$tmp/hsdp.txt")"
# Megatron-FSDP's HSDP of an MoE model (refused until issue 25): Mixtral 8x7B at ep 8, dp 32,
# R = 2 with the outer sharding: the experts' E = 5,637,144,576 parameters a rank, their shard
# reduce-scattered across the replicas, (1/2)·4E/2 = E B = 5.25 GiB, and the weight shard
# gathered, (1/2)·2E/2 = 2,818,572,288 B = 2.62 GiB (test_hsdp.c fsdp_moe_bytes).
"$spsim" query --model mixtral-8x7b --hw dgx-h100 --tp 1 --pp 1 --dp 32 --ep 8 --gbs 32 --zero 3 \
    --num-distributed-optimizer-instances 2 --outer-dp-sharding-strategy optim \
    >"$tmp/hsdp-moe.txt" 2>"$tmp/err" || fail "hsdp moe query: $(cat "$tmp/err")"
grep -qF "expert gradient shard across the 2 HSDP replicas: 5.25 GiB, weight shards 2.62 GiB on" \
    "$tmp/hsdp-moe.txt" || fail "hsdp moe: no expert outer line: $(grep -i replica "$tmp/hsdp-moe.txt")"

# Out and back in: query JSON equal, from a file named after the model and from stdin.
for conf in "--tp 2 --pp 2 --vpp 2 --dp 2 --gbs 32 --recompute full --no-sp" \
    "--tp 4 --pp 1 --vpp 1 --dp 3 --gbs 12 --mbs 2 --dtype fp8 --distributed-optimizer" \
    "--tp 1 --pp 4 --vpp 3 --dp 2 --gbs 16 --recompute none --no-sp --no-flash-attn --dtype fp16" \
    "--tp 4 --pp 1 --vpp 1 --dp 3 --gbs 12 --distributed-optimizer --use-precision-aware-optimizer --main-grads-dtype bf16 --exp-avg-dtype fp8 --exp-avg-sq-dtype bf16" \
    "--tp 8 --pp 1 --vpp 1 --dp 4 --gbs 16 --zero 1 --distributed-optimizer --num-distributed-optimizer-instances 2" \
    "--tp 8 --pp 1 --vpp 1 --dp 4 --gbs 16 --zero 3 --num-distributed-optimizer-instances 2 --outer-dp-sharding-strategy optim" \
    "--tp 8 --pp 2 --vpp 1 --dp 2 --gbs 16 --cross-entropy-loss-fusion"; do
    "$spsim" query --model gpt3-175b --hw dgx-h100 $conf --format megatron >"$tmp/gpt3-175b.sh" ||
        fail "query --format megatron $conf"
    "$spsim" query --model gpt3-175b --hw dgx-h100 $conf --format json >"$tmp/before.json"
    "$spsim" query --megatron-args "$tmp/gpt3-175b.sh" --hw dgx-h100 --format json \
        >"$tmp/after.json" 2>"$tmp/err" || fail "--megatron-args of $conf: $(cat "$tmp/err")"
    cmp -s "$tmp/before.json" "$tmp/after.json" || fail "round trip of $conf differs"
    [ -s "$tmp/err" ] && fail "round trip of $conf warns: $(cat "$tmp/err")"
    "$spsim" query --megatron-args - --hw dgx-h100 --format json <"$tmp/gpt3-175b.sh" |
        sed 's/"model": "megatron-args"/"model": "gpt3-175b"/' | cmp -s - "$tmp/before.json" ||
        fail "--megatron-args - of $conf differs"
done

# What Megatron-LM's launcher refuses is not written: TE's cross-entropy fusion (arguments.py
# :1697-1702 at d98e8a64) goes out as the native one, a Megatron-Bridge DDP's gather overlapped
# without the reduction (arguments.py:1028) unoverlapped, each said in a comment; the line
# written reads back without a refusal. A launch line with TE's fusion is refused.
"$spsim" query --model gpt3-175b --hw dgx-h100 --tp 8 --pp 2 --vpp 1 --dp 2 --gbs 16 \
    --cross-entropy-fusion-impl te-inplace --format megatron >"$tmp/ce.sh" || fail "export of te"
grep -q "^# Transformer Engine's cross-entropy fusion is Megatron-Bridge's" "$tmp/ce.sh" &&
    grep -q -- "--cross-entropy-loss-fusion" "$tmp/ce.sh" && ! grep -q -- "-impl" "$tmp/ce.sh" ||
    fail "export of te: $(grep -i entropy "$tmp/ce.sh")"
"$spsim" query --megatron-args "$tmp/ce.sh" --hw dgx-h100 >/dev/null 2>"$tmp/err" ||
    fail "export of te does not read back: $(cat "$tmp/err")"
sed 's/--cross-entropy-loss-fusion/--cross-entropy-loss-fusion --cross-entropy-fusion-impl te/' \
    "$tmp/ce.sh" >"$tmp/ce-te.sh"
expect 4 "--cross-entropy-fusion-impl: Transformer Engine cross entropy loss fusion is disabled" \
    -- query --megatron-args "$tmp/ce-te.sh" --hw dgx-h100
printf 'model:\n  num_layers: 4\n  hidden_size: 256\n  num_attention_heads: 4\n  ffn_hidden_size: 1024\n  seq_length: 512\n  max_position_embeddings: 512\n  vocab_size: 1024\n  bf16: true\n  tensor_model_parallel_size: 1\n  cross_entropy_loss_fusion: true\n  cross_entropy_fusion_impl: te\nddp:\n  use_distributed_optimizer: true\n  overlap_grad_reduce: false\n  overlap_param_gather: true\ntrain:\n  global_batch_size: 8\n  micro_batch_size: 1\n' >"$tmp/bridge-ddp.yaml"
"$spsim" query --megatron-args "$tmp/bridge-ddp.yaml" --hw dgx-h100 --gpus 8 --format megatron \
    >"$tmp/bridge-ddp.sh" 2>"$tmp/err" || fail "bridge ddp recipe: $(cat "$tmp/err")"
grep -q "^# the parameter gather overlapped without the gradient reduction is Megatron-Bridge's" \
    "$tmp/bridge-ddp.sh" && ! grep -q -- "--overlap-param-gather" "$tmp/bridge-ddp.sh" &&
    grep -q "^# Transformer Engine's cross-entropy" "$tmp/bridge-ddp.sh" ||
    fail "bridge ddp export: $(cat "$tmp/bridge-ddp.sh")"
"$spsim" query --megatron-args "$tmp/bridge-ddp.sh" --hw dgx-h100 >/dev/null 2>"$tmp/err" ||
    fail "bridge ddp export does not read back: $(cat "$tmp/err")"

# Gated attention, partial rotary embedding and the shared expert's gate (Qwen3-Next's layer
# in a GPT model) go out as --attention-output-gate, --rotary-percent and
# --moe-shared-expert-gate and come back the same.
sed -e 's/"name": "qwen3-30b-a3b"/"name": "gated"/' \
    -e 's/"qk_norm": true,/"qk_norm": true, "attention_output_gate": true, "rotary_percent": 0.25, "shared_expert_ffn_hidden": 768, "moe_shared_expert_gate": true,/' \
    "$(dirname "$0")/../models/qwen3-30b-a3b.json" >"$tmp/gated.json"
gconf="--hw dgx-h100 --tp 2 --pp 1 --ep 4 --etp 1 --dp 4 --gbs 32 --seq 4096"
"$spsim" query --model "$tmp/gated.json" $gconf --format megatron >"$tmp/gated.sh" ||
    fail "query --format megatron of the gated model"
grep -q -- "--attention-output-gate" "$tmp/gated.sh" && grep -q -- "--rotary-percent 0.25" "$tmp/gated.sh" &&
    grep -q -- "--moe-shared-expert-gate" "$tmp/gated.sh" || fail "gated model: flags not written"
"$spsim" query --model "$tmp/gated.json" $gconf --format json >"$tmp/before.json"
"$spsim" query --megatron-args "$tmp/gated.sh" $gconf --format json >"$tmp/after.json" \
    2>"$tmp/err" || fail "--megatron-args of the gated model: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && fail "gated round trip warns: $(cat "$tmp/err")"
grep -v '"model":' "$tmp/before.json" >"$tmp/b" && grep -v '"model":' "$tmp/after.json" >"$tmp/a"
cmp -s "$tmp/b" "$tmp/a" || fail "round trip of the gated model differs"

# A recipe's model.attention_output_gate and rotary_percent (Megatron-Bridge's names) are read:
# 2 layers of h = 256 with 4 heads of 64 gain h·q = 65,536 parameters each with the gate.
for gate in true false; do
    printf 'model:\n  num_layers: 2\n  hidden_size: 256\n  num_attention_heads: 4\n  ffn_hidden_size: 1024\n  seq_length: 512\n  max_position_embeddings: 512\n  vocab_size: 1024\n  attention_output_gate: %s\n  rotary_percent: 0.5\n  position_embedding_type: rope\n  bf16: true\ntrain:\n  global_batch_size: 8\n  micro_batch_size: 1\n' \
        "$gate" >"$tmp/gate-$gate.yaml"
    "$spsim" query --megatron-args "$tmp/gate-$gate.yaml" --hw dgx-h100 --format json \
        >"$tmp/gate-$gate.json" 2>"$tmp/err" || fail "recipe with the output gate $gate: $(cat "$tmp/err")"
    [ -s "$tmp/err" ] && fail "recipe with the output gate $gate warns: $(cat "$tmp/err")"
done
grep -q '"parameters_total": 1973248,' "$tmp/gate-true.json" &&
    grep -q '"parameters_total": 1842176,' "$tmp/gate-false.json" || fail "recipe output gate: parameters"

# The same for an MoE model's expert parallelism (ep, etp, dispatcher).
for conf in "--tp 2 --pp 2 --dp 4 --ep 4 --etp 1 --moe-dispatcher alltoall --gbs 32" \
    "--tp 1 --pp 4 --dp 8 --ep 8 --gbs 64" \
    "--tp 1 --pp 2 --vpp 2 --dp 8 --ep 8 --moe-dispatcher alltoall --gbs 64 --overlap-moe-expert-parallel-comm --delay-wgrad-compute"; do
    "$spsim" query --model mixtral-8x7b --hw dgx-h100 $conf --format megatron >"$tmp/mixtral-8x7b.sh" ||
        fail "query --format megatron $conf"
    "$spsim" query --model mixtral-8x7b --hw dgx-h100 $conf --format json >"$tmp/before.json"
    "$spsim" query --megatron-args "$tmp/mixtral-8x7b.sh" --hw dgx-h100 --format json \
        >"$tmp/after.json" 2>"$tmp/err" || fail "--megatron-args of $conf: $(cat "$tmp/err")"
    cmp -s "$tmp/before.json" "$tmp/after.json" || fail "round trip of mixtral $conf differs"
    [ -s "$tmp/err" ] && fail "round trip of mixtral $conf warns: $(cat "$tmp/err")"
done

# The EP all-to-all overlap: Megatron's rule, and its figures in the query.
expect 4 "field 'vpp': If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when pipeline_model_parallel_size > 1" -- \
    query --model mixtral-8x7b --hw dgx-h100 --tp 1 --pp 2 --dp 8 --ep 8 --moe-dispatcher alltoall --gbs 64 --overlap-moe-expert-parallel-comm
"$spsim" query --model mixtral-8x7b --hw dgx-h100 --tp 1 --pp 2 --vpp 2 --dp 8 --ep 8 --moe-dispatcher alltoall \
    --gbs 64 --overlap-moe-expert-parallel-comm >"$tmp/out" || fail "query with the EP all-to-all overlap"
grep -q "MoE all-to-all beside the other micro-batch's computation: .* hidden, .* exposed" "$tmp/out" ||
    fail "query: no EP overlap line"
# The sweep axes: each point as its query says.
"$spsim" sweep --model mixtral-8x7b --hw dgx-h100 --tp 1 --sp off --pp 2 --vpp 2 --dp 8 --ep 8 --moe-dispatcher alltoall \
    --gbs 64 --overlap-moe-expert-parallel-comm on,off --delay-wgrad-compute on,off --format csv \
    >"$tmp/a2a.csv" 2>/dev/null || fail "sweep over the EP overlap axes"
[ "$(wc -l <"$tmp/a2a.csv")" -eq 4 ] || fail "sweep over the EP overlap axes: not 3 valid points"
for flags in "" "--overlap-moe-expert-parallel-comm" "--overlap-moe-expert-parallel-comm --delay-wgrad-compute"; do
    "$spsim" query --model mixtral-8x7b --hw dgx-h100 --tp 1 --no-sp --pp 2 --vpp 2 --dp 8 --ep 8 --moe-dispatcher alltoall \
        --gbs 64 $flags --format csv | tail -1 >"$tmp/row.csv"
    grep -qxF -f "$tmp/row.csv" "$tmp/a2a.csv" || fail "sweep row of '$flags' is not its query's"
done

# optimize's best as a launch line: its CSV row is the query of that line.
opt="--model llama3-8b --hw dgx-h100 --gpus 16 --gbs 64 --tp 1,2,4 --pp 1,2"
"$spsim" optimize $opt --format megatron >"$tmp/llama3-8b.sh" 2>/dev/null || fail "optimize --format megatron"
"$spsim" optimize $opt --format csv --top 1 >"$tmp/best.csv" 2>/dev/null
"$spsim" query --megatron-args "$tmp/llama3-8b.sh" --hw dgx-h100 --format csv >"$tmp/line.csv" ||
    fail "query of optimize's launch line"
cmp -s "$tmp/best.csv" "$tmp/line.csv" || fail "optimize's launch line is not its best row"

# Unmodelled flags: one warning line; later options win over the file.
printf '%s\n' 'torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 256 \' \
    '  --num-attention-heads 8 --seq-length 128 --vocab-size 1000 --bf16 \' \
    '  --lr 1e-4 --save /ckpt --tensor-model-parallel-size 2' >"$tmp/small.sh"
"$spsim" query --megatron-args "$tmp/small.sh" --hw dgx-h100 --format json >"$tmp/out" 2>"$tmp/err" ||
    fail "small launch line: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "unmodelled flags: not one line: $(cat "$tmp/err")"
grep -qF "spsim: warning: $tmp/small.sh: flags spsim does not model, left out of its figures: --lr, --save" "$tmp/err" ||
    fail "unmodelled flags not listed: $(cat "$tmp/err")"
grep -q '"dp": 4' "$tmp/out" || fail "dp is not the world size over tp"
"$spsim" query --megatron-args "$tmp/small.sh" --tp 4 --hw dgx-h100 --format json 2>/dev/null |
    grep -q '"tp": 4' || fail "--tp after --megatron-args does not win"
"$spsim" explain --megatron-args "$tmp/small.sh" --hw dgx-h100 >/dev/null 2>&1 || fail "explain --megatron-args"
sed 's/--tensor-model-parallel-size 2/--tensor-model-parallel-size $TP/' "$tmp/small.sh" >"$tmp/var.sh"
expect 3 "var.sh:3: --tensor-model-parallel-size: '\$TP' uses TP, which the file does not set" -- query --megatron-args "$tmp/var.sh"
expect 3 "nowhere.sh: cannot open" -- query --megatron-args "$tmp/nowhere.sh"

# NVFP4: refused without FP4 tensor cores; --fp4-format e2m1 out and back in on GB200.
expect 4 "nvfp4 needs FP4 tensor cores (Blackwell)" -- query --hw dgx-h100 --dtype nvfp4
# B300 has them: the shipped dgx-b300 runs NVFP4, its MFU against the dtype's own dense peak
# ([ML-ACC] @744d01e row 'NVIDIA B300 SXM', column nvfp4, 15000) being bf16's (2250) x 2250/15000.
"$spsim" query --hw dgx-b300 --dtype nvfp4 --format json >"$tmp/b300.json" 2>"$tmp/err" ||
    fail "dgx-b300 --dtype nvfp4: $(cat "$tmp/err")"
/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['time']
sys.exit(abs(d['mfu_dtype'] / d['mfu'] - 2250 / 15000) > 1e-12)" "$tmp/b300.json" ||
    fail "dgx-b300 nvfp4 MFU is not against a 15000 TFLOPS peak: $(grep mfu "$tmp/b300.json")"
printf '%s\n' "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32" \
    "--vocab-size 128 --bf16 --fp8-format hybrid --fp8-dot-product-attention" >"$tmp/dpa.sh"
expect 3 "FP8 attention is not modelled" -- query --megatron-args "$tmp/dpa.sh"
nv="--model gpt3-175b --hw gb200-nvl72 --tp 4 --pp 2 --vpp 2 --dp 2 --gbs 16 --dtype nvfp4
    --distributed-optimizer --fp4-param-gather"
"$spsim" query $nv --format megatron >"$tmp/gpt3-175b.sh" || fail "query --format megatron $nv"
grep -q -- "--fp4-format e2m1" "$tmp/gpt3-175b.sh" || fail "--format megatron of nvfp4 lacks --fp4-format"
grep -q -- "--fp4-param-gather" "$tmp/gpt3-175b.sh" || fail "--format megatron lacks --fp4-param-gather"
"$spsim" query $nv --format json >"$tmp/before.json"
"$spsim" query --megatron-args "$tmp/gpt3-175b.sh" --hw gb200-nvl72 --format json \
    >"$tmp/after.json" 2>"$tmp/err" || fail "--megatron-args of nvfp4: $(cat "$tmp/err")"
cmp -s "$tmp/before.json" "$tmp/after.json" || fail "round trip of nvfp4 differs"
grep -q '"dtype": "nvfp4"' "$tmp/before.json" || fail "query json of nvfp4 lacks its dtype"

# Did you mean.
expect 3 "no model profile named 'llama3-8'; did you mean 'llama3-8b'?" -- query --model llama3-8
expect 3 "no hardware profile named 'dgx-h10'; did you mean 'dgx-h100' or 'hgx-h20'?" -- query --hw dgx-h10
expect 2 "unknown option '--recompte'; did you mean '--recompute'?" -- query --recompte full
expect 2 "unknown option '--topp'; did you mean '--top'?" -- merge --topp 3

for cmd in query explain validate; do
    "$spsim" $cmd --help | grep -q -- "--megatron-args FILE" || fail "$cmd --help lacks --megatron-args"
done
"$spsim" optimize --help | grep -q "megatron" || fail "optimize --help lacks --format megatron"

[ "$failures" -eq 0 ] || exit 1
echo "cli-import: ok"
