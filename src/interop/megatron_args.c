/*
 * Megatron-LM launch lines in: the words of the script (shell_words.c), then each flag of
 * megatron/training/arguments.py (and TransformerConfig's, megatron/core/transformer/
 * transformer_config.py) that spsim models, with Megatron's defaults where it is absent.
 * Read against NVIDIA/Megatron-LM at d98e8a64 (2026-08-22).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "megatron_args.h"
#include "megatron_ftest.h"
#include "megatron_yaml.h"
#include "profiles/profiles.h"
#include "spsim/megatron.h"

enum flag_id {
    F_LAYERS,
    F_HIDDEN,
    F_HEADS,
    F_FFN,
    F_GQA,
    F_GROUPS,
    F_KV_CHANNELS,
    F_SEQ,
    F_POSITIONS,
    F_SWIGLU,
    F_NORM,
    F_POSITION_TYPE,
    F_ROTARY,
    F_DISABLE_BIAS,
    F_ADD_BIAS,
    F_QKV_BIAS,
    F_UNTIE,
    F_QK_NORM,
    F_OUTPUT_GATE,
    F_ROTARY_PERCENT,
    F_SHARED_GATE,
    F_ATTN_DROPOUT,
    F_HIDDEN_DROPOUT,
    F_VOCAB,
    F_TOKENIZER,
    F_VOCAB_FILE,
    F_MERGE_FILE,
    F_DIVISIBLE,
    F_FLASH,
    F_BACKEND,
    F_IMPL,
    F_TP,
    F_PP,
    F_VPP_LAYERS,
    F_VPP,
    F_SP,
    F_CP,
    F_EP,
    F_EXPERTS,
    F_MOE_TOPK,
    F_MOE_FFN,
    F_MOE_SHARED,
    F_MOE_FREQ,
    F_MOE_SCORE,
    F_MOE_CAPACITY,
    F_MOE_PAD_CAPACITY,
    F_MOE_DISPATCHER,
    F_MOE_FLEX_BACKEND,
    F_MOE_FLEX_SMS,
    F_MOE_DEEPEP_SMS,
    F_MOE_HYBRIDEP_SMS,
    F_MOE_GROUPS,
    F_MOE_GROUP_TOPK,
    F_MOE_LB_TYPE,
    F_MOE_AUX_COEFF,
    F_MOE_Z_COEFF,
    F_MOE_EXPERT_BIAS,
    F_ETP,
    F_A2A_OVERLAP,
    F_DELAY_WGRAD,
    F_MLA,
    F_Q_LORA,
    F_KV_LORA,
    F_QK_HEAD,
    F_QK_POS,
    F_V_HEAD,
    F_MTP,
    F_WINDOW,
    F_WINDOW_SKIP,
    F_SOFTMAX_TYPE,
    F_QUICK_GEGLU,
    F_MBS,
    F_GBS,
    F_RECOMPUTE_ACT,
    F_RECOMPUTE_GRAN,
    F_RECOMPUTE_METHOD,
    F_RECOMPUTE_LAYERS,
    F_RECOMPUTE_MODULES,
    F_OFFLOAD,
    F_OFFLOAD_LAYERS,
    F_CP_COMM,
    F_HCP,
    F_FSDP,
    F_SHARDING,
    F_GRAD_FP32,
    F_GRAD_BF16,
    F_PAO,
    F_MAIN_GRADS,
    F_MAIN_PARAMS,
    F_EXP_AVG,
    F_EXP_AVG_SQ,
    F_OVERLAP_PARAM,
    F_DISTOPT,
    F_OVERLAP,
    F_NO_OVERLAP_P2P,
    F_DDP_BUCKET,
    F_DIST_OPT_INSTANCES,
    F_OUTER_SHARDING,
    F_TP_COMM_OVERLAP,
    F_CUDA_GRAPH_IMPL,
    F_CUDA_GRAPH_SCOPE,
    F_CUDA_GRAPH_MODULES,
    F_ENABLE_CUDA_GRAPH,
    F_EXTERNAL_CUDA_GRAPH,
    F_BF16,
    F_FP16,
    F_FP8,
    F_FP8_RECIPE,
    F_FP8_PARAM,
    F_FP4,
    F_FP4_RECIPE,
    F_FP4_PARAM,
    F_FP8_DPA,
    F_FP8_MHA,
    F_BF16_ENDS,
    F_BF16_START,
    F_BF16_END,
    F_MB_GROUP,
    F_ACCOUNT_EMB,
    F_ACCOUNT_LOSS,
    F_FIRST_LAYERS,
    F_LAST_LAYERS,
    F_LAYOUT,
    F_NPROC,
    F_NNODES,
    F_OPTIMIZER,
    F_MUON_NS,
    F_MUON_TP_MODE,
    F_MUON_NESTEROV,
    F_MUON_NO_SPLIT,
    F_MUON_PREC,
    F_MUON_COEFF,
    F_MUON_SCALAR,
    F_OPT_OFFLOAD,
    F_OPT_OFFLOAD_FRACTION,
    F_OPT_OFFLOAD_OVERLAP,
    F_LOG_PARAMS_NORM,
    F_LOG_ZEROS,
    F_LOG_INTERVAL,
    F_TENSORBOARD,
    F_LOG_TIMERS_TB,
    F_LOG_MEMORY_TB,
    F_NO_WGRAD_FUSION,
    F_DEFER_EMB_WGRAD,
    F_WGRAD_DEFERRAL_LIMIT,
    F_CE_FUSION,
    F_CE_IMPL,
    F_NO_MASK,
    F_NO_NAN_CHECK,
    F_HYBRID,
    F_HYBRID_OVERRIDE,
    F_MTP_HYBRID,
    F_MTP_REPEATED,
    F_MAMBA_HEADS,
    F_MAMBA_HEAD_DIM,
    F_MAMBA_STATE,
    F_MAMBA_GROUPS,
    F_SQUARED_RELU,
    F_MOE_LATENT,
    F_ATTN_VARIANT,
    F_LA_FREQ,
    F_LIN_KEY_HEADS,
    F_LIN_VALUE_HEADS,
    F_LIN_KEY_DIM,
    F_LIN_VALUE_DIM,
    F_LIN_CONV,
    F_MAMBA_CHUNK,
    F_COUNT
};

enum flag_kind { K_SWITCH, K_VALUE, K_LIST };

static const struct {
    const char *name;
    enum flag_kind kind;
} flags[F_COUNT] = {
    [F_LAYERS] = {"--num-layers", K_VALUE},
    [F_HIDDEN] = {"--hidden-size", K_VALUE},
    [F_HEADS] = {"--num-attention-heads", K_VALUE},
    [F_FFN] = {"--ffn-hidden-size", K_VALUE},
    [F_GQA] = {"--group-query-attention", K_SWITCH},
    [F_GROUPS] = {"--num-query-groups", K_VALUE},
    [F_KV_CHANNELS] = {"--kv-channels", K_VALUE},
    [F_SEQ] = {"--seq-length", K_VALUE},
    [F_POSITIONS] = {"--max-position-embeddings", K_VALUE},
    [F_SWIGLU] = {"--swiglu", K_SWITCH},
    [F_NORM] = {"--normalization", K_VALUE},
    [F_POSITION_TYPE] = {"--position-embedding-type", K_VALUE},
    [F_ROTARY] = {"--use-rotary-position-embeddings", K_SWITCH},
    [F_DISABLE_BIAS] = {"--disable-bias-linear", K_SWITCH},
    [F_ADD_BIAS] = {"--add-bias-linear", K_SWITCH},
    [F_QKV_BIAS] = {"--add-qkv-bias", K_SWITCH},
    [F_UNTIE] = {"--untie-embeddings-and-output-weights", K_SWITCH},
    [F_QK_NORM] = {"--qk-layernorm", K_SWITCH},
    [F_OUTPUT_GATE] = {"--attention-output-gate", K_SWITCH},
    [F_ROTARY_PERCENT] = {"--rotary-percent", K_VALUE},
    [F_SHARED_GATE] = {"--moe-shared-expert-gate", K_SWITCH},
    [F_ATTN_DROPOUT] = {"--attention-dropout", K_VALUE},
    [F_HIDDEN_DROPOUT] = {"--hidden-dropout", K_VALUE},
    [F_VOCAB] = {"--vocab-size", K_VALUE},
    [F_TOKENIZER] = {"--tokenizer-type", K_VALUE},
    [F_VOCAB_FILE] = {"--vocab-file", K_VALUE},
    [F_MERGE_FILE] = {"--merge-file", K_VALUE},
    [F_DIVISIBLE] = {"--make-vocab-size-divisible-by", K_VALUE},
    [F_FLASH] = {"--use-flash-attn", K_SWITCH},
    [F_BACKEND] = {"--attention-backend", K_VALUE},
    [F_IMPL] = {"--transformer-impl", K_VALUE},
    [F_TP] = {"--tensor-model-parallel-size", K_VALUE},
    [F_PP] = {"--pipeline-model-parallel-size", K_VALUE},
    [F_VPP_LAYERS] = {"--num-layers-per-virtual-pipeline-stage", K_VALUE},
    [F_VPP] = {"--num-virtual-stages-per-pipeline-rank", K_VALUE},
    [F_SP] = {"--sequence-parallel", K_SWITCH},
    [F_CP] = {"--context-parallel-size", K_VALUE},
    [F_EP] = {"--expert-model-parallel-size", K_VALUE},
    [F_EXPERTS] = {"--num-experts", K_VALUE},
    [F_MOE_TOPK] = {"--moe-router-topk", K_VALUE},
    [F_MOE_FFN] = {"--moe-ffn-hidden-size", K_VALUE},
    [F_MOE_SHARED] = {"--moe-shared-expert-intermediate-size", K_VALUE},
    [F_MOE_FREQ] = {"--moe-layer-freq", K_VALUE},
    [F_MOE_SCORE] = {"--moe-router-score-function", K_VALUE},
    [F_MOE_CAPACITY] = {"--moe-expert-capacity-factor", K_VALUE},
    [F_MOE_PAD_CAPACITY] = {"--moe-pad-expert-input-to-capacity", K_SWITCH},
    [F_MOE_DISPATCHER] = {"--moe-token-dispatcher-type", K_VALUE},
    [F_MOE_FLEX_BACKEND] = {"--moe-flex-dispatcher-backend", K_VALUE},
    [F_MOE_FLEX_SMS] = {"--moe-flex-dispatcher-num-sms", K_VALUE},
    [F_MOE_DEEPEP_SMS] = {"--moe-deepep-num-sms", K_VALUE},
    [F_MOE_HYBRIDEP_SMS] = {"--moe-hybridep-num-sms", K_VALUE},
    [F_MOE_GROUPS] = {"--moe-router-num-groups", K_VALUE},
    [F_MOE_GROUP_TOPK] = {"--moe-router-group-topk", K_VALUE},
    [F_MOE_LB_TYPE] = {"--moe-router-load-balancing-type", K_VALUE},
    [F_MOE_AUX_COEFF] = {"--moe-aux-loss-coeff", K_VALUE},
    [F_MOE_Z_COEFF] = {"--moe-z-loss-coeff", K_VALUE},
    [F_MOE_EXPERT_BIAS] = {"--moe-router-enable-expert-bias", K_SWITCH},
    [F_ETP] = {"--expert-tensor-parallel-size", K_VALUE},
    [F_A2A_OVERLAP] = {"--overlap-moe-expert-parallel-comm", K_SWITCH},
    [F_DELAY_WGRAD] = {"--delay-wgrad-compute", K_SWITCH},
    [F_MLA] = {"--multi-latent-attention", K_SWITCH},
    [F_Q_LORA] = {"--q-lora-rank", K_VALUE},
    [F_KV_LORA] = {"--kv-lora-rank", K_VALUE},
    [F_QK_HEAD] = {"--qk-head-dim", K_VALUE},
    [F_QK_POS] = {"--qk-pos-emb-head-dim", K_VALUE},
    [F_V_HEAD] = {"--v-head-dim", K_VALUE},
    [F_MTP] = {"--mtp-num-layers", K_VALUE},
    [F_WINDOW] = {"--window-size", K_VALUE},
    [F_WINDOW_SKIP] = {"--window-attn-skip-freq", K_VALUE},
    [F_SOFTMAX_TYPE] = {"--softmax-type", K_VALUE},
    [F_QUICK_GEGLU] = {"--quick-geglu", K_SWITCH},
    [F_MBS] = {"--micro-batch-size", K_VALUE},
    [F_GBS] = {"--global-batch-size", K_VALUE},
    [F_RECOMPUTE_ACT] = {"--recompute-activations", K_SWITCH},
    [F_RECOMPUTE_GRAN] = {"--recompute-granularity", K_VALUE},
    [F_RECOMPUTE_METHOD] = {"--recompute-method", K_VALUE},
    [F_RECOMPUTE_LAYERS] = {"--recompute-num-layers", K_VALUE},
    [F_RECOMPUTE_MODULES] = {"--recompute-modules", K_LIST},
    [F_OFFLOAD] = {"--cpu-offloading", K_SWITCH},
    [F_OFFLOAD_LAYERS] = {"--cpu-offloading-num-layers", K_VALUE},
    [F_CP_COMM] = {"--cp-comm-type", K_VALUE},
    [F_HCP] = {"--hierarchical-context-parallel-sizes", K_LIST},
    [F_FSDP] = {"--use-megatron-fsdp", K_SWITCH},
    [F_SHARDING] = {"--data-parallel-sharding-strategy", K_VALUE},
    [F_GRAD_FP32] = {"--accumulate-allreduce-grads-in-fp32", K_SWITCH},
    [F_GRAD_BF16] = {"--grad-reduce-in-bf16", K_SWITCH},
    [F_PAO] = {"--use-precision-aware-optimizer", K_SWITCH},
    [F_MAIN_GRADS] = {"--main-grads-dtype", K_VALUE},
    [F_MAIN_PARAMS] = {"--main-params-dtype", K_VALUE},
    [F_EXP_AVG] = {"--exp-avg-dtype", K_VALUE},
    [F_EXP_AVG_SQ] = {"--exp-avg-sq-dtype", K_VALUE},
    [F_OVERLAP_PARAM] = {"--overlap-param-gather", K_SWITCH},
    [F_DISTOPT] = {"--use-distributed-optimizer", K_SWITCH},
    [F_OVERLAP] = {"--overlap-grad-reduce", K_SWITCH},
    [F_NO_OVERLAP_P2P] = {"--no-overlap-p2p-communication", K_SWITCH},
    [F_DDP_BUCKET] = {"--ddp-bucket-size", K_VALUE},
    [F_DIST_OPT_INSTANCES] = {"--num-distributed-optimizer-instances", K_VALUE},
    [F_OUTER_SHARDING] = {"--outer-dp-sharding-strategy", K_VALUE},
    [F_OPTIMIZER] = {"--optimizer", K_VALUE},
    [F_MUON_NS] = {"--muon-num-ns-steps", K_VALUE},
    [F_MUON_TP_MODE] = {"--muon-tp-mode", K_VALUE},
    [F_MUON_NESTEROV] = {"--muon-nesterov", K_SWITCH},
    [F_MUON_NO_SPLIT] = {"--muon-no-split-qkv", K_SWITCH},
    [F_MUON_PREC] = {"--muon-fp32-matmul-prec", K_VALUE},
    [F_MUON_COEFF] = {"--muon-coefficient-type", K_VALUE},
    [F_MUON_SCALAR] = {"--muon-scalar-optimizer", K_VALUE},
    [F_OPT_OFFLOAD] = {"--optimizer-cpu-offload", K_SWITCH},
    [F_OPT_OFFLOAD_FRACTION] = {"--optimizer-offload-fraction", K_VALUE},
    [F_OPT_OFFLOAD_OVERLAP] = {"--overlap-cpu-optimizer-d2h-h2d", K_SWITCH},
    /* The statistics training.py logs every iteration (engine/opt_host.c) */
    [F_LOG_PARAMS_NORM] = {"--log-params-norm", K_SWITCH},
    [F_LOG_ZEROS] = {"--log-num-zeros-in-grad", K_SWITCH},
    /* training_log's work every iteration and every --log-interval (engine/log_host.c) */
    [F_LOG_INTERVAL] = {"--log-interval", K_VALUE},
    [F_TENSORBOARD] = {"--tensorboard-dir", K_VALUE},
    [F_LOG_TIMERS_TB] = {"--log-timers-to-tensorboard", K_SWITCH},
    [F_LOG_MEMORY_TB] = {"--log-memory-to-tensorboard", K_SWITCH},
    /* The micro-batch's host work outside the layers (engine/mb_host.c) */
    [F_NO_WGRAD_FUSION] = {"--no-gradient-accumulation-fusion", K_SWITCH},
    [F_DEFER_EMB_WGRAD] = {"--defer-embedding-wgrad-compute", K_SWITCH},
    [F_WGRAD_DEFERRAL_LIMIT] = {"--wgrad-deferral-limit", K_VALUE},
    [F_CE_FUSION] = {"--cross-entropy-loss-fusion", K_SWITCH},
    [F_CE_IMPL] = {"--cross-entropy-fusion-impl", K_VALUE},
    [F_NO_MASK] = {"--no-create-attention-mask-in-dataloader", K_SWITCH},
    [F_NO_NAN_CHECK] = {"--no-check-for-nan-in-loss-and-grad", K_SWITCH},
    /* Hybrid models (arguments.py _add_experimental_args, the pattern's deprecation handling;
     * TransformerConfig's mamba_*, moe_latent_size, mtp_*, experimental_attention_variant and
     * linear_* fields, which ArgumentGroupFactory makes flags) */
    [F_HYBRID] = {"--hybrid-layer-pattern", K_VALUE},
    [F_HYBRID_OVERRIDE] = {"--hybrid-override-pattern", K_VALUE},
    [F_MTP_HYBRID] = {"--mtp-hybrid-override-pattern", K_VALUE},
    [F_MTP_REPEATED] = {"--mtp-use-repeated-layer", K_SWITCH},
    [F_MAMBA_HEADS] = {"--mamba-num-heads", K_VALUE},
    [F_MAMBA_HEAD_DIM] = {"--mamba-head-dim", K_VALUE},
    [F_MAMBA_STATE] = {"--mamba-state-dim", K_VALUE},
    [F_MAMBA_GROUPS] = {"--mamba-num-groups", K_VALUE},
    [F_SQUARED_RELU] = {"--squared-relu", K_SWITCH},
    [F_MOE_LATENT] = {"--moe-latent-size", K_VALUE},
    [F_ATTN_VARIANT] = {"--experimental-attention-variant", K_VALUE},
    [F_LA_FREQ] = {"--linear-attention-freq", K_VALUE},
    [F_LIN_KEY_HEADS] = {"--linear-num-key-heads", K_VALUE},
    [F_LIN_VALUE_HEADS] = {"--linear-num-value-heads", K_VALUE},
    [F_LIN_KEY_DIM] = {"--linear-key-head-dim", K_VALUE},
    [F_LIN_VALUE_DIM] = {"--linear-value-head-dim", K_VALUE},
    [F_LIN_CONV] = {"--linear-conv-kernel-dim", K_VALUE},
    /* Megatron-Bridge's HybridModelProvider.mamba_chunk_size (hybrid_provider.py at 067f987,
     * the SSD scan's chunk); Megatron-LM has no such flag, MambaMixer's chunk_size is 128 */
    [F_MAMBA_CHUNK] = {"--mamba-chunk-size", K_VALUE},
    [F_TP_COMM_OVERLAP] = {"--tp-comm-overlap", K_SWITCH},
    [F_CUDA_GRAPH_IMPL] = {"--cuda-graph-impl", K_VALUE},
    [F_CUDA_GRAPH_SCOPE] = {"--cuda-graph-scope", K_LIST},
    [F_CUDA_GRAPH_MODULES] = {"--cuda-graph-modules", K_LIST},
    [F_ENABLE_CUDA_GRAPH] = {"--enable-cuda-graph", K_SWITCH},
    [F_EXTERNAL_CUDA_GRAPH] = {"--external-cuda-graph", K_SWITCH},
    [F_BF16] = {"--bf16", K_SWITCH},
    [F_FP16] = {"--fp16", K_SWITCH},
    [F_FP8] = {"--fp8-format", K_VALUE},
    [F_FP8_RECIPE] = {"--fp8-recipe", K_VALUE},
    [F_FP8_PARAM] = {"--fp8-param-gather", K_SWITCH},
    /* NVFP4 (transformer_config.py fp4 / fp4_recipe, arguments.py) */
    [F_FP4] = {"--fp4-format", K_VALUE},
    [F_FP4_RECIPE] = {"--fp4-recipe", K_VALUE},
    [F_FP4_PARAM] = {"--fp4-param-gather", K_SWITCH},
    [F_FP8_DPA] = {"--fp8-dot-product-attention", K_SWITCH},
    [F_FP8_MHA] = {"--fp8-multi-head-attention", K_SWITCH},
    /* transformer_config.py first_last_layers_bf16, num_layers_at_start/end_in_bf16 (1, 1) */
    [F_BF16_ENDS] = {"--first-last-layers-bf16", K_SWITCH},
    [F_BF16_START] = {"--num-layers-at-start-in-bf16", K_VALUE},
    [F_BF16_END] = {"--num-layers-at-end-in-bf16", K_VALUE},
    /* Uneven pipeline stages (arguments.py; transformer_block.py get_num_layers_to_build) */
    /* model_parallel_config.py microbatch_group_size_per_vp_stage (default pp) */
    [F_MB_GROUP] = {"--microbatch-group-size-per-virtual-pipeline-stage", K_VALUE},
    [F_ACCOUNT_EMB] = {"--account-for-embedding-in-pipeline-split", K_SWITCH},
    [F_ACCOUNT_LOSS] = {"--account-for-loss-in-pipeline-split", K_SWITCH},
    [F_FIRST_LAYERS] = {"--decoder-first-pipeline-num-layers", K_VALUE},
    [F_LAST_LAYERS] = {"--decoder-last-pipeline-num-layers", K_VALUE},
    [F_LAYOUT] = {"--pipeline-model-parallel-layout", K_VALUE},
    /* torchrun (torch/distributed/run.py) */
    [F_NPROC] = {"--nproc_per_node", K_VALUE},
    [F_NNODES] = {"--nnodes", K_VALUE},
};

