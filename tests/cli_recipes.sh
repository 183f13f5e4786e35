#!/bin/sh
# Recipes and launch scripts through the command line: Megatron-Bridge override files merged
# onto a dump and onto --model, --env for a launch script's environment, the warning lines
# (what was assumed, what is not modelled), Megatron-LM's examples as written, and the exit
# codes of what is refused. Usage: cli_recipes.sh SPSIM
set -u
spsim=$1
data="$(dirname "$0")/data/megatron"
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

# json FIELD ARGS: the query's JSON line holding "FIELD".
json() {
    field=$1
    shift
    "$spsim" query "$@" --format json 2>"$tmp/err" | grep -o "\"$field\": [^,}]*" | head -1
}

# A dump, then an override file: the override's sequence and batch, the dump's FP8.
b="$data/bridge"
got=$(json seq --megatron-args "$b/llama3_8b_sft_gb200_fp8_mx_v1.yaml" \
    --megatron-args "$b/llama3_8b_pretrain_override_example.yaml" --hw dgx-h100)
[ "$got" = '"seq": 4096' ] || fail "override on a dump: $got ($(cat "$tmp/err"))"
got=$(json dtype --megatron-args "$b/llama3_8b_sft_gb200_fp8_mx_v1.yaml" \
    --megatron-args "$b/llama3_8b_pretrain_override_example.yaml" --hw dgx-h100)
[ "$got" = '"dtype": "fp8"' ] || fail "override on a dump loses the dump's dtype: $got"
# An override on --model: the model's shape (and name), the file's batch; alone, refused.
got=$(json model --model llama3-8b --megatron-args "$b/quantized_llama3_8b_pretrain_override_example.yaml" \
    --hw dgx-h100 --dp 8)
[ "$got" = '"model": "llama3-8b"' ] || fail "override on --model: $got ($(cat "$tmp/err"))"
[ -s "$tmp/err" ] && fail "override on --model warns: $(cat "$tmp/err")"
got=$(json gbs --model llama3-8b --megatron-args "$b/quantized_llama3_8b_pretrain_override_example.yaml" \
    --hw dgx-h100 --dp 8)
[ "$got" = '"gbs": 8' ] || fail "override on --model: gbs $got"
expect 3 "quantized_llama3_8b_pretrain_override_example.yaml: num_layers (--num-layers): missing" -- \
    query --megatron-args "$b/quantized_llama3_8b_pretrain_override_example.yaml"
# A launch script after recipes replaces them (scripts are not composed).
"$spsim" query --megatron-args "$b/llama3_8b_sft_gb200_fp8_mx_v1.yaml" \
    --megatron-args "$data/train_llama3_8b_h100_fp8.sh" --hw dgx-h100 >/dev/null 2>&1 ||
    fail "a script after a recipe"

# Megatron-LM's Llama 3 example as written: dp 8 on one node; the Mixtral example refused when
# evaluated on one node (ep 8 > dp 2), evaluated on four (--env SLURM_NNODES=4) with its two
# notes: what it assumed, what spsim does not model.
got=$(json dp --megatron-args "$data/train_llama3_8b_h100_fp8.sh" --hw dgx-h100)
[ "$got" = '"dp": 8' ] || fail "the Llama 3 example: $got ($(cat "$tmp/err"))"
expect 4 "world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (32)" -- \
    query --megatron-args "$data/train_mixtral_8x7b_distributed.sh" --hw dgx-h100
got=$(json dp --env SLURM_NNODES=4 --megatron-args "$data/train_mixtral_8x7b_distributed.sh" --hw dgx-h100)
[ "$got" = '"dp": 8' ] || fail "the Mixtral example on four nodes: $got ($(cat "$tmp/err"))"
[ "$(wc -l <"$tmp/err")" -eq 2 ] || fail "the Mixtral example: not two warning lines: $(cat "$tmp/err")"
grep -qF "spsim: warning: $data/train_mixtral_8x7b_distributed.sh: variables the script tests that it does not set, taken as unset: WANDB_API_KEY" "$tmp/err" ||
    fail "the Mixtral example: no note of WANDB_API_KEY: $(cat "$tmp/err")"
expect 2 "--env: '1X=2' is not NAME=VALUE" -- query --env 1X=2 --megatron-args "$data/train_mixtral_8x7b_distributed.sh"
# examples/gptoss/02_train.sh: its defaults (pp 8 over 12 layers) fail Megatron's own
# divisibility check; at pp 4 its 289,445,120 parameters (test_scripts.c gptoss_script).
expect 4 "the model's 12 layers are not divisible by pp·vpp = 8·1 = 8" -- \
    query --megatron-args "$data/gptoss_02_train.sh" --hw dgx-h100
got=$(json parameters_total --megatron-args "$data/gptoss_02_train.sh" --hw dgx-h100 --pp 4 --dp 2)
[ "$got" = '"parameters_total": 289445120' ] || fail "the gpt-oss example at pp 4: $got ($(cat "$tmp/err"))"
# The examples' control flow refused where it cannot be decided, naming the line.
printf '%s\n' 'if [ -f /etc/cluster ]; then TP=2; else TP=4; fi' \
    'pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 128 --vocab-size 1000 --bf16 --tensor-model-parallel-size $TP' \
    >"$tmp/branch.sh"
expect 3 "branch.sh:1: 'if': cannot be decided without running the script (it tests a file (-f))" -- \
    query --megatron-args "$tmp/branch.sh"
# A layout from a recipe is kept by the configuration the query evaluates.
printf '%s\n' 'model:' '  num_layers: 6' '  hidden_size: 256' '  num_attention_heads: 8' \
    '  seq_length: 128' '  vocab_size: 1024' '  bf16: true' '  pipeline_model_parallel_size: 2' \
    '  pipeline_model_parallel_layout: "Et|tttttL"' 'train:' '  global_batch_size: 8' >"$tmp/layout.yaml"
got=$(json layers_first_stage --megatron-args "$tmp/layout.yaml" --hw dgx-h100)
[ "$got" = '"layers_first_stage": 1' ] || fail "a recipe's layout: $got ($(cat "$tmp/err"))"

for cmd in query explain validate; do
    "$spsim" $cmd --help | grep -q -- "--env NAME=VALUE" || fail "$cmd --help lacks --env"
done

[ "$failures" -eq 0 ] || exit 1
echo "cli-recipes: ok"
