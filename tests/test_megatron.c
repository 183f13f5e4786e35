/*
 * Megatron-LM launch lines: Megatron-LM's own example scripts (tests/data/megatron, verbatim)
 * read as bash passes them to torchrun, the flags mapped with Megatron's defaults, the others
 * listed, and errors that name the flag and line; then the round trip of --format megatron:
 * every valid configuration of a sweep written as a launch line and read back evaluates to the
 * same result, field for field.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static char *
read_data(const char *name, size_t *len)
{
    return testutil_megatron_data(name, len);
}

static int
parse(const char *text, struct spsim_megatron_config *mc, struct spsim_error *err)
{
    return spsim_megatron_parse(text, strlen(text), "launch.sh", mc, err);
}

/* A 2-layer GPT of width 64 with `extra` flags after its own, parsed as one launch line. */
static int
parse_small(const char *extra, struct spsim_megatron_config *mc, struct spsim_error *err)
{
    char text[512];
    snprintf(text, sizeof(text),
             "pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 "
             "--seq-length 128 --vocab-size 128 --bf16%s\n",
             extra);
    return parse(text, mc, err);
}

/* As written, one node of 8 GPUs: Megatron's initialize refuses tp 8 · pp 16 ("world size (8)
 * is not divisible by total_model_size"), and spsim names the torchrun flag's line. */
START_TEST(gpt3_example_as_written)
{
    size_t len;
    char *text = read_data("train_gpt3_175b_distributed.sh", &len);
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_megatron_parse(text, len, "train_gpt3_175b_distributed.sh", &mc, &err),
                     SPSIM_ECONFIG);
    ck_assert_str_eq(err.message, "train_gpt3_175b_distributed.sh:22: --nproc_per_node: the "
                                  "world size 8 is not a multiple of tp · pp · cp = 128");
    free(text);
}
END_TEST

/* On 16 nodes: every flag the script gives, read off the script by hand. */
START_TEST(gpt3_example_on_16_nodes)
{
    size_t len;
    char *text = read_data("train_gpt3_175b_distributed.sh", &len);
    char *nodes = strstr(text, "NUM_NODES=1\n");
    ck_assert_ptr_nonnull(nodes);
    memmove(nodes + 12, nodes + 11, strlen(nodes + 11) + 1);
    memcpy(nodes, "NUM_NODES=16", 12);
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_parse(text, strlen(text), "gpt3.sh", &mc, &err) == SPSIM_OK, "%s",
                  err.message);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert_uint_eq(s->layers, 96);
    ck_assert_uint_eq(s->hidden, 12288);
    ck_assert_uint_eq(s->heads, 96);
    ck_assert_uint_eq(s->kv_heads, 96);
    ck_assert_uint_eq(s->head_dim, 128);
    ck_assert_uint_eq(s->ffn_hidden, 4 * 12288); /* no --swiglu, no --ffn-hidden-size */
    ck_assert_uint_eq(s->seq_len, 2048);
    ck_assert_uint_eq(s->vocab, 50257); /* --vocab-file and --merge-file: GPT-2's BPE */
    ck_assert_int_eq(s->mlp, SPSIM_MLP_GELU);
    ck_assert_int_eq(s->norm, SPSIM_NORM_LAYERNORM);
    ck_assert_int_eq(s->position, SPSIM_POSITION_LEARNED);
    ck_assert_int_eq(s->attention, SPSIM_ATTENTION_FLASH); /* --attention-backend auto */
    ck_assert(s->dropout && s->linear_bias && s->tied_embeddings && !s->qkv_bias);
    ck_assert_uint_eq(mc.par.tp, 8);
    ck_assert_uint_eq(mc.par.pp, 16);
    ck_assert_uint_eq(mc.par.dp, 1);
    ck_assert_uint_eq(mc.par.vpp, 1);
    ck_assert_uint_eq(mc.par.mbs, 1);
    ck_assert_uint_eq(mc.par.gbs, 1536);
    ck_assert_uint_eq(mc.par.seq, 2048);
    ck_assert_int_eq(mc.par.dtype, SPSIM_DTYPE_FP16);
    ck_assert(!mc.par.sp && mc.par.recompute == SPSIM_RECOMPUTE_NONE && mc.world_size_given);
    ck_assert(!mc.par.distributed_optimizer && !mc.par.overlap_grad_reduce);
    /* Listed, each once, with no value among them (the batch schedule is one quoted word that
     * the unquoted ${TRAINING_ARGS[@]} splits into six). */
    ck_assert_str_eq(mc.unmodelled,
                     "--master_addr, --master_port, --step-batch-size-schedule, --train-iters, "
                     "--weight-decay, --adam-beta1, --adam-beta2, --init-method-std, "
                     "--clip-grad, --lr, --lr-decay-style, --min-lr, --lr-warmup-fraction, "
                     "--lr-decay-iters, --data-path, --split, --save-interval, "
                     "--eval-interval, --save, --load, --eval-iters");
    spsim_model_destroy(mc.model);
    free(text);
}
END_TEST

/* The Llama 3 8B FP8 example as written: its FP8 flags come from `if [[ "$DTYPE" == "fp8" ]]`
 * (DTYPE=fp8), its data flags from the MOCK branch (TOKENIZER_ARG=${3:-"MOCK"}: no arguments);
 * `if [ ! -f pretrain_gpt.py ]` cannot be decided but exits: the launch passed it. One node of 8
 * GPUs, tp 1: dp 8; Llama 3 8B's 8,030,261,248 parameters (Meta's model card). */
START_TEST(llama3_example_as_written)
{
    size_t len;
    char *text = read_data("train_llama3_8b_h100_fp8.sh", &len);
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_parse(text, len, "llama.sh", &mc, &err) == SPSIM_OK, "%s",
                  err.message);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert(s->layers == 32 && s->hidden == 4096 && s->kv_heads == 8 && s->vocab == 128256);
    ck_assert(s->seq_len == 8192 && s->attention == SPSIM_ATTENTION_FLASH && !s->dropout);
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), 8030261248ull);
    const struct spsim_parallel *p = &mc.par;
    ck_assert(p->tp == 1 && p->pp == 1 && p->dp == 8 && p->gbs == 128 && p->mbs == 1);
    ck_assert(p->dtype == SPSIM_DTYPE_FP8 && p->fp8_recipe == SPSIM_FP8_DELAYED);
    ck_assert(p->fp8_param_gather && p->grad_reduce_in_fp32 == 0 && p->distributed_optimizer);
    ck_assert(p->overlap_grad_reduce && p->overlap_param_gather && !p->sp);
    ck_assert_str_eq(mc.assumed, "");
    ck_assert_ptr_nonnull(strstr(mc.unmodelled, "--fp8-amax-history-len, --fp8-amax-compute-algo"));
    ck_assert_ptr_nonnull(strstr(mc.unmodelled, "--mock-data"));
    ck_assert_ptr_null(strstr(mc.unmodelled, "--data-path")); /* the real-data branch */
    spsim_model_destroy(mc.model);
    free(text);
}
END_TEST