/* The flags as given: each one's value (the word after it, or after '='). */
struct mg {
    const char *origin;
    struct spsim_error *err;
    bool given[F_COUNT];
    const char *from[F_COUNT];       /* the file that gave the flag (recipes merge several) */
    const char *value[F_COUNT];      /* NULL for a switch */
    const char *unresolved[F_COUNT]; /* the value's unresolved expansion, or "" */
    const char *shown[F_COUNT];      /* a YAML recipe's key for the flag, or NULL */
    bool yaml;                       /* a recipe, not a launch line */
    uint32_t line[F_COUNT];
    char *unmodelled;
    size_t used;
    char *assumed;      /* spsim_megatron_config.assumed */
    bool hybrid_script; /* pretrain_hybrid.py or pretrain_mamba.py: a hybrid model */
    char list[4][256];  /* each K_LIST flag's words joined by ',' */
};

/* "ORIGIN:LINE: --flag: reason" (or "ORIGIN: --flag: reason" for a flag that is absent). */
static int
flag_fail(const struct mg *m, int code, int id, const char *fmt, va_list ap)
{
    char reason[256];
    vsnprintf(reason, sizeof(reason), fmt, ap);
    if (m->given[id])
        return spsim_fail(m->err, code, "%s:%u: %s: %s", m->from[id] ? m->from[id] : m->origin,
                          m->line[id], m->shown[id] ? m->shown[id] : flags[id].name, reason);
    if (!m->yaml)
        return spsim_fail(m->err, code, "%s: %s: %s", m->origin, flags[id].name, reason);
    /* A recipe names the flag's TransformerConfig field: --num-layers is num_layers. */
    char key[64];
    snprintf(key, sizeof(key), "%s", flags[id].name + 2);
    for (char *c = key; *c; c++)
        *c = *c == '-' ? '_' : *c;
    return spsim_fail(m->err, code, "%s: %s (%s): %s", m->origin, key, flags[id].name, reason);
}

/* A flag spsim cannot read or does not model (SPSIM_EFIELD). */
static int SPSIM_PRINTF(3, 4) flag_error(const struct mg *m, int id, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = flag_fail(m, SPSIM_EFIELD, id, fmt, ap);
    va_end(ap);
    return rc;
}

/* A configuration Megatron-LM's own checks refuse (SPSIM_ECONFIG). */
static int SPSIM_PRINTF(3, 4) rule_error(const struct mg *m, int id, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = flag_fail(m, SPSIM_ECONFIG, id, fmt, ap);
    va_end(ap);
    return rc;
}

/* A flag spsim does not model, listed once. */
static void
unmodelled(struct mg *m, const char *word)
{
    size_t n = strcspn(word, "=");
    n = n < 120 ? n : 120;
    if (n == 0) /* "=x": no name to list (strstr with "" would never advance) */
        return;
    /* escaped: a quoted flag name may hold a newline or a terminal escape, and the list is one
     * line that the command prints (fuzz_launch found "--'a\nb'" listed raw) */
    char name[128];
    spsim_escape(word, n, name, sizeof(name));
    n = strlen(name);
    for (const char *p = m->unmodelled; (p = strstr(p, name)) != NULL; p += n)
        if ((p == m->unmodelled || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
            return;
    size_t cap = SPSIM_MEGATRON_UNMODELLED_MAX;
    if (m->used + n + 6 >= cap) {
        if (m->used + 4 < cap && strcmp(m->unmodelled + m->used - 3, "...") != 0)
            m->used += (size_t)snprintf(m->unmodelled + m->used, cap - m->used, ", ...");
        return;
    }
    m->used +=
        (size_t)snprintf(m->unmodelled + m->used, cap - m->used, "%s%s", m->used ? ", " : "", name);
}

/* The table's flag named by `word` (up to '='); '_' and '-' are the same (torchrun takes
 * both spellings). @return its id, or -1 */
static int
lookup(const char *word)
{
    size_t n = strcspn(word, "=");
    for (int id = 0; id < F_COUNT; id++) {
        const char *f = flags[id].name;
        size_t i = 0;
        while (i < n && f[i] && (f[i] == word[i] || (strchr("-_", f[i]) && strchr("-_", word[i]))))
            i++;
        if (i == n && f[i] == '\0')
            return id;
    }
    return -1;
}

static bool
is_flag(const char *w)
{
    return w[0] == '-' && w[1] != '\0' && !(w[1] >= '0' && w[1] <= '9') && w[1] != '.';
}

/* The flags of words[from, to): mapped ones recorded, the others listed. */
static int
read_flags(struct mg *m, const struct spsim_sh_words *c, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        const struct spsim_sh_word *w = &c->w[i];
        int id = is_flag(w->text) ? lookup(w->text) : -1;
        const char *eq = strchr(w->text, '=');
        if (w->off) { /* a recipe's false or null: as if absent */
            if (id >= 0)
                m->given[id] = false;
            continue;
        }
        if (id < 0) {
            unmodelled(m, w->text);
            /* An unknown flag's values: the words up to the next flag (argparse's nargs). */
            while (is_flag(w->text) && !eq && i + 1 < to && !is_flag(c->w[i + 1].text))
                i++;
            continue;
        }
        m->given[id] = true;
        m->from[id] = w->origin;
        m->line[id] = w->line;
        m->shown[id] = w->key[0] ? w->key : NULL;
        m->unresolved[id] = w->unresolved;
        if (flags[id].kind == K_SWITCH)
            continue;
        if (eq) {
            m->value[id] = eq + 1;
        } else if (i + 1 < to && !is_flag(c->w[i + 1].text)) {
            m->value[id] = c->w[++i].text;
            m->unresolved[id] = c->w[i].unresolved;
            /* nargs='*': every word up to the next flag, joined by ','. */
            if (flags[id].kind == K_LIST) {
                char *list = m->list[id == F_RECOMPUTE_MODULES  ? 0
                                     : id == F_HCP              ? 1
                                     : id == F_CUDA_GRAPH_SCOPE ? 2
                                                                : 3];
                size_t cap = sizeof(m->list[0]);
                size_t n = (size_t)snprintf(list, cap, "%s", m->value[id]);
                while (i + 1 < to && !is_flag(c->w[i + 1].text) && n < cap)
                    n += (size_t)snprintf(list + n, cap - n, ",%s", c->w[++i].text);
                m->value[id] = list;
            }
        } else {
            return flag_error(m, id, "needs a value");
        }
        /* Only the presence of the tokenizer's files (GPT-2's BPE) and of a TensorBoard
         * directory counts, not their paths. */
        bool path = id == F_VOCAB_FILE || id == F_MERGE_FILE || id == F_TENSORBOARD;
        if (m->unresolved[id][0] && !path)
            return flag_error(m, id,
                              "%s uses %s, which the file does not set (spsim does not run "
                              "the script: write the value)",
                              SPSIM_Q(m->value[id]), m->unresolved[id]);
    }
    return SPSIM_OK;
}

/* An integer flag in [min, max]; `dflt` when absent. */
static int
num(const struct mg *m, int id, uint64_t min, uint64_t max, uint64_t dflt, uint64_t *out)
{
    *out = dflt;
    if (!m->given[id])
        return SPSIM_OK;
    const char *t = m->value[id];
    char *end = NULL;
    errno = 0;
    unsigned long long v = t[0] >= '0' && t[0] <= '9' ? strtoull(t, &end, 10) : 0;
    if (!end || *end || errno == ERANGE || v < min || v > max)
        return flag_error(m, id, "%s is not an integer in [%llu, %llu]", SPSIM_Q(t),
                          (unsigned long long)min, (unsigned long long)max);
    *out = v;
    return SPSIM_OK;
}

static int
num32(const struct mg *m, int id, uint32_t max, uint32_t dflt, uint32_t *out)
{
    uint64_t v = 0;
    int rc = num(m, id, 1, max, dflt, &v);
    *out = (uint32_t)v;
    return rc;
}

/* A required integer: Megatron-LM refuses to start without it. */
static int
needed(const struct mg *m, int id, uint32_t max, uint32_t *out)
{
    if (!m->given[id])
        return flag_error(m, id, "missing (Megatron-LM requires it)");
    return num32(m, id, max, 0, out);
}

/* A probability in [0, 1]; `dflt` when absent. */
static int
probability(const struct mg *m, int id, double dflt, double *out)
{
    *out = dflt;
    if (!m->given[id])
        return SPSIM_OK;
    char *end = NULL;
    double v = strtod(m->value[id], &end);
    if (end == m->value[id] || *end || !(v >= 0 && v <= 1))
        return flag_error(m, id, "%s is not a probability in [0, 1]", SPSIM_Q(m->value[id]));
    *out = v;
    return SPSIM_OK;
}

/* One of `names` (NULL-terminated); `dflt` when absent. */
static int
choice(const struct mg *m, int id, const char *const *names, int dflt, int *out)
{
    *out = dflt;
    if (!m->given[id])
        return SPSIM_OK;
    char list[160] = "";
    for (int i = 0; names[i]; i++) {
        if (strcmp(names[i], m->value[id]) == 0) {
            *out = i;
            return SPSIM_OK;
        }
        size_t n = strlen(list);
        snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", names[i]);
    }
    return flag_error(m, id, "%s is not modelled (spsim models %s)", SPSIM_Q(m->value[id]), list);
}

/* The vocabulary: --vocab-size, else GPT-2's BPE (its vocab and merge files, 50257 tokens:
 * Radford et al. 2019, the GPT-2 tokenizer); spsim reads no tokenizer file. It is padded to a
 * multiple of --make-vocab-size-divisible-by (default 128) · tp (build_tokenizer.py
 * vocab_size_with_padding). */
static int
vocabulary(const struct mg *m, uint32_t *out, uint32_t *divisible_by)
{
    /* The padding multiple (arguments.py default 128; build_tokenizer.py pads to it × tp). */
    int rc = num32(m, F_DIVISIBLE, 16777216, 128, divisible_by);
    if (*divisible_by == 128)
        *divisible_by = 0; /* the model's default, as profiles write it */
    if (rc != SPSIM_OK || m->given[F_VOCAB])
        return rc ? rc : num32(m, F_VOCAB, 16777216, 0, out);
    /* Llama2Tokenizer reads Llama 2's SentencePiece model: its 32000 tokens (meta-llama/Llama-2-7b
     * config.json vocab_size; Mixtral's, mistralai/Mixtral-8x7B-v0.1 config.json, is the same
     * size), said in the configuration's `assumed` line. */
    if (m->given[F_TOKENIZER] && strcmp(m->value[F_TOKENIZER], "Llama2Tokenizer") == 0) {
        size_t n = strlen(m->assumed);
        snprintf(m->assumed + n, SPSIM_MEGATRON_ASSUMED_MAX - n,
                 "%sLlama2Tokenizer taken as Llama 2's 32000 tokens (give --vocab-size for "
                 "another)",
                 n ? "; " : "");
        *out = 32000;
        return SPSIM_OK;
    }
    bool gpt2 = m->given[F_TOKENIZER] ? strcmp(m->value[F_TOKENIZER], "GPT2BPETokenizer") == 0
                                      : m->given[F_VOCAB_FILE] && m->given[F_MERGE_FILE];
    if (!gpt2)
        return flag_error(m, F_VOCAB,
                          "missing: spsim reads no tokenizer file, so give the "
                          "vocabulary's size (--vocab-size N)");
    *out = 50257;
    return SPSIM_OK;
}

/* Heads, query groups, head size and the MLP's size (arguments.py's defaults). */
static int
attention_shape(const struct mg *m, struct spsim_model_shape *s)
{
    int rc;
    /* A hybrid pattern gives the layers (arguments.py ignores --num-layers then). */
    if ((!s->layers && (rc = needed(m, F_LAYERS, 4096, &s->layers))) ||
        (rc = needed(m, F_HIDDEN, 1048576, &s->hidden)) ||
        (rc = needed(m, F_HEADS, 65536, &s->heads)))
        return rc;
    /* --num-query-groups counts only with --group-query-attention (default 1 group). */
    if (m->given[F_GQA] && (rc = num32(m, F_GROUPS, s->heads, 1, &s->kv_heads)))
        return rc;
    if (!m->given[F_GQA])
        s->kv_heads = s->heads;
    if (s->heads % s->kv_heads)
        return flag_error(m, F_GROUPS, "%u does not divide --num-attention-heads %u", s->kv_heads,
                          s->heads);
    if (!m->given[F_KV_CHANNELS] && s->hidden % s->heads)
        return flag_error(m, F_HEADS, "%u does not divide --hidden-size %u (give --kv-channels)",
                          s->heads, s->hidden);
    if ((rc = num32(m, F_KV_CHANNELS, 1048576, s->hidden / s->heads, &s->head_dim)))
        return rc;
    /* SwiGLU's default keeps the parameters of a 4h MLP, to a multiple of 64:
     * int((4 * h * 2 / 3) / 64) * 64 (arguments.py). */
    /* --quick-geglu is gated too (argument_utils.py:323-326 at d98e8a6: gated_linear_unit with
     * quick_gelu), fused like SwiGLU (experts.py:974 and mlp.py:287 weighted_bias_quick_geglu_impl
     * beside weighted_bias_swiglu_impl: the same tensors in and out): spsim's gated layer. Its
     * --glu-linear-offset and --activation-func-clamp-value act inside that kernel. */
    if (m->given[F_QUICK_GEGLU] && (m->given[F_SWIGLU] || m->given[F_SQUARED_RELU]))
        return flag_error(m, F_QUICK_GEGLU, "contradicts %s (Megatron asserts one activation)",
                          m->given[F_SWIGLU] ? "--swiglu" : "--squared-relu");
    s->mlp = m->given[F_SWIGLU] || m->given[F_QUICK_GEGLU] ? SPSIM_MLP_SWIGLU
             : m->given[F_SQUARED_RELU]                    ? SPSIM_MLP_RELU2
                                                           : SPSIM_MLP_GELU;
    uint32_t ffn =
        s->mlp == SPSIM_MLP_SWIGLU ? (uint32_t)(8ull * s->hidden / 192 * 64) : 4 * s->hidden;
    return num32(m, F_FFN, 4194304, ffn ? ffn : 1, &s->ffn_hidden);
}

/* Norm, positions, biases, embeddings, dropout and the attention kernel. */
static int
layer_kind(const struct mg *m, struct spsim_model_shape *s)
{
    static const char *const norms[] = {"LayerNorm", "RMSNorm", NULL};
    static const char *const positions[] = {"learned_absolute", "rope", "none",
                                            NULL}; /* enum spsim_position */
    static const char *const backends[] = {"unfused", "local", "flash", "fused", "auto", NULL};
    static const char *const impls[] = {"transformer_engine", "local", NULL};
    int norm = 0, position = 0, backend = 4, impl = 0, rc;
    double attention_p = 0, hidden_p = 0;
    if ((rc = choice(m, F_NORM, norms, 0, &norm)) ||
        (rc = choice(m, F_POSITION_TYPE, positions, m->given[F_ROTARY], &position)) ||
        (rc = choice(m, F_BACKEND, backends, 4, &backend)) ||
        (rc = choice(m, F_IMPL, impls, 0, &impl)) ||
        (rc = probability(m, F_ATTN_DROPOUT, 0.1, &attention_p)) ||
        (rc = probability(m, F_HIDDEN_DROPOUT, 0.1, &hidden_p)) ||
        (rc = probability(m, F_ROTARY_PERCENT, 1.0, &s->rotary_percent)))
        return rc;
    if (s->rotary_percent < 0.001) /* arguments.py --rotary-percent, default 1.0 */
        return flag_error(m, F_ROTARY_PERCENT, "must be in [0.001, 1]");
    if ((attention_p > 0) != (hidden_p > 0))
        return flag_error(m, F_ATTN_DROPOUT,
                          "dropout on attention probabilities or residual branches only is not "
                          "modelled (both zero, or both nonzero; each is 0.1 when absent)");
    s->norm = (enum spsim_norm)norm;
    s->position = (enum spsim_position)position;
    s->dropout = attention_p > 0;
    s->linear_bias = !m->given[F_DISABLE_BIAS];
    s->qkv_bias = m->given[F_QKV_BIAS] && !s->linear_bias;
    s->tied_embeddings = !m->given[F_UNTIE];
    s->qk_norm = m->given[F_QK_NORM]; /* the layer's --normalization, over each head */
    s->attention_output_gate = m->given[F_OUTPUT_GATE];
    /* TransformerConfig.attention_backend defaults to auto (flash or fused: no s² tensors).
     * --transformer-impl local (default transformer_engine, transformer_config.py:1314
     * @d98e8a64) builds get_gpt_layer_local_spec (gpt_builders.py:139), whose core attention is
     * Megatron's DotProductAttention (models/backends.py:131 LocalSpecProvider): the [b, a, s, s]
     * scores, softmax and dropout mask whatever the backend flag says. */
    s->attention = (backend >= 2 || m->given[F_FLASH]) && impl == 0 ? SPSIM_ATTENTION_FLASH
                                                                    : SPSIM_ATTENTION_STANDARD;
    return SPSIM_OK;
}

/* --moe-layer-freq (arguments.py moe_freq_type): an integer N, layer i MoE when i % N == 0
 * (gpt_layer_specs.py), or, with a '[', a list expression with one entry per layer. */
static int
layer_freq(const struct mg *m, struct spsim_model_shape *s, uint8_t *pattern, bool *has_pattern)
{
    s->moe_layer_freq = 1;
    if (!m->given[F_MOE_FREQ] || !strchr(m->value[F_MOE_FREQ], '['))
        return num32(m, F_MOE_FREQ, s->layers, 1, &s->moe_layer_freq);
    uint32_t n = 0;
    const char *why = spsim_moe_pattern_parse(m->value[F_MOE_FREQ], pattern, s->layers, &n);
    if (why)
        return flag_error(m, F_MOE_FREQ, "%s: %s", SPSIM_Q(m->value[F_MOE_FREQ]), why);
    if (n != s->layers)
        return rule_error(m, F_MOE_FREQ,
                          "%s has %u entries for %u layers (Megatron-LM asserts one per layer)",
                          SPSIM_Q(m->value[F_MOE_FREQ]), n, s->layers);
    if (!memchr(pattern, 1, n))
        return flag_error(m, F_MOE_FREQ, "%s chooses no mixture-of-experts layer",
                          SPSIM_Q(m->value[F_MOE_FREQ]));
    *has_pattern = true;
    return SPSIM_OK;
}

/* --moe-expert-capacity-factor: absent or negative is None, dropless (transformer_config.py). */
static int
capacity(const struct mg *m, double *out)
{
    *out = 0;
    if (!m->given[F_MOE_CAPACITY])
        return SPSIM_OK;
    char *end = NULL;
    double v = strtod(m->value[F_MOE_CAPACITY], &end);
    if (end == m->value[F_MOE_CAPACITY] || *end || v != v)
        return flag_error(m, F_MOE_CAPACITY, "%s is not a number",
                          SPSIM_Q(m->value[F_MOE_CAPACITY]));
    if (v >= 0 && !(v >= 1 && v <= 1000))
        return flag_error(m, F_MOE_CAPACITY,
                          "%s is not modelled (spsim models a factor in [1, 1000], or "
                          "dropless)",
                          SPSIM_Q(m->value[F_MOE_CAPACITY]));
    *out = v < 0 ? 0 : v;
    return SPSIM_OK;
}

/* --moe-pad-expert-input-to-capacity needs a capacity factor (transformer_config.py). */
static int
pad_capacity(const struct mg *m, struct spsim_model_shape *s)
{
    s->pad_to_capacity = m->given[F_MOE_PAD_CAPACITY];
    if (s->pad_to_capacity && s->capacity_factor == 0)
        return rule_error(m, F_MOE_PAD_CAPACITY,
                          "moe_expert_capacity_factor must be set to use "
                          "moe_pad_expert_input_to_capacity (transformer_config.py)");
    return SPSIM_OK;
}

/* Group-limited routing: --moe-router-group-topk needs --moe-router-num-groups, which divides
 * the experts, and group_topk <= num_groups (transformer_config.py __post_init__); the groups
 * must hold the top-k (router.py group_limited_topk takes k of the kept groups' experts). */
static int
group_limited(const struct mg *m, struct spsim_model_shape *s)
{
    uint64_t g = 0, k = 0;
    int rc = num(m, F_MOE_GROUPS, 0, s->experts, 0, &g);
    if (rc == SPSIM_OK)
        rc = num(m, F_MOE_GROUP_TOPK, 0, 65536, 0, &k);
    if (rc != SPSIM_OK || k == 0)
        return rc; /* num_groups alone does nothing (router.py: group_topk is None) */
    if (g == 0)
        return rule_error(m, F_MOE_GROUP_TOPK,
                          "needs --moe-router-num-groups (transformer_config.py: \"When using "
                          "group limited routing, moe_router_num_groups must be specified.\")");
    if (s->experts % g || k > g || k * (s->experts / g) < s->experts_per_token)
        return rule_error(m, F_MOE_GROUP_TOPK,
                          "%llu groups of %u experts, %llu kept: the groups must divide the "
                          "experts, group_topk <= num_groups and the kept experts hold the "
                          "top-%u (transformer_config.py, router.py)",
                          (unsigned long long)g, s->experts, (unsigned long long)k,
                          s->experts_per_token);
    s->router_num_groups = (uint32_t)g;
    s->router_group_topk = (uint32_t)k;
    return SPSIM_OK;
}

/* A loss coefficient: only whether it is above 0 matters to spsim. */
static int
positive_coeff(const struct mg *m, int id, bool *on)
{
    *on = false;
    if (!m->given[id])
        return SPSIM_OK;
    char *end = NULL;
    double v = strtod(m->value[id], &end);
    if (end == m->value[id] || *end || v != v)
        return flag_error(m, id, "%s is not a number", SPSIM_Q(m->value[id]));
    *on = v > 0;
    return SPSIM_OK;
}

/* The router's auxiliary terms (arguments.py _add_moe_args; router.py TopKRouter): the
 * load-balancing loss of --moe-router-load-balancing-type (default aux_loss) runs only with a
 * --moe-aux-loss-coeff above 0 (default 0.0); the z-loss with --moe-z-loss-coeff above 0
 * (default None); one type and one coefficient (Megatron also takes lists). */
static int
router_losses(const struct mg *m, struct spsim_model_shape *s)
{
    static const char *const types[] = {"none",     "aux_loss", "seq_aux_loss", "global_aux_loss",
                                        "sinkhorn", NULL}; /* enum spsim_moe_balancing */
    int type = 0;
    bool aux = false;
    int rc;
    if ((rc = choice(m, F_MOE_LB_TYPE, types, SPSIM_BALANCE_AUX_LOSS, &type)) ||
        (rc = positive_coeff(m, F_MOE_AUX_COEFF, &aux)) ||
        (rc = positive_coeff(m, F_MOE_Z_COEFF, &s->z_loss)))
        return rc;
    s->load_balancing = aux ? (enum spsim_moe_balancing)type : SPSIM_BALANCE_NONE;
    /* Sinkhorn routes without a loss (router.py asserts "Sinkhorn routing does not support
     * aux loss."), whatever the coefficient's default. */
    if (type == SPSIM_BALANCE_SINKHORN && aux)
        return rule_error(m, F_MOE_AUX_COEFF,
                          "Sinkhorn routing does not support aux loss (router.py): give 0");
    if (type == SPSIM_BALANCE_SINKHORN)
        s->load_balancing = SPSIM_BALANCE_SINKHORN;
    s->expert_bias = m->given[F_MOE_EXPERT_BIAS];
    return SPSIM_OK;
}

/* The routed and shared experts (_add_moe_args and TransformerConfig's moe_* fields), with
 * Megatron's defaults: top 2, moe_ffn_hidden_size = ffn_hidden_size (arguments.py), every layer
 * MoE, softmax scores, dropless. */
static int
moe_shape(const struct mg *m, struct spsim_model_shape *s, uint8_t *pattern, bool *has_pattern)
{
    static const char *const scores[] = {"softmax", "sigmoid", NULL}; /* enum spsim_router_score */
    uint64_t experts = 0, shared = 0;
    int score = 0;
    /* 65536: the profiles' bound (model_moe.c), far above any published model. */
    int rc = num(m, F_EXPERTS, 0, 65536, 0, &experts);
    if (rc != SPSIM_OK || experts == 0)
        return rc; /* --num-experts 0 is None (arguments.py) */
    s->experts = (uint32_t)experts;
    if ((rc = num32(m, F_MOE_TOPK, s->experts, 2, &s->experts_per_token)) ||
        (rc = num32(m, F_MOE_FFN, 4194304, s->ffn_hidden, &s->expert_ffn_hidden)) ||
        (rc = num(m, F_MOE_SHARED, 0, 4194304, 0, &shared)) ||
        (rc = choice(m, F_MOE_SCORE, scores, 0, &score)) ||
        (rc = capacity(m, &s->capacity_factor)) || (rc = pad_capacity(m, s)) ||
        (rc = layer_freq(m, s, pattern, has_pattern)) || (rc = group_limited(m, s)) ||
        (rc = router_losses(m, s)) ||
        (rc = num32(m, F_MOE_LATENT, 1048576, 0, &s->moe_latent))) /* > 0: arguments.py */
        return rc;
    s->shared_expert_ffn_hidden = (uint32_t)shared;
    s->moe_shared_expert_gate = shared && m->given[F_SHARED_GATE];
    s->router_score = (enum spsim_router_score)score;
    return SPSIM_OK;
}

/* A recipe's q_lora_rank: null is None (no Q compression), which megatron_yaml.c writes "None". */
static int
q_lora(const struct mg *m, uint32_t *out)
{
    if (m->yaml && m->given[F_Q_LORA] && strcmp(m->value[F_Q_LORA], "None") == 0) {
        *out = 0;
        return SPSIM_OK;
    }
    /* CLI≠config: the command line's default is None, MLATransformerConfig's 512. */
    uint64_t v = 0;
    int rc = num(m, F_Q_LORA, 1, 1048576, m->yaml ? 512 : 0, &v);
    *out = (uint32_t)v;
    return rc;
}

/* Multi-latent attention (_add_mla_args, arguments.py; MLATransformerConfig for a recipe) and
 * the multi-token-prediction layers. */
static int
mla_shape(const struct mg *m, struct spsim_model_shape *s)
{
    /* A hybrid pattern's MTP depths are its own (arguments.py: the inferred count wins). */
    int rc = s->mtp_pattern ? SPSIM_OK : num32(m, F_MTP, SPSIM_MODEL_MAX_LAYERS, 0, &s->mtp_layers);
    if (rc != SPSIM_OK || !m->given[F_MLA])
        return rc;
    if (m->given[F_GQA])
        return rule_error(m, F_GQA,
                          "Group query attention is mutually exclusive with multi latent "
                          "attention (arguments.py)");
    /* Command-line defaults (kv 32, qk 128, rope 64, v 128); MLATransformerConfig's kv 512. */
    if ((rc = q_lora(m, &s->q_lora_rank)) ||
        (rc = num32(m, F_KV_LORA, 1048576, m->yaml ? 512 : 32, &s->kv_lora_rank)) ||
        (rc = num32(m, F_QK_HEAD, 1048576, 128, &s->qk_head_dim)) ||
        (rc = num32(m, F_QK_POS, 1048576, 64, &s->qk_pos_emb_head_dim)) ||
        (rc = num32(m, F_V_HEAD, 1048576, 128, &s->v_head_dim)))
        return rc;
    /* q_head_dim = qk_head_dim + qk_pos_emb_head_dim (multi_latent_attention.py); kv_channels
     * is not used. */
    s->head_dim = s->qk_head_dim + s->qk_pos_emb_head_dim;
    s->kv_heads = s->heads;
    return SPSIM_OK;
}

/* No CUDA graphs: no implementation, or none (the legacy local full_iteration scope aside). */
static bool
no_graphs(const struct mg *m)
{
    if (m->given[F_CUDA_GRAPH_IMPL])
        return strcmp(m->value[F_CUDA_GRAPH_IMPL], "none") == 0;
    return !m->given[F_ENABLE_CUDA_GRAPH] && !m->given[F_EXTERNAL_CUDA_GRAPH];
}

/* Flags Megatron-LM reads but does not use in this configuration: the MoE ones without
 * --num-experts, the MLA ranks without --multi-latent-attention, --kv-channels with it. */
static void
unused_flags(struct mg *m)
{
    if (m->yaml) /* a recipe or a dump writes every field: none was asked for */
        return;
    bool moe = m->given[F_EXPERTS] && strcmp(m->value[F_EXPERTS], "0") != 0;
    bool hybrid = m->given[F_HYBRID] || m->given[F_HYBRID_OVERRIDE];
    bool linear = hybrid || m->given[F_ATTN_VARIANT];
    for (int id = 0; id < F_COUNT; id++) {
        bool unused = (!moe && (id >= F_MOE_TOPK && id <= F_ETP)) || (!moe && id == F_MOE_LATENT) ||
                      (!hybrid && id >= F_MAMBA_HEADS && id <= F_MAMBA_GROUPS) ||
                      (!hybrid && (id == F_MTP_HYBRID || id == F_MTP_REPEATED)) ||
                      (!linear && id >= F_LA_FREQ && id <= F_LIN_CONV) ||
                      (!m->given[F_MLA] && id >= F_Q_LORA && id <= F_V_HEAD) ||
                      (m->given[F_MLA] && id == F_KV_CHANNELS) ||
                      ((id == F_CUDA_GRAPH_SCOPE || id == F_CUDA_GRAPH_MODULES) && no_graphs(m));
        if (m->given[id] && unused)
            unmodelled(m, m->shown[id] ? m->shown[id] : flags[id].name);
    }
}

/* The flex dispatcher's backend (default deepep, transformer_config.py; ncclep is not
 * modelled) and SMs: --moe-flex-dispatcher-num-sms, else a deprecated per-backend count, which
 * __post_init__ routes to it. */
static int
flex_dispatcher(const struct mg *m, struct spsim_parallel *p)
{
    static const char *const backends[] = {"deepep", "hybridep",
                                           NULL}; /* enum spsim_moe_flex_backend */
    int b = 0, rc = choice(m, F_MOE_FLEX_BACKEND, backends, 0, &b);
    p->moe_flex_backend = (enum spsim_moe_flex_backend)b;
    /* The deprecated count of the backend in use: Megatron-Core before the unification read
     * each backend's own; after it, two different ones are refused, so either way it is the
     * backend's (transformer_config.py __post_init__). */
    int own = b == SPSIM_FLEX_HYBRIDEP ? F_MOE_HYBRIDEP_SMS : F_MOE_DEEPEP_SMS;
    int sms = m->given[F_MOE_FLEX_SMS]     ? F_MOE_FLEX_SMS
              : m->given[own]              ? own
              : m->given[F_MOE_DEEPEP_SMS] ? F_MOE_DEEPEP_SMS
                                           : F_MOE_HYBRIDEP_SMS;
    if (rc == SPSIM_OK && m->given[sms] && strcmp(m->value[sms], "None") != 0)
        rc = num32(m, sms, 65536, 0, &p->moe_flex_sms);
    return rc;
}

/* Expert parallelism: --expert-model-parallel-size (E % ep == 0 and ep > 1 only with experts,
 * arguments.py), --expert-tensor-parallel-size (absent: tp, model_parallel_config.py, spsim's
 * 0), --moe-token-dispatcher-type (default allgather, transformer_config.py). */
static int
expert_parallel(const struct mg *m, uint32_t experts, struct spsim_parallel *p)
{
    static const char *const dispatchers[] = {"allgather", "alltoall", "flex",
                                              NULL}; /* enum spsim_moe_dispatcher */
    int d = 0, rc;
    if ((rc = num32(m, F_EP, 65536, 1, &p->ep)))
        return rc;
    if (!experts && p->ep > 1)
        return rule_error(m, F_EP,
                          "needs --num-experts (arguments.py: \"num_experts must be non "
                          "None to use expert model parallelism\")");
    if (!experts)
        return SPSIM_OK;
    if (experts % p->ep)
        return rule_error(m, F_EP, "%u does not divide --num-experts %u (arguments.py)", p->ep,
                          experts);
    if ((rc = num32(m, F_ETP, 65536, 0, &p->etp)) ||
        (rc = choice(m, F_MOE_DISPATCHER, dispatchers, 0, &d)))
        return rc;
    p->moe_dispatcher = (enum spsim_moe_dispatcher)d;
    return flex_dispatcher(m, p);
}

/* Selective recomputation's modules (--recompute-modules, default core_attn). */
static int
recompute_modules(const struct mg *m, struct spsim_parallel *p)
{
    if (!m->given[F_RECOMPUTE_MODULES])
        return SPSIM_OK;
    if (spsim_recompute_modules_parse(m->value[F_RECOMPUTE_MODULES], &p->recompute_modules))
        return flag_error(m, F_RECOMPUTE_MODULES, "%s is not a list of modules spsim knows",
                          SPSIM_Q(m->value[F_RECOMPUTE_MODULES]));
    /* core_attn alone is Megatron's default, which spsim writes as 0. */
    if (p->recompute_modules == SPSIM_RMOD_CORE_ATTN)
        p->recompute_modules = 0;
    return SPSIM_OK;
}

/* Recomputation: selective (its modules), or full by --recompute-method uniform or block over
 * --recompute-num-layers; uniform groups of one layer are spsim's default full mode. */
static int
recompute(const struct mg *m, struct spsim_parallel *p)
{
    static const char *const granularities[] = {"selective", "full", NULL};
    static const char *const methods[] = {"uniform", "block", NULL};
    int g = m->given[F_RECOMPUTE_ACT] ? 0 : -1, method = -1, rc;
    if ((rc = choice(m, F_RECOMPUTE_GRAN, granularities, g, &g)) || (rc = recompute_modules(m, p)))
        return rc;
    p->recompute = g < 0    ? SPSIM_RECOMPUTE_NONE
                   : g == 0 ? SPSIM_RECOMPUTE_SELECTIVE
                            : SPSIM_RECOMPUTE_FULL;
    if (p->recompute != SPSIM_RECOMPUTE_FULL)
        return SPSIM_OK;
    if ((rc = choice(m, F_RECOMPUTE_METHOD, methods, -1, &method)) ||
        (rc = num32(m, F_RECOMPUTE_LAYERS, 4096, 1, &p->recompute_layers)))
        return rc;
    if (method < 0)
        return flag_error(m, F_RECOMPUTE_METHOD,
                          "missing: full recomputation needs uniform or "
                          "block (transformer_config.py)");
    p->recompute_method =
        method == 0 ? SPSIM_RECOMPUTE_METHOD_UNIFORM : SPSIM_RECOMPUTE_METHOD_BLOCK;
    if (method == 0 && p->recompute_layers == 1) {
        p->recompute_method = SPSIM_RECOMPUTE_METHOD_DEFAULT;
        p->recompute_layers = 0;
    }
    return SPSIM_OK;
}

/* Context parallelism's exchange (--cp-comm-type, --hierarchical-context-parallel-sizes). */
static int
context_parallel(const struct mg *m, struct spsim_parallel *p)
{
    if (m->given[F_CP_COMM] && spsim_cp_comm_parse(m->value[F_CP_COMM], &p->cp_comm_type))
        return flag_error(m, F_CP_COMM, "%s is not p2p, all_gather, a2a or a2a+p2p",
                          SPSIM_Q(m->value[F_CP_COMM]));
    if (!m->given[F_HCP])
        return SPSIM_OK;
    unsigned a = 0, b = 0;
    char end = 0;
    if (sscanf(m->value[F_HCP], "%u,%u%c", &a, &b, &end) != 2 || !a || !b)
        return flag_error(m, F_HCP, "%s is not two sizes", SPSIM_Q(m->value[F_HCP]));
    p->hcp_sizes[0] = a;
    p->hcp_sizes[1] = b;
    return SPSIM_OK;
}

/* Sharding and gradient buffers: Megatron-FSDP's strategy (optim = the distributed optimizer,
 * optim_grads, optim_grads_params), the gradient reduction's dtype, the parameter gather. */
/* --optimizer adam, muon or dist_muon (arguments.py: dist_muon is muon with
 * --use-distributed-optimizer) and Muon's flags that change its cost (engine/optimizer.c);
 * --muon-momentum, --muon-scale-mode and --muon-extra-scale-factor cost nothing. Newton-Schulz in
 * BF16 (fp32_matmul_prec medium), quintic coefficients (c != 0: the A·A GEMM) and Adam for the
 * other parameters are what spsim models. */
static int
optimizer_kind(const struct mg *m, struct spsim_parallel *p)
{
    static const char *const kinds[] = {"adam", "muon", "dist_muon", NULL};
    static const char *const modes[] = {"duplicated", "blockwise", NULL};
    static const char *const prec[] = {"medium", NULL}, *const coeff[] = {"quintic", NULL};
    static const char *const scalar[] = {"adam", NULL};
    int k = 0, mode = 0, unused = 0, rc;
    if ((rc = choice(m, F_OPTIMIZER, kinds, 0, &k)))
        return rc;
    /* the hybrid device optimizer (--optimizer-cpu-offload); arguments.py's rules are
     * spsim_parallel_check's */
    p->optimizer_cpu_offload = m->given[F_OPT_OFFLOAD];
    p->overlap_cpu_optimizer_d2h_h2d = m->given[F_OPT_OFFLOAD_OVERLAP];
    p->log_params_norm = m->given[F_LOG_PARAMS_NORM];
    p->log_num_zeros_in_grad = m->given[F_LOG_ZEROS];
    p->no_gradient_accumulation_fusion = m->given[F_NO_WGRAD_FUSION];
    p->no_create_attention_mask_in_dataloader = m->given[F_NO_MASK];
    p->no_check_for_nan_in_loss_and_grad = m->given[F_NO_NAN_CHECK];
    p->tensorboard = m->given[F_TENSORBOARD];
    p->log_timers_to_tensorboard = m->given[F_LOG_TIMERS_TB];
    p->log_memory_to_tensorboard = m->given[F_LOG_MEMORY_TB];
    if ((rc = num32(m, F_LOG_INTERVAL, UINT32_MAX, 0, &p->log_interval)))
        return rc;
    /* The limit counts only with the deferral (model_parallel_config.py:555 checks it then;
     * Megatron-Bridge writes -1 beside a deferral that is off, comm_overlap.py:436-437). */
    p->defer_embedding_wgrad_compute = m->given[F_DEFER_EMB_WGRAD];
    uint64_t limit = 0;
    if (p->defer_embedding_wgrad_compute &&
        (rc = num(m, F_WGRAD_DEFERRAL_LIMIT, 0, UINT32_MAX, 0, &limit)))
        return rc;
    p->wgrad_deferral_limit = (uint32_t)limit;
    if ((rc = probability(m, F_OPT_OFFLOAD_FRACTION, 0.0, &p->optimizer_offload_fraction)))
        return rc;
    if (k == 0)
        return SPSIM_OK; /* Megatron ignores the muon flags with Adam */
    if ((rc = choice(m, F_MUON_TP_MODE, modes, 0, &mode)) ||
        (rc = choice(m, F_MUON_PREC, prec, 0, &unused)) ||
        (rc = choice(m, F_MUON_COEFF, coeff, 0, &unused)) ||
        (rc = choice(m, F_MUON_SCALAR, scalar, 0, &unused)))
        return rc;
    p->optimizer = SPSIM_OPTIMIZER_MUON;
    if (k == 2)
        p->distributed_optimizer = true;
    p->muon_tp_mode = (enum spsim_muon_tp_mode)mode;
    p->muon_nesterov = m->given[F_MUON_NESTEROV];
    p->muon_no_split_qkv = m->given[F_MUON_NO_SPLIT];
    return num32(m, F_MUON_NS, 100, 0, &p->muon_ns_steps);
}

/* The loss's fusion (--cross-entropy-loss-fusion; the impl counts only with it,
 * language_module.py:173). Megatron-LM's launcher refuses TE's (arguments.py:1697-1702: "disabled
 * due to stability issues"); Megatron-Bridge's recipes run it (scripts/performance/utils/
 * overrides.py), so a recipe or dump may. */
static int
cross_entropy(const struct mg *m, struct spsim_parallel *p)
{
    static const char *const impls[] = {"native", "te", NULL};
    int impl = 0, rc = choice(m, F_CE_IMPL, impls, 0, &impl);
    if (rc)
        return rc;
    p->cross_entropy_loss_fusion = m->given[F_CE_FUSION];
    p->cross_entropy_fusion_impl = impl ? SPSIM_CE_TE : SPSIM_CE_NATIVE;
    if (p->cross_entropy_loss_fusion && impl && !m->yaml)
        return rule_error(m, F_CE_IMPL,
                          "Transformer Engine cross entropy loss fusion is disabled due to "
                          "stability issues (Megatron-LM arguments.py); use native, or omit "
                          "--cross-entropy-loss-fusion");
    return SPSIM_OK;
}

/* The precision-aware optimizer (--use-precision-aware-optimizer) and its dtypes, with
 * Megatron's choices per flag (arguments.py); the rules between them are spsim_parallel_check's. */
static int
optimizer_dtypes(const struct mg *m, struct spsim_parallel *p)
{
    static const char *const grads[] = {"fp32", "bf16", NULL}, *const params[] = {"fp32", "fp16",
                                                                                  NULL};
    static const char *const moments[] = {"fp32", "fp16", "bf16", "fp8", NULL};
    static const enum spsim_opt_dtype g_as[] = {SPSIM_OPT_FP32, SPSIM_OPT_BF16},
                                      p_as[] = {SPSIM_OPT_FP32, SPSIM_OPT_FP16},
                                      m_as[] = {SPSIM_OPT_FP32, SPSIM_OPT_FP16, SPSIM_OPT_BF16,
                                                SPSIM_OPT_FP8};
    int g = 0, w = 0, a = 0, a2 = 0, rc;
    if ((rc = choice(m, F_MAIN_GRADS, grads, 0, &g)) ||
        (rc = choice(m, F_MAIN_PARAMS, params, 0, &w)) ||
        (rc = choice(m, F_EXP_AVG, moments, 0, &a)) ||
        (rc = choice(m, F_EXP_AVG_SQ, moments, 0, &a2)))
        return rc;
    p->precision_aware_optimizer = m->given[F_PAO];
    p->main_grads_dtype = g_as[g];
    p->main_params_dtype = p_as[w];
    p->exp_avg_dtype = m_as[a];
    p->exp_avg_sq_dtype = m_as[a2];
    return SPSIM_OK;
}

static int
sharding(const struct mg *m, struct spsim_parallel *p)
{
    static const char *const strategies[] = {"no_shard", "optim", "optim_grads",
                                             "optim_grads_params", NULL};
    /* arguments.py (d98e8a64:3190): --data-parallel-sharding-strategy defaults to
     * optim_grads_params (Megatron-Core's DDP config defaults to no_shard: Bridge's recipes). */
    int level = 0;
    int rc = choice(m, F_SHARDING, strategies, m->given[F_FSDP] ? 3 : 0, &level);
    if (rc != SPSIM_OK)
        return rc;
    if (m->given[F_SHARDING] && !m->given[F_FSDP])
        return flag_error(m, F_SHARDING, "counts only with --use-megatron-fsdp");
    p->zero = (uint32_t)level;
    p->distributed_optimizer = m->given[F_DISTOPT];
    if (m->given[F_GRAD_FP32] && m->given[F_GRAD_BF16])
        return flag_error(m, F_GRAD_BF16, "given with --accumulate-allreduce-grads-in-fp32");
    p->grad_reduce_in_fp32 = m->given[F_GRAD_FP32] ? 1 : m->given[F_GRAD_BF16] ? 0 : -1;
    p->overlap_param_gather = m->given[F_OVERLAP_PARAM];
    p->bridge_ddp = m->yaml; /* a recipe: Bridge's comm_overlap, not arguments.py, decides */
    /* HSDP (arguments.py: --num-distributed-optimizer-instances, default 1;
     * --outer-dp-sharding-strategy no_shard|optim, default no_shard). */
    static const char *const outer[] = {"no_shard", "optim", NULL};
    int o = 0;
    if ((rc = num32(m, F_DIST_OPT_INSTANCES, 65536, 1, &p->dist_opt_instances)) ||
        (rc = choice(m, F_OUTER_SHARDING, outer, 0, &o)))
        return rc;
    p->outer_dp_shard = o == 1;
    int rc2 = optimizer_dtypes(m, p);
    if (!rc2)
        rc2 = cross_entropy(m, p);
    return rc2 ? rc2 : optimizer_kind(m, p);
}

/* The data type: --bf16 or --fp16, and FP8 GEMMs with --fp8-format, NVFP4 ones with
 * --fp4-format e2m1 (its only value; --fp4-recipe nvfp4, the default, TE NVFP4BlockScaling;
 * 'custom' quantizers are not modelled). Megatron refuses both formats together. */
static int
dtype(const struct mg *m, enum spsim_dtype *out)
{
    static const char *const formats[] = {"e4m3", "hybrid", NULL};
    static const char *const fp4[] = {"e2m1", NULL}, *const fp4_recipes[] = {"nvfp4", NULL};
    int f = -1, f4 = -1, r4 = 0, rc = choice(m, F_FP8, formats, -1, &f);
    if (rc == SPSIM_OK)
        rc = choice(m, F_FP4, fp4, -1, &f4);
    if (rc == SPSIM_OK)
        rc = choice(m, F_FP4_RECIPE, fp4_recipes, 0, &r4);
    if (rc != SPSIM_OK)
        return rc;
    if (f >= 0 && f4 >= 0)
        return flag_error(m, F_FP4, "given with --fp8-format");
    if (m->given[F_FP4_PARAM] && f4 < 0) /* arguments.py refuses it too */
        return flag_error(m, F_FP4_PARAM, "needs --fp4-format");
    if (m->given[F_BF16] && m->given[F_FP16])
        return flag_error(m, F_FP16, "given with --bf16");
    if (!m->given[F_BF16] && !m->given[F_FP16])
        return flag_error(m, F_BF16,
                          "missing: without --bf16 or --fp16 Megatron-LM trains in "
                          "fp32, which spsim does not model");
    *out = f >= 0 ? SPSIM_DTYPE_FP8 : m->given[F_BF16] ? SPSIM_DTYPE_BF16 : SPSIM_DTYPE_FP16;
    if (f4 >= 0)
        *out = SPSIM_DTYPE_NVFP4;
    return SPSIM_OK;
}

/* --fp8-recipe (Megatron's names; tensorwise is current scaling; default delayed) and
 * --fp8-param-gather, read with --fp8-format only (Megatron ignores them without it). */
static int
fp8(const struct mg *m, struct spsim_parallel *p)
{
    static const char *const recipes[] = {"delayed", "tensorwise", "mxfp8", "blockwise", NULL};
    static const enum spsim_fp8_recipe as[] = {SPSIM_FP8_DELAYED, SPSIM_FP8_CURRENT,
                                               SPSIM_FP8_MXFP8, SPSIM_FP8_BLOCKWISE};
    int r = 0, rc = choice(m, F_FP8_RECIPE, recipes, 0, &r);
    if (rc != SPSIM_OK || (p->dtype != SPSIM_DTYPE_FP8 && p->dtype != SPSIM_DTYPE_NVFP4))
        return rc;
    /* FP8 attention (TE DotProductAttention in FP8): no hardware profile has a sourced FP8
     * fused-attention rate, and spsim will not invent one. */
    for (int f = F_FP8_DPA; f <= F_FP8_MHA; f++)
        if (m->given[f])
            return flag_error(m, f,
                              "FP8 attention is not modelled (no sourced FP8 "
                              "fused-attention rate; drop it for BF16 attention)");
    if (p->dtype == SPSIM_DTYPE_NVFP4) { /* --fp4-param-gather: the NVFP4 weights gathered */
        p->fp8_param_gather = m->given[F_FP4_PARAM];
        return SPSIM_OK;
    }
    p->fp8_recipe = as[r];
    p->fp8_param_gather = m->given[F_FP8_PARAM];
    return SPSIM_OK;
}

/* --first-last-layers-bf16 and its two counts, kept whatever the dtype: Megatron reads them
 * for FP8 and FP4 only, and so does spsim (bf16_layers.c). The counts default to Megatron's
 * 1, 1 (transformer_config.py); in a Megatron-Bridge recipe that sets first_last_layers_bf16
 * to 0, 0: its MixedPrecisionConfig defaults them so and overwrites the model's fields with
 * its own (Bridge training/mixed_precision.py, update_config_with_precision_overrides). */
static int
bf16_ends(const struct mg *m, struct spsim_parallel *p)
{
    uint64_t dflt = m->yaml && m->given[F_BF16_ENDS] ? 0 : 1, start = dflt, end = dflt;
    int rc = num(m, F_BF16_START, 0, 65536, dflt, &start);
    if (rc == SPSIM_OK)
        rc = num(m, F_BF16_END, 0, 65536, dflt, &end);
    p->first_last_layers_bf16 = m->given[F_BF16_ENDS];
    p->bf16_layers_start = (uint32_t)start;
    p->bf16_layers_end = (uint32_t)end;
    return rc;
}

/* tp, pp, cp, vpp, dp (the world size over tp·pp·cp, as arguments.py derives it), sp. */
static int
grid(const struct mg *m, uint32_t layers, struct spsim_megatron_config *out)
{
    struct spsim_parallel *p = &out->par;
    uint32_t nproc = 1, nnodes = 1, per_chunk = 0;
    int rc;
    if ((rc = num32(m, F_TP, 65536, 1, &p->tp)) || (rc = num32(m, F_PP, 65536, 1, &p->pp)) ||
        (rc = num32(m, F_CP, 65536, 1, &p->cp)) || (rc = num32(m, F_VPP, 65536, 1, &p->vpp)) ||
        (rc = num32(m, F_VPP_LAYERS, 4096, 0, &per_chunk)) ||
        (rc = num32(m, F_NPROC, 65536, 1, &nproc)) || (rc = num32(m, F_NNODES, 65536, 1, &nnodes)))
        return rc;
    /* arguments.py:959-977 @d98e8a64: the embedding and the loss count as a layer each when
     * their --account-for flag is given, before the layers split into stages and chunks. */
    uint64_t split = (uint64_t)layers + m->given[F_ACCOUNT_EMB] + m->given[F_ACCOUNT_LOSS];
    if (per_chunk && split % ((uint64_t)p->pp * per_chunk))
        return rule_error(m, F_VPP_LAYERS,
                          "%u layers per chunk do not divide %llu layers%s over %u "
                          "stages",
                          per_chunk, (unsigned long long)split,
                          split > layers ? " (the accounted embedding or loss included)" : "",
                          p->pp);
    if (per_chunk)
        p->vpp = (uint32_t)(split / ((uint64_t)p->pp * per_chunk));
    out->world_size_given = m->given[F_NPROC] || m->given[F_NNODES];
    uint64_t world = (uint64_t)nproc * nnodes, model = (uint64_t)p->tp * p->pp * p->cp;
    if (out->world_size_given && world % model)
        return rule_error(m, m->given[F_NPROC] ? F_NPROC : F_NNODES,
                          "the world size %llu is not a multiple of tp · pp · cp = %llu",
                          (unsigned long long)world, (unsigned long long)model);
    /* 65536 nodes of 65536 processes over tp 1 is dp 2^32, which a 32-bit dp would wrap to 0. */
    if (out->world_size_given && world / model > UINT32_MAX)
        return rule_error(m, m->given[F_NNODES] ? F_NNODES : F_NPROC,
                          "the world size %llu over tp · pp · cp = %llu is a data-parallel size "
                          "of %llu, beyond 2^32 - 1",
                          (unsigned long long)world, (unsigned long long)model,
                          (unsigned long long)(world / model));
    p->dp = out->world_size_given ? (uint32_t)(world / model) : 1;
    /* arguments.py: "Disabling sequence parallelism because tensor model parallelism is
     * disabled". */
    p->sp = m->given[F_SP] && p->tp > 1;
    return SPSIM_OK;
}

/* CUDA graphs: --cuda-graph-impl, or the legacy --enable-cuda-graph (local) and
 * --external-cuda-graph (transformer_engine); --cuda-graph-modules or its old name
 * --cuda-graph-scope (Megatron-LM docs/user-guide/features/cuda_graph.md, Migration Guide). */
static int
cuda_graphs(const struct mg *m, struct spsim_parallel *p)
{
    if (m->given[F_CUDA_GRAPH_IMPL]) {
        if (spsim_cuda_graph_impl_parse(m->value[F_CUDA_GRAPH_IMPL], &p->cuda_graph_impl))
            return flag_error(m, F_CUDA_GRAPH_IMPL,
                              "%s is not one of none, local, transformer_engine, full_iteration",
                              SPSIM_Q(m->value[F_CUDA_GRAPH_IMPL]));
    } else if (m->given[F_ENABLE_CUDA_GRAPH]) {
        p->cuda_graph_impl = SPSIM_CUDA_GRAPH_LOCAL;
    } else if (m->given[F_EXTERNAL_CUDA_GRAPH]) {
        p->cuda_graph_impl = SPSIM_CUDA_GRAPH_TE;
    }
    int id = m->given[F_CUDA_GRAPH_MODULES] ? F_CUDA_GRAPH_MODULES : F_CUDA_GRAPH_SCOPE;
    /* Without an implementation the modules have no effect (transformer_config.py); a recipe
     * writes them whatever the implementation. unused_flags lists them. */
    if (!m->given[id] || no_graphs(m))
        return SPSIM_OK;
    if (spsim_cuda_graph_scope_parse(m->value[id], &p->cuda_graph_scope))
        return flag_error(m, id,
                          "%s is not a list of attn, mlp, moe, moe_router, "
                          "moe_preprocess, mamba, full_iteration",
                          SPSIM_Q(m->value[id]));
    /* Megatron's migration: `local` with full_iteration alone is --cuda-graph-impl
     * full_iteration. */
    if (p->cuda_graph_scope == SPSIM_CGS_FULL_ITERATION &&
        p->cuda_graph_impl == SPSIM_CUDA_GRAPH_LOCAL) {
        p->cuda_graph_impl = SPSIM_CUDA_GRAPH_FULL_ITERATION;
        p->cuda_graph_scope = 0;
    }
    return SPSIM_OK;
}

/* Uneven pipeline stages, as the CLI's options of the same names (README "Uneven pipeline
 * stages"); the engine checks Megatron's rules (one way at a time, divisibility, the layout's
 * symbols). The layout is kept in `out`, which par.pipeline_layout points into. */
static int
uneven_stages(const struct mg *m, struct spsim_megatron_config *out)
{
    struct spsim_parallel *p = &out->par;
    int rc = num32(m, F_MB_GROUP, 1u << 24, 0, &p->microbatch_group);
    if (rc != SPSIM_OK)
        return rc;
    p->account_embedding = m->given[F_ACCOUNT_EMB];
    p->account_loss = m->given[F_ACCOUNT_LOSS];
    rc = num32(m, F_FIRST_LAYERS, 65536, 0, &p->first_stage_layers);
    if (rc == SPSIM_OK)
        rc = num32(m, F_LAST_LAYERS, 65536, 0, &p->last_stage_layers);
    if (rc != SPSIM_OK || !m->given[F_LAYOUT])
        return rc;
    if (strlen(m->value[F_LAYOUT]) >= sizeof(out->pipeline_layout))
        return flag_error(m, F_LAYOUT, "longer than %zu characters",
                          sizeof(out->pipeline_layout) - 1);
    snprintf(out->pipeline_layout, sizeof(out->pipeline_layout), "%s", m->value[F_LAYOUT]);
    p->pipeline_layout = out->pipeline_layout;
    return SPSIM_OK;
}

/* The flags arguments.py refuses beside a pattern with pipeline segments ('|'): the segments
 * are the layout. */
static int
segments_exclusive(const struct mg *m, int id)
{
    static const int excl[] = {F_FIRST_LAYERS, F_LAST_LAYERS, F_VPP_LAYERS,  F_VPP,
                               F_LAYOUT,       F_ACCOUNT_EMB, F_ACCOUNT_LOSS};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(excl); i++)
        if (m->given[excl[i]])
            return rule_error(m, excl[i],
                              "should not be used with %s with pipe separators: the pipeline "
                              "layout is defined by the '|' segments (arguments.py)",
                              flags[id].name);
    return SPSIM_OK;
}