/* An unmodelled flag's name is listed escaped, one line: a quoted name may hold a newline or a
 * terminal escape (the 1-hour fuzz_launch campaign of 2026-12-02 found "--'a<LF>b<ESC>[1J'"
 * listed raw, splitting the list the command prints). */
START_TEST(unmodelled_name_escaped)
{
    const char *text = "pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 "
                       "--seq-length 128 --vocab-size 128 --bf16 --'a\nb\033[1J' x\n";
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(parse(text, &mc, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_ptr_null(strchr(mc.unmodelled, '\n'));
    ck_assert_ptr_null(strchr(mc.unmodelled, '\033'));
    ck_assert_msg(strstr(mc.unmodelled, "--a") == mc.unmodelled, "%s", mc.unmodelled);
    spsim_model_destroy(mc.model);
}
END_TEST

/* --use-megatron-fsdp alone shards weights, gradients and optimizer state: arguments.py
 * (Megatron-LM d98e8a64, line 3190) defaults --data-parallel-sharding-strategy to
 * optim_grads_params (spsim's --zero 3); given, the strategy is read as written. */
START_TEST(megatron_fsdp_default_strategy)
{
    static const struct {
        const char *extra;
        uint32_t zero;
    } cases[] = {{" --use-megatron-fsdp", 3},
                 {" --use-megatron-fsdp --data-parallel-sharding-strategy optim", 1},
                 {" --use-megatron-fsdp --data-parallel-sharding-strategy no_shard", 0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct spsim_megatron_config mc;
        struct spsim_error err = {0};
        ck_assert_msg(parse_small(cases[i].extra, &mc, &err) == SPSIM_OK, "%s", err.message);
        ck_assert_uint_eq(mc.par.zero, cases[i].zero);
        spsim_model_destroy(mc.model);
    }
}
END_TEST

/* --num-layers-per-virtual-pipeline-stage with the account-for flags: arguments.py:959-977
 * @d98e8a64 counts the embedding and the loss as a layer each before it divides, so 6 layers
 * on pp 4 with both flags are (6 + 2) / 4 = 2 a stage, 1 a chunk: vpp 2 (the functional test
 * gpt3_mcore_te_tp1_pp4_vp2_account_for_embedding_loss_in_pipeline_split's shape, said with
 * layers a chunk); 30 on pp 4, 4 a chunk: (30 + 2) / 4 = 8, vpp 2. Without the flags 6 layers
 * do not split into chunks of 1 over 4 stages (6 mod 4 = 2), nor with one of them (7). */
START_TEST(chunk_layers_with_accounted_embedding)
{
    static const struct {
        const char *extra;
        uint32_t vpp;
    } ok[] = {{" --num-layers 6 --num-layers-per-virtual-pipeline-stage 1", 2},
              {" --num-layers 30 --num-layers-per-virtual-pipeline-stage 4", 2}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text),
                 "pretrain_gpt.py --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
                 "--vocab-size 128 --bf16 --pipeline-model-parallel-size 4%s "
                 "--account-for-embedding-in-pipeline-split "
                 "--account-for-loss-in-pipeline-split\n",
                 ok[i].extra);
        struct spsim_megatron_config mc;
        struct spsim_error err = {0};
        ck_assert_msg(parse(text, &mc, &err) == SPSIM_OK, "%s: %s", ok[i].extra, err.message);
        ck_assert_uint_eq(mc.par.vpp, ok[i].vpp);
        ck_assert(mc.par.account_embedding && mc.par.account_loss);
        spsim_model_destroy(mc.model);
    }
    static const char *const refused[] = {"", " --account-for-loss-in-pipeline-split"};
    for (size_t i = 0; i < 2; i++) {
        char text[512];
        snprintf(text, sizeof(text),
                 "pretrain_gpt.py --num-layers 6 --hidden-size 64 --num-attention-heads 4 "
                 "--seq-length 128 --vocab-size 128 --bf16 --pipeline-model-parallel-size 4 "
                 "--num-layers-per-virtual-pipeline-stage 1%s\n",
                 refused[i]);
        struct spsim_megatron_config mc;
        struct spsim_error err = {0};
        ck_assert_int_eq(parse(text, &mc, &err), SPSIM_ECONFIG);
        ck_assert_msg(strstr(err.message, "--num-layers-per-virtual-pipeline-stage: 1 layers "
                                          "per chunk do not divide") != NULL,
                      "%s", err.message);
    }
}
END_TEST

/* --transformer-impl local (gpt_builders.py:139 @d98e8a64: get_gpt_layer_local_spec, its core
 * attention Megatron's DotProductAttention, models/backends.py:131) keeps the s² scores whatever
 * --attention-backend says; transformer_engine (the default) runs TE's flash or fused kernels
 * under auto. A name Megatron-LM knows that spsim does not model is refused, naming the flag. */
START_TEST(transformer_impl_local_attention)
{
    static const struct {
        const char *extra;
        enum spsim_attention attention;
    } cases[] = {{"", SPSIM_ATTENTION_FLASH},
                 {" --transformer-impl transformer_engine", SPSIM_ATTENTION_FLASH},
                 {" --transformer-impl local", SPSIM_ATTENTION_STANDARD},
                 {" --transformer-impl local --attention-backend flash", SPSIM_ATTENTION_STANDARD},
                 {" --attention-backend unfused", SPSIM_ATTENTION_STANDARD}};
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_msg(parse_small(cases[i].extra, &mc, &err) == SPSIM_OK, "%s", err.message);
        ck_assert_int_eq(spsim_model_get_shape(mc.model)->attention, cases[i].attention);
        ck_assert_ptr_null(strstr(mc.unmodelled, "--transformer-impl"));
        spsim_model_destroy(mc.model);
    }
    ck_assert_int_eq(parse_small(" --transformer-impl inference_optimized", &mc, &err),
                     SPSIM_EFIELD);
    ck_assert_ptr_nonnull(
        strstr(err.message, "--transformer-impl: 'inference_optimized' is not modelled"));
}
END_TEST