/* A hybrid pattern's pipeline segments ('|'), as arguments.py and hybrid_layer_allocation.py
 * (select_pipeline_segment, Megatron-LM d98e8a64) take them: their count a multiple of pp,
 * vpp = segments / pp where there are more, segment vp·pp + rank on pipeline rank `rank` at
 * virtual stage vp, which is the order of a --pipeline-model-parallel-layout's stages; so the
 * segments are written as that layout (the embedding on the first, MTP and the loss on the
 * last), which the engine checks and composes. */
static int
hybrid_segments(const struct mg *m, const struct spsim_model_shape *s,
                struct spsim_megatron_config *out)
{
    int id = m->given[F_HYBRID] ? F_HYBRID : F_HYBRID_OVERRIDE;
    if (!s->hybrid_pattern || !m->given[id])
        return SPSIM_OK;
    const char *v = m->value[id];
    size_t n = strcspn(v, "/"), segments = 1;
    for (size_t i = 0; i < n; i++)
        segments += v[i] == '|';
    if (segments == 1)
        return SPSIM_OK;
    int rc = segments_exclusive(m, id);
    struct spsim_parallel *p = &out->par;
    if (rc == SPSIM_OK && segments % p->pp != 0)
        return rule_error(m, id,
                          "The number of hybrid pipeline segments described by "
                          "--hybrid-layer-pattern must be evenly divisible by "
                          "--pipeline-model-parallel-size. Got %zu segments and %u pipeline "
                          "parallel size.",
                          segments, p->pp);
    if (rc != SPSIM_OK)
        return rc;
    char *o = out->pipeline_layout;
    size_t cap = sizeof(out->pipeline_layout), k = 0;
    if (n + s->mtp_layers + 3 > cap)
        return flag_error(m, id, "%zu layers and segments: a layout of at most %zu symbols", n,
                          cap - 3);
    o[k++] = 'E';
    for (size_t i = 0; i < n; i++)
        o[k++] = v[i] == '|' ? '|' : 't';
    for (uint32_t i = 0; i < s->mtp_layers; i++)
        o[k++] = 'm';
    o[k++] = 'L';
    o[k] = '\0';
    p->pipeline_layout = o;
    p->vpp = segments > p->pp ? (uint32_t)(segments / p->pp) : 1;
    return SPSIM_OK;
}

static int
parallel(const struct mg *m, const struct spsim_model_shape *s, struct spsim_megatron_config *out)
{
    struct spsim_parallel *p = &out->par;
    uint64_t offload = 0;
    int rc;
    spsim_parallel_defaults(p);
    if ((rc = expert_parallel(m, s->experts, p)) || (rc = grid(m, s->layers, out)) ||
        (rc = recompute(m, p)) || (rc = dtype(m, &p->dtype)) || (rc = fp8(m, p)) ||
        (rc = bf16_ends(m, p)) || (rc = num(m, F_OFFLOAD_LAYERS, 0, 4096, 0, &offload)) ||
        (rc = num32(m, F_MBS, 65536, 1, &p->mbs)))
        return rc;
    /* The global batch defaults to one micro-batch per data-parallel rank. */
    if ((rc = num(m, F_GBS, 1, 1ull << 32, (uint64_t)p->mbs * p->dp, &p->gbs)) ||
        (rc = num32(m, F_SEQ, 16777216, 0, &p->seq)))
        return rc;
    p->offload_layers = (uint32_t)offload;
    if ((rc = context_parallel(m, p)) || (rc = sharding(m, p)))
        return rc;
    p->overlap_grad_reduce = m->given[F_OVERLAP];
    p->no_overlap_p2p = m->given[F_NO_OVERLAP_P2P];
    /* Megatron-Bridge turns the comm_overlap section's TP overlap off without tp > 1 and sp
     * (comm_overlap.py _get_model_comm_overlap_cfgs). */
    const char *tpo = m->shown[F_TP_COMM_OVERLAP];
    p->tp_comm_overlap = m->given[F_TP_COMM_OVERLAP] &&
                         !(tpo && strncmp(tpo, "comm_overlap.", 13) == 0 && (p->tp < 2 || !p->sp));
    p->moe_a2a_overlap = m->given[F_A2A_OVERLAP];
    if ((rc = uneven_stages(m, out)) || (rc = hybrid_segments(m, s, out)))
        return rc;
    p->delay_wgrad_compute = m->given[F_DELAY_WGRAD];
    p->flash_attn = -1;
    /* --attention-backend (arguments.py AttnBackend): flash and fused name TE's kernels, auto
     * leaves them to TE; unfused and local are the model's standard attention (model_shape). */
    static const char *const backends[] = {"unfused", "local", "flash", "fused", "auto", NULL};
    int backend = 4;
    if ((rc = choice(m, F_BACKEND, backends, 4, &backend)))
        return rc;
    p->attention_backend = backend == 2   ? SPSIM_ATTN_FLASH
                           : backend == 3 ? SPSIM_ATTN_FUSED
                                          : SPSIM_ATTN_AUTO;
    if ((rc = cuda_graphs(m, p)))
        return rc;
    return num(m, F_DDP_BUCKET, 1, 1ull << 40, 0, &p->ddp_bucket_size);
}