/* A redirection whose target expands to no word (`> $L` with L empty) drops nothing else: the
 * lexer once took the previous word ("2") for the target and dropped it, and on a command of
 * no words indexed w[-1] (UBSan, the fuzz_launch campaign of 2026-12-02). */
START_TEST(redirection_to_empty_word)
{
    const char *text = "L=\npretrain_gpt.py --num-layers 2 --hidden-size 64 "
                       "--num-attention-heads 4 --seq-length 128 --vocab-size 128 --bf16 "
                       "--global-batch-size 8 --micro-batch-size 2 > $L\n";
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(parse(text, &mc, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(mc.par.mbs, 2);
    ck_assert_uint_eq(mc.par.gbs, 8);
    spsim_model_destroy(mc.model);
    /* no command at all: a here-document marker and an empty target */
    ck_assert_int_ne(parse("<<<<< $L\n", &mc, &err), SPSIM_OK);
    ck_assert_ptr_null(mc.model);
}
END_TEST

/* Bash as Megatron-LM's scripts write it: an array of flags, a variable, a default, quotes, a
 * continuation, --flag=value, a comment, a redirection and a pipe. */
START_TEST(bash_words)
{
    const char *text =
        "TP=2\n"
        "GPT_ARGS=(\n"
        "    --num-layers 4 # four layers\n"
        "    --hidden-size=256\n"
        ")\n"
        "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
        "torchrun --nproc-per-node ${GPUS:-8} pretrain_gpt.py \\\n"
        "    \"${GPT_ARGS[@]}\" --num-attention-heads '8' \\\n"
        "    --tensor-model-parallel-size $TP --seq-length 128 --vocab-size 1000 \\\n"
        "    --bf16 --swiglu --group-query-attention --sequence-parallel \\\n"
        "    --recompute-activations 2>&1 | tee log.txt\n";
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(parse(text, &mc, &err) == SPSIM_OK, "%s", err.message);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert_uint_eq(s->layers, 4);
    ck_assert_uint_eq(s->hidden, 256);
    ck_assert_uint_eq(s->heads, 8);
    ck_assert_uint_eq(s->kv_heads, 1); /* --group-query-attention alone: one group */
    /* SwiGLU's default: int((4 · 256 · 2 / 3) / 64) · 64 = int(682.67 / 64) · 64 = 640 */
    ck_assert_uint_eq(s->ffn_hidden, 640);
    ck_assert_uint_eq(s->seq_len, 128);
    ck_assert_uint_eq(mc.par.tp, 2);
    ck_assert_uint_eq(mc.par.dp, 4);
    ck_assert_uint_eq(mc.par.gbs, 4); /* no --global-batch-size: mbs · dp */
    ck_assert(mc.par.sp && mc.par.recompute == SPSIM_RECOMPUTE_SELECTIVE);
    ck_assert_str_eq(mc.unmodelled, "");
    spsim_model_destroy(mc.model);

    /* The flags alone, one per line; no world size: dp 1. SP without TP is dropped, as
     * Megatron-LM drops it. */
    text = "--num-layers 2\n--hidden-size 64\n--num-attention-heads 4\n--seq-length 32\n"
           "--vocab-size 100\n--fp16\n--sequence-parallel\n--lr 1e-4\n";
    ck_assert_msg(parse(text, &mc, &err) == SPSIM_OK, "%s", err.message);
    ck_assert(!mc.world_size_given && mc.par.dp == 1 && !mc.par.sp);
    ck_assert_str_eq(mc.unmodelled, "--lr");
    spsim_model_destroy(mc.model);
}
END_TEST

/* Errors name the flag and its line (exit 3, or 4 for Megatron's own rules). */
/* Launch lines that end in a bad flag, after a valid head. */
static const struct {
    const char *tail;
    int rc;
    const char *message;
} bad_flags[] = {
    {"--vocab-size 1000 --bf16 --tensor-model-parallel-size $TP", SPSIM_EFIELD,
     "launch.sh:1: --tensor-model-parallel-size: '$TP' uses TP, which the file does not set"},
    {"--vocab-size 1000 --bf16 --micro-batch-size $(echo 2)", SPSIM_EFIELD,
     "launch.sh:1: --micro-batch-size: '$(...)' uses $(...)"},
    {"--vocab-size 1000", SPSIM_EFIELD, "launch.sh: --bf16: missing: without --bf16 or --fp16"},
    {"--bf16", SPSIM_EFIELD, "launch.sh: --vocab-size: missing"},
    {"--vocab-size 1000 --bf16 --expert-model-parallel-size 2", SPSIM_ECONFIG,
     "launch.sh:1: --expert-model-parallel-size: needs --num-experts (arguments.py"},
    {"--vocab-size 1000 --bf16 --num-experts 8 --expert-model-parallel-size 3", SPSIM_ECONFIG,
     "launch.sh:1: --expert-model-parallel-size: 3 does not divide --num-experts 8"},
    {"--vocab-size 1000 --bf16 --num-experts 8 --moe-router-topk 9", SPSIM_EFIELD,
     "launch.sh:1: --moe-router-topk: '9' is not an integer in [1, 8]"},
    {"--vocab-size 1000 --bf16 --num-experts 8 --moe-layer-freq [0]+[1]*2", SPSIM_ECONFIG,
     "launch.sh:1: --moe-layer-freq: '[0]+[1]*2' has 3 entries for 4 layers"},
    {"--vocab-size 1000 --bf16 --num-experts 8 --moe-layer-freq [0]*4", SPSIM_EFIELD,
     "launch.sh:1: --moe-layer-freq: '[0]*4' chooses no mixture-of-experts layer"},
    {"--vocab-size 1000 --bf16 --num-experts 8 --moe-layer-freq [2]*4", SPSIM_EFIELD,
     "launch.sh:1: --moe-layer-freq: '[2]*4': list entries must be 0 (dense) or 1 (MoE)"},
    {"--vocab-size 1000 --bf16 --num-experts 8 --moe-router-score-function sqrtsoftplus",
     SPSIM_EFIELD,
     "launch.sh:1: --moe-router-score-function: 'sqrtsoftplus' is not modelled (spsim models "
     "softmax, sigmoid)"},
    {"--vocab-size 1000 --bf16 --num-experts 8 --moe-expert-capacity-factor 0.5", SPSIM_EFIELD,
     "launch.sh:1: --moe-expert-capacity-factor: '0.5' is not modelled"},
    {"--vocab-size 1000 --bf16 --num-experts 8 --moe-token-dispatcher-type deepep", SPSIM_EFIELD,
     "launch.sh:1: --moe-token-dispatcher-type: 'deepep' is not modelled (spsim models "
     "allgather, alltoall, flex)"},
    {"--vocab-size 1000 --bf16 --multi-latent-attention --group-query-attention "
     "--num-query-groups 2",
     SPSIM_ECONFIG,
     "launch.sh:1: --group-query-attention: Group query attention is mutually exclusive with "
     "multi latent attention"},
    {"--vocab-size 1000 --bf16 --context-parallel-size 2 --cp-comm-type ring", SPSIM_EFIELD,
     "launch.sh:1: --cp-comm-type: 'ring' is not p2p, all_gather, a2a or a2a+p2p"},
    {"--vocab-size 1000 --bf16 --data-parallel-sharding-strategy optim", SPSIM_EFIELD,
     "launch.sh:1: --data-parallel-sharding-strategy: counts only with --use-megatron-fsdp"},
    {"--vocab-size 1000 --bf16 --recompute-granularity full", SPSIM_EFIELD,
     "launch.sh: --recompute-method: missing: full recomputation needs uniform or block"},
    {"--vocab-size 1000 --bf16 --recompute-granularity full --recompute-method stripe",
     SPSIM_EFIELD,
     "launch.sh:1: --recompute-method: 'stripe' is not modelled (spsim models uniform, block)"},
    {"--vocab-size 1000 --bf16 --recompute-granularity selective --recompute-modules "
     "core_attn bogus",
     SPSIM_EFIELD, "launch.sh:1: --recompute-modules: 'core_attn,bogus' is not a list of modules"},
    {"--vocab-size 1000 --bf16 --make-vocab-size-divisible-by 0", SPSIM_EFIELD,
     "launch.sh:1: --make-vocab-size-divisible-by: '0' is not an integer in [1, 16777216]"},
    {"--vocab-size 1000 --bf16 --normalization Foo", SPSIM_EFIELD,
     "launch.sh:1: --normalization: 'Foo' is not modelled (spsim models LayerNorm, RMSNorm)"},
    {"--vocab-size 1000 --bf16 --attention-dropout 0.0", SPSIM_EFIELD,
     "launch.sh:1: --attention-dropout: dropout on attention probabilities or residual"},
    {"--vocab-size 1000 --bf16 --tensor-model-parallel-size", SPSIM_EFIELD,
     "launch.sh:1: --tensor-model-parallel-size: needs a value"},
    {"--vocab-size 1000 --bf16 --tensor-model-parallel-size 0", SPSIM_EFIELD,
     "launch.sh:1: --tensor-model-parallel-size: '0' is not an integer in [1, 65536]"},
    {"--vocab-size 1000 --bf16 --tensor-model-parallel-size 3", SPSIM_ECONFIG,
     "launch.sh:1: --nproc_per_node: the world size 8 is not a multiple of tp · pp · cp = 3"},
    {"--vocab-size 1000 --bf16 --pipeline-model-parallel-size 2 "
     "--num-layers-per-virtual-pipeline-stage 3",
     SPSIM_ECONFIG,
     "launch.sh:1: --num-layers-per-virtual-pipeline-stage: 3 layers per chunk do not divide"},
    {"--vocab-size 1000 --bf16 --group-query-attention --num-query-groups 3", SPSIM_EFIELD,
     "launch.sh:1: --num-query-groups: 3 does not divide --num-attention-heads 8"},
    {"--vocab-size 1000 --bf16 --data-path 'unterminated", SPSIM_EPARSE,
     "launch.sh:1: unterminated single quote"},
    /* A '|' inside an array once looped for ever (found by truncating the examples). */
    {"--vocab-size 1000 --bf16\nA=(\n  --lr 1 | tee\n)", SPSIM_EPARSE,
     "launch.sh:3: '|' inside an array"},
    {"--vocab-size 1000 --bf16\nA=(\n  --lr 1", SPSIM_EPARSE, "launch.sh:2: unterminated array"},
};

START_TEST(errors_name_the_flag)
{
    static const char head[] = "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 "
                               "--hidden-size 256 --num-attention-heads 8 --seq-length 128 ";
    for (size_t i = 0; i < sizeof(bad_flags) / sizeof(bad_flags[0]); i++) {
        char text[1024];
        snprintf(text, sizeof(text), "%s%s\n", head, bad_flags[i].tail);
        struct spsim_megatron_config mc;
        struct spsim_error err = {0};
        int rc = parse(text, &mc, &err);
        ck_assert_msg(rc == bad_flags[i].rc, "%s: rc %d (%s)", bad_flags[i].tail, rc, err.message);
        ck_assert_msg(strncmp(err.message, bad_flags[i].message, strlen(bad_flags[i].message)) == 0,
                      "%s: '%s'", bad_flags[i].tail, err.message);
        ck_assert_ptr_null(mc.model);
    }
}
END_TEST

/* Issue 23: an empty flag name once spun for ever (strstr(p, "") is p), and A="$A$A" lines
 * grew a word exponentially (446 bytes took 28 s and 477 MB): words, arrays and the whole
 * expansion are capped, the error naming the file and the line. */
START_TEST(hostile_launch_lines)
{
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    static const char head[] = "pretrain_gpt.py --num-layers 2 --hidden-size 64 "
                               "--num-attention-heads 4 --seq-length 32 --vocab-size 100 --bf16";
    static char text[1 << 16];
    snprintf(text, sizeof(text), "%s --lr=1 =x\n", head);
    ck_assert_msg(parse(text, &mc, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_str_eq(mc.unmodelled, "--lr");
    spsim_model_destroy(mc.model);

    /* 40 doublings of a one-byte word: 2^40 bytes unless capped. */
    size_t n = (size_t)snprintf(text, sizeof(text), "A=x\n");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "A=\"$A$A\"\n");
    snprintf(text + n, sizeof(text) - n, "%s --lr $A\n", head);
    ck_assert_int_eq(parse(text, &mc, &err), SPSIM_EPARSE);
    ck_assert_str_eq(err.message, "launch.sh:18: a word longer than 65536 bytes (spsim's cap)");
    ck_assert_ptr_null(mc.model);

    /* An array doubled: 2^17 words. */
    n = (size_t)snprintf(text, sizeof(text), "A=(x)\n");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "A=(${A[@]} ${A[@]})\n");
    snprintf(text + n, sizeof(text) - n, "%s ${A[@]}\n", head);
    ck_assert_int_eq(parse(text, &mc, &err), SPSIM_EPARSE);
    ck_assert_str_eq(err.message,
                     "launch.sh:18: more than 65536 words in one array or command (spsim's cap)");

    /* Many words under each cap, on many arrays: the whole expansion is capped. */
    n = (size_t)snprintf(text, sizeof(text), "A=(");
    for (int i = 0; i < 64; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "0123456789abcdef");
    n += (size_t)snprintf(text + n, sizeof(text) - n, ")\nA=\"${A[@]}\"\n");
    for (int i = 0; i < 5; i++) /* 32 KiB */
        n += (size_t)snprintf(text + n, sizeof(text) - n, "A=\"$A$A\"\n");
    for (int i = 0; i < 200; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "B%d=(\"$A\" \"$A\" \"$A\")\n", i);
    ck_assert_int_lt(n, sizeof(text) - 1);
    ck_assert_int_eq(parse(text, &mc, &err), SPSIM_EPARSE);
    ck_assert_msg(strstr(err.message, ": the script expands to more than 16 MiB of words "
                                      "(spsim's cap)") != NULL,
                  "%s", err.message);
}
END_TEST

/* Issue 23, defect 11: 65536 nodes of 65536 processes is dp 2^32, which wrapped to 0 ("dp ...
 * got 0"); the product is checked and named. 2^31 fits and reaches the engine's own limit. */
START_TEST(world_size_checked)
{
    static const char *const text =
        "torchrun --nproc_per_node 65536 --nnodes 65536 pretrain_gpt.py --num-layers 4 "
        "--hidden-size 256 --num-attention-heads 8 --seq-length 128 --vocab-size 1000 --bf16\n";
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_int_eq(parse(text, &mc, &err), SPSIM_ECONFIG);
    ck_assert_str_eq(err.message,
                     "launch.sh:1: --nnodes: the world size 4294967296 over tp · pp "
                     "· cp = 1 is a data-parallel size of 4294967296, beyond 2^32 - 1");
    ck_assert_ptr_null(mc.model);
    ck_assert_int_eq(parse("torchrun --nproc_per_node 65536 --nnodes 32768 pretrain_gpt.py "
                           "--num-layers 4 --hidden-size 256 --num-attention-heads 8 "
                           "--seq-length 128 --vocab-size 1000 --bf16\n",
                           &mc, &err),
                     SPSIM_OK);
    ck_assert_uint_eq(mc.par.dp, 1u << 31);
    spsim_model_destroy(mc.model);
}
END_TEST

/* A configuration's fields, formatted, equal field for field. */
static void
assert_same_result(const struct spsim_result *a, const struct spsim_result *b, const char *text)
{
    const struct spsim_field *fields;
    size_t n = spsim_result_fields(&fields);
    for (size_t i = 0; i < n; i++) {
        char x[64], y[64];
        spsim_field_format(&fields[i], a, x, sizeof(x));
        spsim_field_format(&fields[i], b, y, sizeof(y));
        ck_assert_msg(strcmp(x, y) == 0, "%s: %s against %s after\n%s", fields[i].path, x, y, text);
    }
}

static void
assert_same_shape(const struct spsim_model_shape *a, const struct spsim_model_shape *b)
{
    ck_assert(a->layers == b->layers && a->hidden == b->hidden && a->heads == b->heads);
    ck_assert(a->kv_heads == b->kv_heads && a->head_dim == b->head_dim);
    ck_assert(a->ffn_hidden == b->ffn_hidden && a->vocab == b->vocab);
    ck_assert(a->seq_len == b->seq_len && a->mlp == b->mlp && a->norm == b->norm);
    ck_assert(a->dropout == b->dropout && a->position == b->position);
    ck_assert(a->linear_bias == b->linear_bias && a->tied_embeddings == b->tied_embeddings);
    ck_assert(a->qkv_bias == b->qkv_bias && a->qk_norm == b->qk_norm);
    ck_assert(a->experts == b->experts && a->experts_per_token == b->experts_per_token);
    ck_assert(a->expert_ffn_hidden == b->expert_ffn_hidden);
    ck_assert(a->shared_expert_ffn_hidden == b->shared_expert_ffn_hidden);
    ck_assert(a->router_score == b->router_score && a->capacity_factor == b->capacity_factor);
    ck_assert(a->q_lora_rank == b->q_lora_rank && a->kv_lora_rank == b->kv_lora_rank);
    ck_assert(a->qk_head_dim == b->qk_head_dim && a->v_head_dim == b->v_head_dim);
    ck_assert(a->qk_pos_emb_head_dim == b->qk_pos_emb_head_dim);
    ck_assert(a->mtp_layers == b->mtp_layers);
}

/* The shapes, which layers are MoE (a rule may come back as a list) and the counts. */
static void
assert_same_model(const struct spsim_model *a, const struct spsim_model *b)
{
    const struct spsim_model_shape *s = spsim_model_get_shape(a);
    assert_same_shape(s, spsim_model_get_shape(b));
    for (uint32_t i = 0; i < s->layers; i++)
        ck_assert_msg(spsim_model_layer_is_moe(a, i) == spsim_model_layer_is_moe(b, i), "layer %u",
                      i);
    ck_assert_uint_eq(spsim_model_parameters(a, 8), spsim_model_parameters(b, 8));
    ck_assert_uint_eq(spsim_model_active_parameters(a, 8), spsim_model_active_parameters(b, 8));
}

/* One point: written, read back, evaluated again. @return whether it was valid */
static bool
round_trip(const struct spsim_sweep *sw, uint64_t index)
{
    struct spsim_sweep_point pt;
    struct spsim_result before, after;
    struct spsim_error err = {0};
    if (spsim_sweep_point_at(sw, index, &pt, &err) != SPSIM_OK ||
        spsim_sweep_evaluate(sw, index, &before, &err) != SPSIM_OK)
        return false;
    /* Megatron-LM has one way to write uniform groups of one layer, which spsim reads as its
     * default full recomputation (the same schedule): that point comes back as the default. */
    if (before.config.recompute_method == SPSIM_RECOMPUTE_METHOD_UNIFORM &&
        before.config.recompute_layers == 1)
        return false;
    char text[8192];
    ck_assert_uint_lt(spsim_megatron_format(pt.model, &before.config, 8, text, sizeof(text)),
                      sizeof(text));
    struct spsim_megatron_config mc;
    ck_assert_msg(parse(text, &mc, &err) == SPSIM_OK, "%s\n%s", err.message, text);
    ck_assert_str_eq(mc.unmodelled, "");
    assert_same_model(pt.model, mc.model);
    ck_assert_msg(spsim_evaluate(mc.model, pt.hw, &mc.par, &after, &err) == SPSIM_OK, "%s\n%s",
                  err.message, text);
    assert_same_result(&before, &after, text);
    spsim_model_destroy(mc.model);
    return true;
}

/* Every point of a sweep through round_trip(). @return the valid ones */
static uint64_t
round_trip_sweep(const char *const axes[SPSIM_AXIS_COUNT])
{
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_sweep *sw = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_sweep_spec_create(&spec, &err), SPSIM_OK);
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++)
        if (axes[a])
            ck_assert_msg(spsim_sweep_spec_parse(spec, a, axes[a], "test", &err) == SPSIM_OK, "%s",
                          err.message);
    ck_assert_msg(spsim_sweep_create(spec, &sw, &err) == SPSIM_OK, "%s", err.message);
    uint64_t valid = 0;
    for (uint64_t i = 0; i < spsim_sweep_size(sw); i++)
        valid += round_trip(sw, i);
    spsim_sweep_destroy(sw);
    spsim_sweep_spec_destroy(spec);
    return valid;
}

/* The test's models beside the shipped ones: a transformers Qwen2 config (QKV bias) and a
 * profile with Qwen3's QK-norm and a QKV bias on a LayerNorm layer. */
static void
write_models(const char *dir, char *hf, char *profile, size_t cap)
{
    snprintf(hf, cap, "%s/config.json", dir);
    FILE *f = fopen(hf, "w");
    fputs("{\"model_type\": \"qwen2\", \"num_hidden_layers\": 4, \"hidden_size\": 256, "
          "\"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"intermediate_size\": 512, "
          "\"vocab_size\": 1000, \"max_position_embeddings\": 512}",
          f);
    fclose(f);
    snprintf(profile, cap, "%s/qk.json", dir);
    f = fopen(profile, "w");
    fputs("{\"schema\": \"spsim-model/1\", \"name\": \"qk\", \"source\": \"test\", \"layers\": 4, "
          "\"hidden\": 128, \"heads\": 4, \"kv_heads\": 4, \"ffn_hidden\": 512, \"vocab\": 500, "
          "\"seq_len\": 512, \"mlp\": \"gelu\", \"norm\": \"layernorm\", \"dropout\": true, "
          "\"attention\": \"standard\", \"position_embedding\": \"learned\", "
          "\"linear_bias\": false, \"qkv_bias\": true, \"qk_norm\": true, "
          "\"tied_embeddings\": true}",
          f);
    fclose(f);
}