static bool
ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

/* Megatron-LM's training scripts of other models than pretrain_gpt.py's (GPT and its mixtures
 * of experts): refused by name. */
static int
launched_script(const struct mg *m, const struct spsim_sh_word *w)
{
    static const char *const others[] = {"bert", "t5",         "vlm",  "vision", "retro",
                                         "ict",  "multimodal", "mimo", "llava",  NULL};
    const char *base = strrchr(w->text, '/') ? strrchr(w->text, '/') + 1 : w->text;
    for (size_t i = 0; others[i]; i++)
        if (strstr(base, others[i]))
            return spsim_fail(m->err, SPSIM_EFIELD,
                              "%s:%u: %s: spsim models pretrain_gpt.py's models (GPT and its "
                              "mixtures of experts) and pretrain_hybrid.py's, not this one",
                              m->origin, w->line, SPSIM_Q(base));
    return SPSIM_OK;
}

/* The launcher's flags before the script: torchrun's (after `python -m torch.distributed.run`,
 * `uv run` and the like), not the words that name the programs. */
static int
launcher_flags(struct mg *m, const struct spsim_sh_words *c, size_t script)
{
    size_t from = 1;
    for (size_t i = 0; i < script; i++)
        if (ends_with(c->w[i].text, "torchrun") || strstr(c->w[i].text, "torch.distributed."))
            from = i + 1;
    for (size_t i = from; i < script; i++) {
        if (!is_flag(c->w[i].text)) {
            if (strchr(c->w[i].text, '=')) /* env NAME=VALUE ...: an environment variable */
                unmodelled(m, c->w[i].text);
            continue;
        }
        size_t end = i + 1;
        while (end < script && !is_flag(c->w[end].text))
            end++;
        int rc = read_flags(m, c, i, end);
        if (rc != SPSIM_OK)
            return rc;
        i = end - 1;
    }
    return SPSIM_OK;
}