/* Four models and every switch. */
static uint64_t
sweep_switches(const char *models)
{
    const char *axes[SPSIM_AXIS_COUNT] = {
        [SPSIM_AXIS_MODEL] = models,
        [SPSIM_AXIS_HW] = "dgx-h100",
        [SPSIM_AXIS_TP] = "1,2,4",
        [SPSIM_AXIS_PP] = "1,2",
        [SPSIM_AXIS_DP] = "1,3",
        [SPSIM_AXIS_VPP] = "1,2",
        [SPSIM_AXIS_SP] = "on,off",
        [SPSIM_AXIS_RECOMPUTE] = "none,selective,full",
        [SPSIM_AXIS_MBS] = "2",
        [SPSIM_AXIS_GBS] = "12",
        [SPSIM_AXIS_SEQ] = "512",
        [SPSIM_AXIS_FLASH_ATTN] = "model,off",
        [SPSIM_AXIS_DTYPE] = "bf16,fp16,fp8",
        [SPSIM_AXIS_DISTRIBUTED_OPTIMIZER] = "on,off",
        [SPSIM_AXIS_OVERLAP_GRAD_REDUCE] = "on,off",
    };
    return round_trip_sweep(axes);
}

/* Issue 10's recomputation and offload options. */
static uint64_t
sweep_recompute(const char *models)
{
    const char *recompute[SPSIM_AXIS_COUNT] = {
        [SPSIM_AXIS_MODEL] = models,
        [SPSIM_AXIS_HW] = "dgx-h100",
        [SPSIM_AXIS_TP] = "1,2",
        [SPSIM_AXIS_PP] = "1,2",
        [SPSIM_AXIS_RECOMPUTE] = "none,selective,full",
        [SPSIM_AXIS_RECOMPUTE_MODULES] = "default,core_attn+mlp,layernorm",
        [SPSIM_AXIS_RECOMPUTE_METHOD] = "default,uniform,block",
        [SPSIM_AXIS_RECOMPUTE_LAYERS] = "0,1,2",
        [SPSIM_AXIS_OFFLOAD_LAYERS] = "0,1",
        [SPSIM_AXIS_GBS] = "8",
        [SPSIM_AXIS_SEQ] = "512",
    };
    return round_trip_sweep(recompute);
}

/* Issue 10's context parallelism and sharding. */
static uint64_t
sweep_cp(const char *models)
{
    const char *cp[SPSIM_AXIS_COUNT] = {
        [SPSIM_AXIS_MODEL] = models,
        [SPSIM_AXIS_HW] = "dgx-h100",
        [SPSIM_AXIS_TP] = "1,2",
        [SPSIM_AXIS_DP] = "1,2",
        [SPSIM_AXIS_CP] = "1,2,4",
        [SPSIM_AXIS_CP_COMM_TYPE] = "p2p,all_gather,a2a",
        [SPSIM_AXIS_ZERO] = "0,1,2,3",
        [SPSIM_AXIS_DISTRIBUTED_OPTIMIZER] = "on,off",
        [SPSIM_AXIS_OVERLAP_GRAD_REDUCE] = "on,off",
        [SPSIM_AXIS_OVERLAP_PARAM_GATHER] = "on,off",
        [SPSIM_AXIS_GRAD_REDUCE_IN_FP32] = "on,off",
        [SPSIM_AXIS_GBS] = "8",
        [SPSIM_AXIS_SEQ] = "512",
    };
    return round_trip_sweep(cp);
}

/* Issue 11's expert parallelism over the MoE profiles. */
static uint64_t
sweep_moe(const char *models)
{
    const char *moe[SPSIM_AXIS_COUNT] = {
        [SPSIM_AXIS_MODEL] = models,
        [SPSIM_AXIS_HW] = "dgx-h100",
        [SPSIM_AXIS_TP] = "1,2,4",
        [SPSIM_AXIS_PP] = "1,2",
        [SPSIM_AXIS_DP] = "1,2,4,8",
        [SPSIM_AXIS_EP] = "1,2,4,8",
        [SPSIM_AXIS_ETP] = "0,1,2",
        [SPSIM_AXIS_MOE_DISPATCHER] = "allgather,alltoall",
        [SPSIM_AXIS_SP] = "on",
        [SPSIM_AXIS_RECOMPUTE] = "none,selective",
        [SPSIM_AXIS_DISTRIBUTED_OPTIMIZER] = "on,off",
        [SPSIM_AXIS_GBS] = "16",
        [SPSIM_AXIS_SEQ] = "512",
    };
    return round_trip_sweep(moe);
}