/* The launch command (the one running a .py script: the launcher's flags before it, Megatron's
 * after), or, without one, every command that is only flags. */
static int
collect(struct mg *m, const struct spsim_sh_script *sc, bool yaml)
{
    for (size_t i = 0; yaml && i < sc->n; i++) { /* a recipe: one command per key */
        int rc = read_flags(m, &sc->cmd[i], 0, sc->cmd[i].n);
        if (rc != SPSIM_OK)
            return rc;
    }
    if (yaml)
        return SPSIM_OK;
    for (size_t i = 0; i < sc->n; i++)
        for (size_t j = 0; j < sc->cmd[i].n; j++)
            if (ends_with(sc->cmd[i].w[j].text, ".py")) {
                int rc = launched_script(m, &sc->cmd[i].w[j]);
                const char *py = sc->cmd[i].w[j].text;
                m->hybrid_script = strstr(py, "pretrain_hybrid") || strstr(py, "pretrain_mamba");
                if (rc == SPSIM_OK)
                    rc = launcher_flags(m, &sc->cmd[i], j);
                return rc ? rc : read_flags(m, &sc->cmd[i], j + 1, sc->cmd[i].n);
            }
    bool any = false;
    for (size_t i = 0; i < sc->n; i++) {
        if (!is_flag(sc->cmd[i].w[0].text))
            continue;
        int rc = read_flags(m, &sc->cmd[i], 0, sc->cmd[i].n);
        if (rc != SPSIM_OK)
            return rc;
        any = true;
    }
    if (!any)
        return spsim_fail(m->err, SPSIM_EFIELD,
                          "%s: no launch command (a command running a .py script, such as "
                          "torchrun ... pretrain_gpt.py --num-layers ...) and no flags; a "
                          "launch inside a string (bash -c, a here-document, sbatch --wrap) is "
                          "not followed",
                          m->origin);
    return SPSIM_OK;
}

/* Sliding-window attention: --window-size "L,R" or "(L,R)" (arguments.py tuple_type; L = -1
 * unbounded, i.e. none) attends to L + R + 1 positions (Megatron-Bridge flop_utils.py's
 * effective window); --window-attn-skip-freq N (every N-th layer full; a list pattern is not
 * modelled). */
static int
window_shape(const struct mg *m, struct spsim_model_shape *s)
{
    if (m->given[F_WINDOW]) {
        const char *t = m->value[F_WINDOW];
        long l = 0, r = 0;
        int used = 0;
        if (sscanf(t, t[0] == '(' ? "(%ld,%ld)%n" : "%ld,%ld%n", &l, &r, &used) != 2 || t[used] ||
            l < -1 || r < 0 || l + r + 1 > 1048576)
            return flag_error(m, F_WINDOW,
                              "%s is not two integers L,R (L >= -1, R >= 0, L + R < 1048576)",
                              SPSIM_Q(t));
        s->window = l < 0 ? 0 : (uint32_t)(l + r + 1);
    }
    if (m->given[F_WINDOW_SKIP] && strchr(m->value[F_WINDOW_SKIP], '['))
        return flag_error(m, F_WINDOW_SKIP, "a list pattern is not modelled; give an integer");
    int rc = num32(m, F_WINDOW_SKIP, SPSIM_MODEL_MAX_LAYERS, 0, &s->window_skip_freq);
    if (rc == SPSIM_OK && s->window_skip_freq && !s->window)
        s->window_skip_freq = 0; /* without a window every layer is full anyway */
    /* --softmax-type (TransformerConfig.softmax_type, a Literal the argument factory offers
     * as choices): attention sinks. */
    int type = 0;
    if (rc == SPSIM_OK &&
        (rc = choice(m, F_SOFTMAX_TYPE, spsim_softmax_names, 0, &type)) == SPSIM_OK)
        s->softmax_type = (enum spsim_softmax)type;
    return rc;
}

/* A pattern's symbols: those spsim builds (hybrid_layer_allocation.py Symbols), the others
 * refused naming what they build. */
static int
pattern_symbols(const struct mg *m, int id, const char *p, size_t n, bool allow_pipe)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] && (strchr("M*-EG", p[i]) || (allow_pipe && p[i] == '|')))
            continue;
        const char *why = p[i] == '|'   ? "a pipe ('|') in an MTP pattern: pipeline segments "
                                          "belong to the main pattern (_validate_pattern)"
                          : p[i] == 'D' ? "'D' (DeepSeek sparse attention) is not modelled"
                          : p[i] == '+' ? "'+' (multi-latent attention) is not modelled in a "
                                          "hybrid model"
                                        : "not a layer symbol (M Mamba, G Gated DeltaNet, * "
                                          "attention, - MLP, E MoE)";
        return flag_error(m, id, "%s at offset %zu: %s", SPSIM_Q(m->value[id]), i, why);
    }
    return SPSIM_OK;
}

/* The MTP depths of a unified pattern ("main/mtp/mtp": one depth per part, all identical,
 * hybrid_layer_allocation.py parse_hybrid_pattern), or the legacy --mtp-hybrid-override-pattern
 * repeated --mtp-num-layers times (arguments.py's conversion). */
static int
hybrid_mtp(const struct mg *m, int id, const char *tail, struct spsim_model_shape *s, char *buf)
{
    uint32_t depths = 0;
    int rc = SPSIM_OK;
    if (*tail) {
        size_t n = strcspn(tail + 1, "/");
        for (const char *p = tail; *p == '/'; p += n + 1, depths++)
            if (strncmp(p + 1, tail + 1, n) != 0 || (p[n + 1] != '/' && p[n + 1]))
                return flag_error(m, id, "%s: the MTP patterns after '/' must be identical",
                                  SPSIM_Q(m->value[id]));
        memcpy(buf, tail + 1, n);
        buf[n] = '\0';
        depths = n ? depths : 0;
    } else if (m->given[F_MTP_HYBRID] &&
               (rc = num32(m, F_MTP, SPSIM_MODEL_MAX_LAYERS, 0, &depths)) == SPSIM_OK && depths) {
        if (strlen(m->value[F_MTP_HYBRID]) > SPSIM_MODEL_MAX_LAYERS)
            return flag_error(m, F_MTP_HYBRID, "longer than %u symbols", SPSIM_MODEL_MAX_LAYERS);
        strcpy(buf, m->value[F_MTP_HYBRID]);
        id = F_MTP_HYBRID;
    } else if (rc == SPSIM_OK && m->given[F_MTP] && strcmp(m->value[F_MTP], "0") != 0) {
        return flag_error(m, F_MTP,
                          "a hybrid model's MTP depths need their pattern (after '/' in "
                          "--hybrid-layer-pattern, or --mtp-hybrid-override-pattern)");
    }
    if (rc != SPSIM_OK || !depths)
        return rc;
    s->mtp_layers = depths;
    s->mtp_pattern = buf;
    s->mtp_shared = m->given[F_MTP_REPEATED];
    return pattern_symbols(m, id, buf, strlen(buf), false);
}

/* --experimental-attention-variant (transformer_config.py: gdn, gdn2, dsa and gdn's deprecated
 * spelling gated_delta_net): gdn is the Gated DeltaNet spsim builds for 'G'. */
static int
attention_variant(const struct mg *m, bool *gdn)
{
    const char *v = m->given[F_ATTN_VARIANT] ? m->value[F_ATTN_VARIANT] : "None";
    *gdn = strcmp(v, "gdn") == 0 || strcmp(v, "gated_delta_net") == 0;
    if (*gdn || strcmp(v, "None") == 0)
        return SPSIM_OK;
    return flag_error(m, F_ATTN_VARIANT, "%s: %s", SPSIM_Q(v),
                      strcmp(v, "gdn2") == 0
                          ? "Gated DeltaNet-2 (channel-wise decay, erase and write gates) is not "
                            "modelled (gdn is)"
                      : strcmp(v, "dsa") == 0
                          ? "DeepSeek sparse attention is not modelled"
                          : "not one of gdn, gdn2, dsa (transformer_config.py)");
}

/* The Mamba-2 and Gated DeltaNet mixers' numbers, for the layers the pattern has (0: Megatron's
 * defaults, which the model fills in). */
static int
mixer_numbers(const struct mg *m, struct spsim_model_shape *s)
{
    const int mamba[] = {F_MAMBA_HEADS, F_MAMBA_HEAD_DIM, F_MAMBA_STATE, F_MAMBA_GROUPS,
                         F_MAMBA_CHUNK};
    uint32_t *mdst[] = {&s->mamba_heads, &s->mamba_head_dim, &s->mamba_state_dim, &s->mamba_groups,
                        &s->mamba_chunk};
    const int gdn[] = {F_LIN_KEY_HEADS, F_LIN_VALUE_HEADS, F_LIN_KEY_DIM, F_LIN_VALUE_DIM,
                       F_LIN_CONV};
    uint32_t *gdst[] = {&s->gdn_key_heads, &s->gdn_value_heads, &s->gdn_key_head_dim,
                        &s->gdn_value_head_dim, &s->gdn_conv};
    bool has_m = strchr(s->hybrid_pattern, 'M') || (s->mtp_pattern && strchr(s->mtp_pattern, 'M'));
    bool has_g = strchr(s->hybrid_pattern, 'G') || (s->mtp_pattern && strchr(s->mtp_pattern, 'G'));
    int rc = SPSIM_OK;
    for (size_t i = 0; rc == SPSIM_OK && i < SPSIM_ARRAY_LENGTH(mamba); i++)
        if (has_m)
            rc = num32(m, mamba[i], 1048576, 0, mdst[i]);
    for (size_t i = 0; rc == SPSIM_OK && i < SPSIM_ARRAY_LENGTH(gdn); i++)
        if (has_g)
            rc = num32(m, gdn[i], 1048576, 0, gdst[i]);
    return rc;
}

/* --hybrid-layer-pattern (or its deprecated --hybrid-override-pattern): one symbol per decoder
 * layer, the layer count (arguments.py: "ignoring --num-layers"), MTP depths after '/'. */
static int
hybrid_shape(const struct mg *m, struct spsim_model_shape *s, char *buf)
{
    int id = m->given[F_HYBRID] ? F_HYBRID : F_HYBRID_OVERRIDE;
    if (m->given[F_HYBRID] && m->given[F_HYBRID_OVERRIDE])
        return rule_error(m, F_HYBRID_OVERRIDE,
                          "--hybrid-override-pattern and --hybrid-layer-pattern cannot both be "
                          "specified (arguments.py)");
    if (!m->given[id])
        return m->hybrid_script ? flag_error(m, F_HYBRID,
                                             "missing: pretrain_hybrid.py builds its layers "
                                             "from the pattern")
                                : SPSIM_OK;
    const char *v = m->value[id];
    size_t n = strcspn(v, "/");
    if (n == 0 || n > SPSIM_MODEL_MAX_LAYERS || strlen(v) > 2 * SPSIM_MODEL_MAX_LAYERS)
        return flag_error(m, id, "%s: 1 to %u layers, the MTP patterns after '/'", SPSIM_Q(v),
                          SPSIM_MODEL_MAX_LAYERS);
    int rc = pattern_symbols(m, id, v, n, true);
    if (rc != SPSIM_OK)
        return rc;
    size_t layers = 0; /* the layers without the pipeline segments' separators */
    for (size_t i = 0; i < n; i++)
        if (v[i] != '|')
            buf[layers++] = v[i];
    buf[layers] = '\0';
    if (layers == 0)
        return flag_error(m, id, "%s: no decoder layer", SPSIM_Q(v));
    s->hybrid_pattern = buf;
    s->layers = (uint32_t)layers;
    return hybrid_mtp(m, id, v + n, s, buf + n + 1);
}