/* --format megatron read back by --megatron-args, for every valid configuration of three
 * sweeps: four models (learned positions, GeLU, biases and dropout; GQA, SwiGLU and RoPE;
 * Qwen2's QKV bias from a transformers config; QK-norm with a QKV bias) with every switch, the
 * recomputation and offload options, context parallelism and sharding. */
START_TEST(round_trip_over_a_sweep)
{
    char dir[] = "/tmp/spsim-megatron-XXXXXX", hf[256], profile[256], models[1024];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    write_models(dir, hf, profile, sizeof(hf));
    snprintf(models, sizeof(models), "gpt3-175b,llama3-8b,%s,%s", hf, profile);
    ck_assert_uint_gt(sweep_switches(models), 1000);
    snprintf(models, sizeof(models), "llama3-8b,%s", profile);
    ck_assert_uint_gt(sweep_recompute(models), 20);
    ck_assert_uint_gt(sweep_cp(models), 20);
    ck_assert_uint_gt(sweep_moe("mixtral-8x7b,qwen3-30b-a3b"), 200);
    remove(hf);
    remove(profile);
    rmdir(dir);
}
END_TEST

/* A model's flags written and read back: the shape, the MoE layers and the parameters. */
static void
model_round_trip(const struct spsim_model *model, const struct spsim_parallel *par)
{
    char text[8192];
    ck_assert_uint_lt(spsim_megatron_format(model, par, 8, text, sizeof(text)), sizeof(text));
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(parse(text, &mc, &err) == SPSIM_OK, "%s\n%s", err.message, text);
    ck_assert_msg(mc.unmodelled[0] == '\0', "%s\n%s", mc.unmodelled, text);
    assert_same_model(model, mc.model);
    ck_assert(mc.par.ep == par->ep && mc.par.etp == par->etp);
    ck_assert(mc.par.moe_dispatcher == par->moe_dispatcher);
    spsim_model_destroy(mc.model);
}

/* The model part of the round trip where evaluation is not the point: DeepSeek-V3 (multi-latent
 * attention, MTP, a sigmoid router, a shared expert, "[0]*3+[1]*58"), its Q projected directly
 * (q_lora_rank 0), and a shape whose rule (first dense layers, every 2nd MoE, a capacity
 * factor) Megatron can only write as a list. */
START_TEST(round_trip_moe_models)
{
    struct spsim_parallel par;
    spsim_parallel_defaults(&par);
    par.tp = 8;
    par.ep = 32;
    par.etp = 1;
    par.dp = 32;
    par.moe_dispatcher = SPSIM_MOE_ALLTOALL;
    struct spsim_model *v3 = testutil_model_named("deepseek-v3");
    model_round_trip(v3, &par);
    struct spsim_model_shape s = *spsim_model_get_shape(v3);
    spsim_model_destroy(v3);
    s.q_lora_rank = 0;
    s.mtp_layers = 0;
    s.moe_first_dense_layers = 5;
    s.moe_layer_freq = 2;
    s.capacity_factor = 1.25;
    s.router_score = SPSIM_ROUTER_SOFTMAX;
    struct spsim_model *m = testutil_model(&s);
    ck_assert(!spsim_model_layer_is_moe(m, 4) && !spsim_model_layer_is_moe(m, 5));
    ck_assert(spsim_model_layer_is_moe(m, 6));
    par.etp = 0;
    par.ep = 1;
    par.moe_dispatcher = SPSIM_MOE_ALLGATHER;
    model_round_trip(m, &par);
    spsim_model_destroy(m);
}
END_TEST

/* NeMo 1's megatron_gpt_config.yaml (NVIDIA/NeMo examples/nlp/language_modeling/conf, as
 * published): the 125M GPT, its ${.encoder_seq_length} resolved, the other keys listed. */
START_TEST(nemo_yaml)
{
    size_t len;
    char *text = read_data("megatron_gpt_config.yaml", &len);
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_parse(text, len, "megatron_gpt_config.yaml", &mc, &err) ==
                      SPSIM_OK,
                  "%s", err.message);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert_uint_eq(s->layers, 12);
    ck_assert_uint_eq(s->hidden, 768);
    ck_assert_uint_eq(s->heads, 12);
    ck_assert_uint_eq(s->ffn_hidden, 3072);
    ck_assert_uint_eq(s->seq_len, 512); /* max_position_embeddings: ${.encoder_seq_length} */
    ck_assert_uint_eq(s->vocab, 50257); /* tokenizer.type GPT2BPETokenizer */
    ck_assert(s->linear_bias && s->tied_embeddings && s->dropout && s->mlp == SPSIM_MLP_GELU);
    ck_assert(s->norm == SPSIM_NORM_LAYERNORM && s->position == SPSIM_POSITION_LEARNED);
    ck_assert_uint_eq(mc.par.mbs, 4);
    ck_assert_uint_eq(mc.par.gbs, 8);
    ck_assert_uint_eq(mc.par.seq, 512);
    ck_assert_int_eq(mc.par.dtype, SPSIM_DTYPE_BF16); /* trainer.precision: bf16 */
    ck_assert(mc.world_size_given && mc.par.dp == 1 && !mc.par.distributed_optimizer);
    ck_assert_ptr_nonnull(strstr(mc.unmodelled, "trainer.max_steps, "));
    ck_assert_ptr_nonnull(strstr(mc.unmodelled, "model.rotary_percentage, "));
    spsim_model_destroy(mc.model);
    free(text);

    /* Megatron-Bridge's tutorial override (NVIDIA-NeMo/Megatron-Bridge
     * tutorials/recipes/llama/conf/llama32_1b_pretrain.yaml) sets the batch and tp, not the
     * model: refused naming the field. */
    text = read_data("llama32_1b_pretrain.yaml", &len);
    ck_assert_int_eq(spsim_megatron_parse(text, len, "llama32_1b_pretrain.yaml", &mc, &err),
                     SPSIM_EFIELD);
    ck_assert_str_eq(err.message, "llama32_1b_pretrain.yaml: num_layers (--num-layers): missing "
                                  "(Megatron-LM requires it)");
    free(text);
}
END_TEST

/* A Megatron-Bridge ConfigContainer (model: TransformerConfig's fields, train:, ddp:) and the
 * launch line of the same configuration evaluate alike. */
START_TEST(bridge_yaml_equals_launch_line)
{
    static const char yaml[] =
        "model:\n"
        "  num_layers: 32\n  hidden_size: 4096\n  num_attention_heads: 32\n"
        "  num_query_groups: 8\n  kv_channels: 128\n  ffn_hidden_size: 14336\n"
        "  seq_length: 8192\n  max_position_embeddings: 8192\n  normalization: RMSNorm\n"
        "  gated_linear_unit: true\n  add_bias_linear: false\n  position_embedding_type: rope\n"
        "  share_embeddings_and_output_weights: false\n  hidden_dropout: 0.0\n"
        "  attention_dropout: 0.0\n  vocab_size: 128256\n  tensor_model_parallel_size: 2\n"
        "  pipeline_model_parallel_size: 2\n  virtual_pipeline_model_parallel_size: 2\n"
        "  sequence_parallel: true\n  recompute_granularity: selective\n"
        "  recompute_modules: [core_attn]\n  bf16: true\n  fp16: false\n  fp8: null\n"
        "  context_parallel_size: 1\n"
        "train:\n  micro_batch_size: 1\n  global_batch_size: 32\n  train_iters: 100\n"
        "ddp:\n  use_distributed_optimizer: true\n  overlap_grad_reduce: true\n";
    static const char line[] =
        "torchrun --nproc_per_node 4 pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
        "--num-attention-heads 32 --group-query-attention --num-query-groups 8 --kv-channels 128 "
        "--ffn-hidden-size 14336 --seq-length 8192 --max-position-embeddings 8192 "
        "--normalization RMSNorm --swiglu --disable-bias-linear --position-embedding-type rope "
        "--untie-embeddings-and-output-weights --hidden-dropout 0.0 --attention-dropout 0.0 "
        "--vocab-size 128256 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
        "--num-layers-per-virtual-pipeline-stage 8 --sequence-parallel "
        "--recompute-granularity selective --bf16 --micro-batch-size 1 --global-batch-size 32 "
        "--use-distributed-optimizer --overlap-grad-reduce";
    struct spsim_megatron_config a, b;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_parse(yaml, strlen(yaml), "bridge.yaml", &a, &err) == SPSIM_OK,
                  "%s", err.message);
    ck_assert_str_eq(a.unmodelled, ""); /* train.train_iters changes no figure */
    ck_assert_msg(parse(line, &b, &err) == SPSIM_OK, "%s", err.message);
    assert_same_shape(spsim_model_get_shape(a.model), spsim_model_get_shape(b.model));
    b.par.dp = a.par.dp; /* the recipe gives no world size */
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_result ra, rb;
    ck_assert_msg(spsim_evaluate(a.model, hw, &a.par, &ra, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_msg(spsim_evaluate(b.model, hw, &b.par, &rb, &err) == SPSIM_OK, "%s", err.message);
    assert_same_result(&ra, &rb, yaml);
    ck_assert(ra.config.sp && ra.config.vpp == 2 && ra.config.distributed_optimizer);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(a.model);
    spsim_model_destroy(b.model);

    /* Bridge's Megatron-FSDP without a strategy takes DistributedDataParallelConfig's default,
     * no_shard (distributed_data_parallel_config.py, d98e8a64:103), not arguments.py's
     * optim_grads_params that the same flag alone on a launch line gets. */
    static const char fsdp[] = "model:\n  num_layers: 2\n  hidden_size: 64\n"
                               "  num_attention_heads: 4\n  seq_length: 128\n  vocab_size: 128\n"
                               "  bf16: true\nddp:\n  use_megatron_fsdp: true\n";
    ck_assert_msg(spsim_megatron_parse(fsdp, strlen(fsdp), "fsdp.yaml", &a, &err) == SPSIM_OK, "%s",
                  err.message);
    ck_assert_uint_eq(a.par.zero, 0);
    spsim_model_destroy(a.model);

    /* A value that is not one: the key and the line. */
    static const char bad[] = "model:\n  num_layers: 2\n  sequence_parallel: maybe\n";
    ck_assert_int_eq(spsim_megatron_parse(bad, strlen(bad), "bad.yaml", &a, &err), SPSIM_EFIELD);
    ck_assert_str_eq(err.message,
                     "bad.yaml:3: model.sequence_parallel: must be true or false, got 'maybe'");
    static const char broken[] = "model:\n  num_layers: [2\n";
    ck_assert_int_eq(spsim_megatron_parse(broken, strlen(broken), "broken.yaml", &a, &err),
                     SPSIM_EPARSE);
}
END_TEST

static Suite *
megatron_suite(void)
{
    Suite *s = suite_create("megatron");
    TCase *tc = tcase_create("args");
    /* The round trips evaluate thousands of configurations: under the sanitizers on a loaded
     * machine they took 200 s; meson's timeout (120 s, 360 s with --sanitize's multiplier)
     * still catches a hang. */
    tcase_set_timeout(tc, 360);
    tcase_add_test(tc, gpt3_example_as_written);
    tcase_add_test(tc, unmodelled_name_escaped);
    tcase_add_test(tc, megatron_fsdp_default_strategy);
    tcase_add_test(tc, chunk_layers_with_accounted_embedding);
    tcase_add_test(tc, transformer_impl_local_attention);
    tcase_add_test(tc, redirection_to_empty_word);
    tcase_add_test(tc, gpt3_example_on_16_nodes);
    tcase_add_test(tc, llama3_example_as_written);
    tcase_add_test(tc, bash_words);
    tcase_add_test(tc, errors_name_the_flag);
    tcase_add_test(tc, hostile_launch_lines);
    tcase_add_test(tc, world_size_checked);
    tcase_add_test(tc, round_trip_over_a_sweep);
    tcase_add_test(tc, round_trip_moe_models);
    tcase_add_test(tc, nemo_yaml);
    tcase_add_test(tc, bridge_yaml_equals_launch_line);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(megatron_suite());
}