/* A GPT model with --experimental-attention-variant gdn: layer i's self-attention a Gated
 * DeltaNet where --linear-attention-freq says (an integer N: every N-th layer counted from 1
 * is SDPA; a list: 1 LA, 0 SDPA; experimental_attention_variant_module_specs.py
 * get_linear_attention_pattern), each layer written as its mixer then its MLP or MoE block
 * ('G'/'*' then 'E'/'-', as the Qwen3-Next reader and profile write it: the same modules). */
static int
gdn_gpt_shape(const struct mg *m, struct spsim_model_shape *s, uint8_t *moe, bool *has_moe,
              char *buf)
{
    uint8_t la[SPSIM_MODEL_MAX_LAYERS];
    uint32_t every = 0, n = 0;
    if (!m->given[F_LA_FREQ])
        return rule_error(m, F_LA_FREQ,
                          "missing: linear_attention_freq must be set for linear "
                          "gdn (transformer_config.py)");
    const char *v = m->value[F_LA_FREQ];
    const char *why = strchr(v, '[') ? spsim_moe_pattern_parse(v, la, s->layers, &n) : NULL;
    int rc = strchr(v, '[') ? SPSIM_OK : num32(m, F_LA_FREQ, s->layers, 0, &every);
    if (why || (strchr(v, '[') && n != s->layers))
        return flag_error(m, F_LA_FREQ, "%s: %s", SPSIM_Q(v),
                          why ? why : "needs one entry per layer");
    if (rc != SPSIM_OK || 2ull * s->layers > SPSIM_MODEL_MAX_LAYERS)
        return rc ? rc : flag_error(m, F_LAYERS, "at most %u layers", SPSIM_MODEL_MAX_LAYERS / 2);
    for (uint32_t i = 0; i < s->layers; i++) {
        bool linear = every ? (i + 1) % every != 0 : la[i] != 0;
        bool e = s->experts && (*has_moe ? moe[i] != 0 : i % s->moe_layer_freq == 0);
        buf[2 * i] = linear ? 'G' : '*';
        buf[2 * i + 1] = e ? 'E' : '-';
    }
    buf[2 * s->layers] = '\0';
    s->layers *= 2;
    s->hybrid_pattern = buf;
    s->moe_layer_freq = 1;
    *has_moe = false;
    if (s->mtp_layers) /* an MTP depth is one transformer layer: attention and its MLP or MoE */
        s->mtp_pattern = s->experts ? "*E" : "*-";
    return SPSIM_OK;
}

static int
shape(const struct mg *m, struct spsim_model_shape *s, uint8_t *pattern, bool *has_pattern,
      char *hybrid)
{
    int rc;
    bool gdn = false;
    memset(s, 0, sizeof(*s));
    if ((rc = hybrid_shape(m, s, hybrid)) || (rc = attention_variant(m, &gdn)) ||
        (rc = attention_shape(m, s)) || (rc = layer_kind(m, s)) ||
        (rc = moe_shape(m, s, pattern, has_pattern)) || (rc = mla_shape(m, s)) ||
        (gdn && !s->hybrid_pattern && (rc = gdn_gpt_shape(m, s, pattern, has_pattern, hybrid))) ||
        (s->hybrid_pattern && (rc = mixer_numbers(m, s))) || (rc = window_shape(m, s)) ||
        (rc = vocabulary(m, &s->vocab, &s->vocab_divisible_by)) ||
        (rc = needed(m, F_SEQ, 16777216, &s->seq_len)))
        return rc;
    /* The model's positions: --max-position-embeddings, else the sequence. */
    return num32(m, F_POSITIONS, 16777216, s->seq_len, &s->seq_len);
}

/* The model's name: the file's base name without its extension ("-": megatron-args). */
static void
model_name(const char *origin, char *buf, size_t cap)
{
    const char *base = strrchr(origin, '/');
    base = base ? base + 1 : origin;
    size_t n = strcspn(base, ".");
    if (strcmp(origin, "-") == 0 || n == 0)
        snprintf(buf, cap, "megatron-args");
    else
        snprintf(buf, cap, "%.*s", (int)n, base);
}

/* The flags of a recipe's base model (spsim --model): the shape as --format megatron writes
 * it, the attention kernel, the sequence and bf16 (spsim's default), nothing of the batch or
 * the grid. */
static bool
base_flag(int id)
{
    static const int ids[] = {F_LAYERS,
                              F_HIDDEN,
                              F_HEADS,
                              F_GQA,
                              F_GROUPS,
                              F_KV_CHANNELS,
                              F_FFN,
                              F_POSITIONS,
                              F_SWIGLU,
                              F_NORM,
                              F_POSITION_TYPE,
                              F_DISABLE_BIAS,
                              F_QKV_BIAS,
                              F_UNTIE,
                              F_QK_NORM,
                              F_OUTPUT_GATE,
                              F_ROTARY_PERCENT,
                              F_SHARED_GATE,
                              F_ATTN_DROPOUT,
                              F_HIDDEN_DROPOUT,
                              F_TOKENIZER,
                              F_VOCAB,
                              F_DIVISIBLE,
                              F_EXPERTS,
                              F_MOE_TOPK,
                              F_MOE_FFN,
                              F_MOE_SHARED,
                              F_MOE_FREQ,
                              F_MOE_SCORE,
                              F_MOE_CAPACITY,
                              F_MOE_GROUPS,
                              F_MOE_GROUP_TOPK,
                              F_MOE_LB_TYPE,
                              F_MOE_AUX_COEFF,
                              F_MOE_Z_COEFF,
                              F_MOE_EXPERT_BIAS,
                              F_MLA,
                              F_Q_LORA,
                              F_KV_LORA,
                              F_QK_HEAD,
                              F_QK_POS,
                              F_V_HEAD,
                              F_MTP,
                              F_WINDOW,
                              F_WINDOW_SKIP,
                              F_SOFTMAX_TYPE,
                              F_QUICK_GEGLU,
                              F_HYBRID,
                              F_MTP_REPEATED,
                              F_MAMBA_HEADS,
                              F_MAMBA_HEAD_DIM,
                              F_MAMBA_STATE,
                              F_MAMBA_GROUPS,
                              F_MAMBA_CHUNK,
                              F_SQUARED_RELU,
                              F_MOE_LATENT,
                              F_LIN_KEY_HEADS,
                              F_LIN_VALUE_HEADS,
                              F_LIN_KEY_DIM,
                              F_LIN_VALUE_DIM,
                              F_LIN_CONV,
                              F_BACKEND,
                              F_IMPL,
                              F_SEQ,
                              F_BF16};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(ids); i++)
        if (ids[i] == id)
            return true;
    return false;
}

/* The base model's flags into `words` (each naming the model as its origin). */
static int
base_words(const struct spsim_model *model, struct spsim_sh_words *words, struct spsim_error *err)
{
    struct spsim_parallel par;
    spsim_parallel_defaults(&par);
    size_t cap = 65536;
    char *text = malloc(cap);
    if (!text)
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    size_t n = spsim_megatron_format(model, &par, 1, text, cap);
    struct spsim_sh_script sc = {0};
    int rc = n < cap ? spsim_sh_parse(text, n, spsim_model_name(model), NULL, 0, &sc, err)
                     : spsim_fail(err, SPSIM_ENOMEM, "the model's flags do not fit");
    free(text);
    const struct spsim_sh_words *cmd = rc == SPSIM_OK && sc.n ? &sc.cmd[sc.n - 1] : NULL;
    bool keep = false;
    for (size_t i = 0; cmd && rc == SPSIM_OK && i < cmd->n; i++) {
        const char *w = cmd->w[i].text;
        if (is_flag(w))
            keep = base_flag(lookup(w));
        if (keep && !ends_with(w, ".py"))
            rc = spsim_sh_append(words, w, 0, NULL);
    }
    /* A recipe's absent q_lora_rank is MLATransformerConfig's 512: say the model has none. */
    const struct spsim_model_shape *s = spsim_model_get_shape(model);
    if (rc == SPSIM_OK && s->kv_lora_rank && !s->q_lora_rank &&
        (rc = spsim_sh_append(words, "--q-lora-rank", 0, NULL)) == SPSIM_OK)
        rc = spsim_sh_append(words, "None", 0, NULL);
    for (size_t i = 0; i < words->n; i++)
        words->w[i].origin = spsim_model_name(model);
    spsim_sh_free(&sc);
    return rc == SPSIM_ENOMEM ? spsim_fail(err, rc, "out of memory") : rc;
}

/* The model and configuration the flags give. */
static int
build(struct mg *m, const struct spsim_sh_script *sc, const struct spsim_sh_words *base,
      const char *name, struct spsim_megatron_config *out, struct spsim_error *err)
{
    struct spsim_model_shape s;
    uint8_t pattern[SPSIM_MODEL_MAX_LAYERS];
    char hybrid[2 * SPSIM_MODEL_MAX_LAYERS + 2];
    bool has_pattern = false;
    int rc = base && base->n ? read_flags(m, base, 0, base->n) : SPSIM_OK;
    if (rc == SPSIM_OK && (rc = collect(m, sc, m->yaml)) == SPSIM_OK &&
        (rc = shape(m, &s, pattern, &has_pattern, hybrid)) == SPSIM_OK &&
        (rc = parallel(m, &s, out)) == SPSIM_OK) {
        unused_flags(m);
        rc = spsim_model_create_pattern(&s, has_pattern ? pattern : NULL, name, &out->model, err);
    }
    return rc;
}

static bool
is_recipe(const char *origin)
{
    return ends_with(origin, ".yaml") || ends_with(origin, ".yml");
}

/* The recipes merged, as one command per key. */
static int
recipe_words(const struct spsim_megatron_input *in, size_t n, struct spsim_yaml *y,
             struct spsim_sh_script *sc, struct spsim_error *err)
{
    int rc = SPSIM_OK;
    for (size_t i = 0; rc == SPSIM_OK && i < n; i++) {
        if (!is_recipe(in[i].origin))
            return spsim_fail(err, SPSIM_EINVAL,
                              "%s: a launch script cannot be composed with other files (give "
                              "it alone, or only recipes)",
                              in[i].origin);
        rc = spsim_yaml_read(y, in[i].text, in[i].len, in[i].origin, err);
    }
    return rc ? rc : spsim_yaml_flags(y, sc, err);
}

int
spsim_megatron_parse_inputs(const struct spsim_megatron_input *in, size_t n,
                            const struct spsim_megatron_context *ctx,
                            struct spsim_megatron_config *out, struct spsim_error *err)
{
    static const struct spsim_megatron_context none = {0};
    if (!out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_megatron_parse_inputs: NULL argument");
    memset(out, 0, sizeof(*out));
    ctx = ctx ? ctx : &none;
    for (size_t i = 0; i < n; i++)
        if (!in || !in[i].text)
            return spsim_fail(err, SPSIM_EINVAL, "spsim_megatron_parse_inputs: NULL argument");
    if (n == 0 || n > SPSIM_YAML_FILES_MAX)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_megatron_parse_inputs: %zu files (1 to %u)", n,
                          SPSIM_YAML_FILES_MAX);
    const char *origin = in[n - 1].origin ? in[n - 1].origin : "-";
    bool yaml = is_recipe(in[0].origin ? in[0].origin : "-");
    struct spsim_yaml y = {0};
    struct spsim_sh_script sc = {0};
    struct spsim_sh_words base = {0};
    /* A functional-test case's MODEL_ARGS are launch-line flags, read as a launch line. */
    bool ftest = yaml && spsim_megatron_ftest_detect(in[0].text, in[0].len);
    yaml = yaml && !ftest;
    if (!yaml && n > 1)
        return spsim_fail(err, SPSIM_EINVAL,
                          "%s: a launch script or test case cannot be composed with other files "
                          "(give it alone, or only recipes)",
                          in[0].origin ? in[0].origin : "-");
    int rc = ftest  ? spsim_megatron_ftest(in[0].text, in[0].len, origin, &sc, err)
             : yaml ? recipe_words(in, n, &y, &sc, err)
                    : spsim_sh_parse(in[0].text, in[0].len, origin, ctx->env, ctx->nenv, &sc, err);
    if (rc == SPSIM_OK && yaml && ctx->model)
        rc = base_words(ctx->model, &base, err);
    struct mg m = {.origin = origin,
                   .err = err,
                   .unmodelled = out->unmodelled,
                   .yaml = yaml,
                   .assumed = out->assumed};
    if (rc == SPSIM_OK && sc.assumed[0])
        snprintf(out->assumed, sizeof(out->assumed),
                 "variables the script tests that it does not set, taken as unset: %s (give "
                 "them with --env NAME=VALUE)",
                 sc.assumed);
    char name[128];
    if (yaml && ctx->model)
        snprintf(name, sizeof(name), "%s", spsim_model_name(ctx->model));
    else
        model_name(in[0].origin ? in[0].origin : "-", name, sizeof(name));
    if (rc == SPSIM_OK)
        rc = build(&m, &sc, &base, name, out, err);
    spsim_sh_words_free(&base);
    spsim_sh_free(&sc);
    spsim_yaml_free(&y);
    return rc;
}

int
spsim_megatron_words(const struct spsim_sh_script *sc, const char *origin,
                     struct spsim_megatron_config *out, struct spsim_error *err)
{
    memset(out, 0, sizeof(*out));
    origin = origin ? origin : "-";
    struct mg m = {
        .origin = origin, .err = err, .unmodelled = out->unmodelled, .assumed = out->assumed};
    char name[128];
    model_name(origin, name, sizeof(name));
    return build(&m, sc, NULL, name, out, err);
}

int
spsim_megatron_parse(const char *text, size_t len, const char *origin,
                     struct spsim_megatron_config *out, struct spsim_error *err)
{
    if (!text || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_megatron_parse: NULL argument");
    struct spsim_megatron_input in = {text, len, origin ? origin : "-"};
    return spsim_megatron_parse_inputs(&in, 1, NULL, out, err);
}
