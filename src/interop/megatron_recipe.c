/*
 * A recipe's merged keys (megatron_yaml.c) as the Megatron-LM flags they stand for, so that
 * megatron_args.c maps them with the same rules and defaults. Two layouts are read:
 * Megatron-Bridge's ConfigContainer (model: TransformerConfig's fields, train:, ddp:,
 * optimizer:, mixed_precision:, comm_overlap:, ...: what ConfigContainer.to_yaml writes, and
 * its override files) and NeMo 1's megatron_gpt_config.yaml (trainer:, model: with
 * encoder_seq_length, activation, bias, activations_checkpoint_*). A key is read from the
 * sections its rule names, in order; a Bridge field that several sections hold is taken where
 * Bridge's setup takes it (read against NVIDIA-NeMo/Megatron-Bridge at 067f987d):
 *  - mixed_precision: overwrites every field of the same name in model, optimizer and ddp,
 *    null included (training/mixed_precision.py update_config_with_precision_overrides); a
 *    recipe name (mixed_precision: bf16_mixed) stands for that recipe's fields;
 *  - comm_overlap: when it is a mapping, sets the model's tp_comm_overlap,
 *    overlap_moe_expert_parallel_comm, delay_wgrad_compute and overlap_p2p_comm (its value, else
 *    off, else on for the p2p overlap) and, with the distributed optimizer, the DDP's
 *    overlap_grad_reduce and overlap_param_gather (its value, else on: Bridge turns them on
 *    when dp > 1, and at dp 1 they change nothing) (training/comm_overlap.py);
 *  - the vocabulary: model.vocab_size unpadded when given (training/setup.py
 *    _validate_and_set_vocab_size), padded to make_vocab_size_divisible_by · tp when it is the
 *    tokenizer's (should_pad_vocab).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "megatron_yaml.h"

enum mode {
    M_VALUE,     /* --flag VALUE */
    M_SWITCH,    /* true: --flag; false: the flag off */
    M_INVERSE,   /* false: --flag; true: off */
    M_GROUPS,    /* a number: --group-query-attention --num-query-groups N (not with MLA) */
    M_NORM,      /* layernorm, rmsnorm in any case: Megatron's spelling */
    M_ACT,       /* NeMo's activation: swiglu / fast-swiglu: --swiglu; gelu: nothing */
    M_PRECISION, /* NeMo's trainer.precision: bf16*, 16*: --bf16, --fp16; 32: nothing */
    M_OPTIM,     /* NeMo's optim.name: distributed_fused_adam: --use-distributed-optimizer */
    M_FP8,       /* a format (Megatron-Bridge) or a boolean (NeMo: true is the hybrid format) */
    M_OFFLOAD,   /* cpu_offloading_num_layers: counts only when cpu_offloading is on */
    M_PATTERN,   /* moe_layer_freq: a number or expression, or a list of 0/1 ("[0,1,...]") */
    M_NULLABLE,  /* --flag VALUE; null (None) is --flag None, not the field's default */
    M_LIST,      /* a list (or one value): --flag A B ... */
    M_POSITION,  /* rope, yarn and mrope rotate Q and K alike: rope; others as written */
    M_LAYOUT,    /* a layout string, or Megatron's list of stages of layer names */
    M_WINDOW,    /* window_size [L, R]: --window-size L,R */
    M_GRADS,     /* grad_reduce_in_fp32: --accumulate-allreduce-grads-in-fp32 or
                    --grad-reduce-in-bf16 */
    M_SHARDING,  /* Megatron-FSDP's strategy: read only with use_megatron_fsdp */
    M_BACKEND,   /* attention_backend: AttnBackend.X or X */
    M_SCOPE,     /* cuda_graph_scope: a list; "full" is the whole layer (no flag) */
    M_EITHER,    /* on when any of its sections says true (Bridge's dist and ddp FSDP) */
    M_DTYPE,     /* the precision-aware optimizer's dtypes (torch.bfloat16 or bf16): only with it */
};

/* `from`: where the key is read, in order: SECTION (its value, null included), SECTION! (the
 * same: mixed_precision, which Bridge applies over the others), SECTION?V (when SECTION is a
 * mapping: its value when set, else V: comm_overlap's defaults), SECTION+V (the same, only with
 * the distributed optimizer), and * (the last key of that name anywhere: NeMo and flat
 * files). */
static const struct rule {
    const char *key, *flag;
    enum mode mode;
    const char *from;
} rules[] = {
    {"num_layers", "--num-layers", M_VALUE, "model *"},
    {"hidden_size", "--hidden-size", M_VALUE, "model *"},
    {"num_attention_heads", "--num-attention-heads", M_VALUE, "model *"},
    {"ffn_hidden_size", "--ffn-hidden-size", M_VALUE, "model *"},
    {"num_query_groups", "--num-query-groups", M_GROUPS, "model *"},
    {"kv_channels", "--kv-channels", M_VALUE, "model *"},
    {"seq_length", "--seq-length", M_VALUE, "model dataset *"},
    {"encoder_seq_length", "--seq-length", M_VALUE, "model *"},
    {"max_position_embeddings", "--max-position-embeddings", M_VALUE, "model *"},
    {"gated_linear_unit", "--swiglu", M_SWITCH, "model *"},
    {"activation", "--swiglu", M_ACT, "model"},
    {"normalization", "--normalization", M_NORM, "model *"},
    {"position_embedding_type", "--position-embedding-type", M_POSITION, "model *"},
    {"add_bias_linear", "--disable-bias-linear", M_INVERSE, "model *"},
    {"bias", "--disable-bias-linear", M_INVERSE, "model"},
    {"add_qkv_bias", "--add-qkv-bias", M_SWITCH, "model *"},
    {"qk_layernorm", "--qk-layernorm", M_SWITCH, "model *"},
    {"attention_output_gate", "--attention-output-gate", M_SWITCH, "model *"},
    {"rotary_percent", "--rotary-percent", M_VALUE, "model *"},
    {"moe_shared_expert_gate", "--moe-shared-expert-gate", M_SWITCH, "model *"},
    {"share_embeddings_and_output_weights", "--untie-embeddings-and-output-weights", M_INVERSE,
     "model *"},
    {"hidden_dropout", "--hidden-dropout", M_VALUE, "model *"},
    {"attention_dropout", "--attention-dropout", M_VALUE, "model *"},
    {"vocab_size", "--vocab-size", M_VALUE, "model *"},
    {"make_vocab_size_divisible_by", "--make-vocab-size-divisible-by", M_VALUE, "model *"},
    {"attention_backend", "--attention-backend", M_BACKEND, "model *"},
    {"tensor_model_parallel_size", "--tensor-model-parallel-size", M_VALUE, "model *"},
    {"pipeline_model_parallel_size", "--pipeline-model-parallel-size", M_VALUE, "model *"},
    {"virtual_pipeline_model_parallel_size", "--num-virtual-stages-per-pipeline-rank", M_VALUE,
     "model *"},
    {"pipeline_model_parallel_layout", "--pipeline-model-parallel-layout", M_LAYOUT, "model *"},
    {"num_layers_in_first_pipeline_stage", "--decoder-first-pipeline-num-layers", M_VALUE,
     "model *"},
    {"num_layers_in_last_pipeline_stage", "--decoder-last-pipeline-num-layers", M_VALUE, "model *"},
    {"account_for_embedding_in_pipeline_split", "--account-for-embedding-in-pipeline-split",
     M_SWITCH, "model *"},
    {"account_for_loss_in_pipeline_split", "--account-for-loss-in-pipeline-split", M_SWITCH,
     "model *"},
    {"sequence_parallel", "--sequence-parallel", M_SWITCH, "model *"},
    {"context_parallel_size", "--context-parallel-size", M_VALUE, "model *"},
    {"cp_comm_type", "--cp-comm-type", M_VALUE, "model *"},
    {"hierarchical_context_parallel_sizes", "--hierarchical-context-parallel-sizes", M_LIST,
     "model *"},
    {"expert_model_parallel_size", "--expert-model-parallel-size", M_VALUE, "model *"},
    {"expert_tensor_parallel_size", "--expert-tensor-parallel-size", M_VALUE, "model *"},
    {"num_moe_experts", "--num-experts", M_VALUE, "model *"},
    {"moe_router_topk", "--moe-router-topk", M_VALUE, "model *"},
    {"moe_ffn_hidden_size", "--moe-ffn-hidden-size", M_VALUE, "model *"},
    {"moe_shared_expert_intermediate_size", "--moe-shared-expert-intermediate-size", M_VALUE,
     "model *"},
    {"moe_layer_freq", "--moe-layer-freq", M_PATTERN, "model *"},
    {"moe_router_score_function", "--moe-router-score-function", M_VALUE, "model *"},
    {"moe_expert_capacity_factor", "--moe-expert-capacity-factor", M_VALUE, "model *"},
    {"moe_token_dispatcher_type", "--moe-token-dispatcher-type", M_VALUE, "model *"},
    {"moe_flex_dispatcher_backend", "--moe-flex-dispatcher-backend", M_VALUE, "model *"},
    {"moe_flex_dispatcher_num_sms", "--moe-flex-dispatcher-num-sms", M_VALUE, "model *"},
    {"moe_deepep_num_sms", "--moe-deepep-num-sms", M_VALUE, "model *"},
    {"moe_hybridep_num_sms", "--moe-hybridep-num-sms", M_VALUE, "model *"},
    {"moe_router_num_groups", "--moe-router-num-groups", M_VALUE, "model *"},
    {"moe_router_group_topk", "--moe-router-group-topk", M_VALUE, "model *"},
    {"moe_router_load_balancing_type", "--moe-router-load-balancing-type", M_VALUE, "model *"},
    {"moe_aux_loss_coeff", "--moe-aux-loss-coeff", M_VALUE, "model *"},
    {"moe_z_loss_coeff", "--moe-z-loss-coeff", M_VALUE, "model *"},
    {"moe_router_enable_expert_bias", "--moe-router-enable-expert-bias", M_SWITCH, "model *"},
    {"multi_latent_attention", "--multi-latent-attention", M_SWITCH, "model *"},
    {"q_lora_rank", "--q-lora-rank", M_NULLABLE, "model *"},
    {"kv_lora_rank", "--kv-lora-rank", M_VALUE, "model *"},
    {"qk_head_dim", "--qk-head-dim", M_VALUE, "model *"},
    {"qk_pos_emb_head_dim", "--qk-pos-emb-head-dim", M_VALUE, "model *"},
    {"v_head_dim", "--v-head-dim", M_VALUE, "model *"},
    {"mtp_num_layers", "--mtp-num-layers", M_VALUE, "model *"},
    {"window_size", "--window-size", M_WINDOW, "model *"},
    {"window_attn_skip_freq", "--window-attn-skip-freq", M_VALUE, "model *"},
    {"softmax_type", "--softmax-type", M_VALUE, "model *"},
    /* Hybrid models (Megatron-Bridge HybridModelProvider, hybrid_provider.py at 067f987, and
     * TransformerConfig's mamba_*, linear_* and attention-variant fields) */
    {"hybrid_layer_pattern", "--hybrid-layer-pattern", M_VALUE, "model *"},
    {"hybrid_override_pattern", "--hybrid-override-pattern", M_VALUE, "model *"},
    {"mtp_hybrid_override_pattern", "--mtp-hybrid-override-pattern", M_VALUE, "model *"},
    {"mtp_use_repeated_layer", "--mtp-use-repeated-layer", M_SWITCH, "model *"},
    {"mamba_num_heads", "--mamba-num-heads", M_VALUE, "model *"},
    {"mamba_head_dim", "--mamba-head-dim", M_VALUE, "model *"},
    {"mamba_state_dim", "--mamba-state-dim", M_VALUE, "model *"},
    {"mamba_num_groups", "--mamba-num-groups", M_VALUE, "model *"},
    {"mamba_chunk_size", "--mamba-chunk-size", M_VALUE, "model *"},
    {"moe_latent_size", "--moe-latent-size", M_VALUE, "model *"},
    {"experimental_attention_variant", "--experimental-attention-variant", M_VALUE, "model *"},
    {"linear_attention_freq", "--linear-attention-freq", M_PATTERN, "model *"},
    {"linear_num_key_heads", "--linear-num-key-heads", M_VALUE, "model *"},
    {"linear_num_value_heads", "--linear-num-value-heads", M_VALUE, "model *"},
    {"linear_key_head_dim", "--linear-key-head-dim", M_VALUE, "model *"},
    {"linear_value_head_dim", "--linear-value-head-dim", M_VALUE, "model *"},
    {"linear_conv_kernel_dim", "--linear-conv-kernel-dim", M_VALUE, "model *"},
    {"micro_batch_size", "--micro-batch-size", M_VALUE, "train *"},
    {"global_batch_size", "--global-batch-size", M_VALUE, "train *"},
    {"recompute_granularity", "--recompute-granularity", M_VALUE, "model *"},
    {"activations_checkpoint_granularity", "--recompute-granularity", M_VALUE, "model *"},
    {"recompute_method", "--recompute-method", M_VALUE, "model *"},
    {"activations_checkpoint_method", "--recompute-method", M_VALUE, "model *"},
    {"recompute_num_layers", "--recompute-num-layers", M_VALUE, "model *"},
    {"activations_checkpoint_num_layers", "--recompute-num-layers", M_VALUE, "model *"},
    {"recompute_modules", "--recompute-modules", M_LIST, "model *"},
    {"use_distributed_optimizer", "--use-distributed-optimizer", M_SWITCH, "ddp optimizer *"},
    {"use_precision_aware_optimizer", "--use-precision-aware-optimizer", M_SWITCH, "optimizer *"},
    {"main_grads_dtype", "--main-grads-dtype", M_DTYPE, "optimizer"},
    {"main_params_dtype", "--main-params-dtype", M_DTYPE, "optimizer"},
    {"exp_avg_dtype", "--exp-avg-dtype", M_DTYPE, "optimizer"},
    {"exp_avg_sq_dtype", "--exp-avg-sq-dtype", M_DTYPE, "optimizer"},
    {"optimizer", "--optimizer", M_VALUE, "optimizer"},
    {"muon_num_ns_steps", "--muon-num-ns-steps", M_VALUE, "optimizer"},
    {"muon_tp_mode", "--muon-tp-mode", M_VALUE, "optimizer"},
    {"muon_use_nesterov", "--muon-nesterov", M_SWITCH, "optimizer"},
    {"muon_split_qkv", "--muon-no-split-qkv", M_INVERSE, "optimizer"},
    {"muon_fp32_matmul_prec", "--muon-fp32-matmul-prec", M_VALUE, "optimizer"},
    {"muon_coefficient_type", "--muon-coefficient-type", M_VALUE, "optimizer"},
    {"muon_scalar_optimizer", "--muon-scalar-optimizer", M_VALUE, "optimizer"},
    {"optimizer_cpu_offload", "--optimizer-cpu-offload", M_SWITCH, "optimizer"},
    {"optimizer_offload_fraction", "--optimizer-offload-fraction", M_VALUE, "optimizer"},
    {"overlap_cpu_optimizer_d2h_h2d", "--overlap-cpu-optimizer-d2h-h2d", M_SWITCH, "optimizer"},
    /* the statistics logged every iteration (Bridge's LoggerConfig.log_params_norm,
     * OptimizerConfig.log_num_zeros_in_grad): engine/opt_host.c */
    {"log_params_norm", "--log-params-norm", M_SWITCH, "logger"},
    {"log_num_zeros_in_grad", "--log-num-zeros-in-grad", M_SWITCH, "optimizer"},
    {"use_megatron_fsdp", "--use-megatron-fsdp", M_EITHER, "dist ddp"},
    {"data_parallel_sharding_strategy", "--data-parallel-sharding-strategy", M_SHARDING,
     "ddp * ddp?no_shard"}, /* DistributedDataParallelConfig's default, not arguments.py's */
    /* HSDP: Megatron-Core's DistributedDataParallelConfig fields (README "HSDP") */
    {"num_distributed_optimizer_instances", "--num-distributed-optimizer-instances", M_VALUE,
     "ddp"},
    {"outer_dp_sharding_strategy", "--outer-dp-sharding-strategy", M_VALUE, "ddp"},
    {"cpu_offloading", "--cpu-offloading", M_SWITCH, "model *"},
    {"cpu_offloading_num_layers", "--cpu-offloading-num-layers", M_OFFLOAD, "model *"},
    {"overlap_grad_reduce", "--overlap-grad-reduce", M_SWITCH, "comm_overlap+true ddp *"},
    {"overlap_param_gather", "--overlap-param-gather", M_SWITCH, "comm_overlap+true ddp *"},
    {"bucket_size", "--ddp-bucket-size", M_VALUE, "comm_overlap+134217728 ddp"},
    {"overlap_p2p_comm", "--no-overlap-p2p-communication", M_INVERSE, "comm_overlap?true model *"},
    {"tp_comm_overlap", "--tp-comm-overlap", M_SWITCH, "comm_overlap?false model *"},
    {"cuda_graph_impl", "--cuda-graph-impl", M_VALUE, "model *"},
    {"cuda_graph_scope", "--cuda-graph-scope", M_SCOPE, "model *"},
    {"cuda_graph_modules", "--cuda-graph-modules", M_SCOPE, "model *"},
    {"enable_cuda_graph", "--enable-cuda-graph", M_SWITCH, "model *"},
    {"external_cuda_graph", "--external-cuda-graph", M_SWITCH, "model *"},
    {"overlap_moe_expert_parallel_comm", "--overlap-moe-expert-parallel-comm", M_SWITCH,
     "comm_overlap?false model *"},
    {"moe_a2a_overlap", "--overlap-moe-expert-parallel-comm", M_SWITCH, "*"},
    {"delay_wgrad_compute", "--delay-wgrad-compute", M_SWITCH, "comm_overlap?false model *"},
    /* comm_overlap.py:436-437 (off, -1 unless set) */
    {"defer_embedding_wgrad_compute", "--defer-embedding-wgrad-compute", M_SWITCH,
     "comm_overlap?false model *"},
    {"wgrad_deferral_limit", "--wgrad-deferral-limit", M_VALUE, "comm_overlap model *"},
    /* the loss's fusion (Megatron-Bridge gpt_provider.py: on by default; impl te in the perf
     * scripts' overrides.py) */
    {"cross_entropy_loss_fusion", "--cross-entropy-loss-fusion", M_SWITCH, "model *"},
    {"cross_entropy_fusion_impl", "--cross-entropy-fusion-impl", M_VALUE, "model *"},
    {"bf16", "--bf16", M_SWITCH, "mixed_precision! model *"},
    {"fp16", "--fp16", M_SWITCH, "mixed_precision! model *"},
    {"fp8", "--fp8-format", M_FP8, "mixed_precision! model *"},
    {"fp8_recipe", "--fp8-recipe", M_VALUE, "mixed_precision! model *"},
    {"fp8_param_gather", "--fp8-param-gather", M_SWITCH, "mixed_precision! ddp model *"},
    {"fp4", "--fp4-format", M_VALUE, "mixed_precision! model *"},
    {"fp4_recipe", "--fp4-recipe", M_VALUE, "mixed_precision! model *"},
    {"fp4_param_gather", "--fp4-param-gather", M_SWITCH, "mixed_precision! ddp model *"},
    {"fp8_dot_product_attention", "--fp8-dot-product-attention", M_SWITCH,
     "mixed_precision! model *"},
    {"fp8_multi_head_attention", "--fp8-multi-head-attention", M_SWITCH,
     "mixed_precision! model *"},
    {"first_last_layers_bf16", "--first-last-layers-bf16", M_SWITCH, "mixed_precision! model *"},
    {"num_layers_at_start_in_bf16", "--num-layers-at-start-in-bf16", M_VALUE,
     "mixed_precision! model *"},
    {"num_layers_at_end_in_bf16", "--num-layers-at-end-in-bf16", M_VALUE,
     "mixed_precision! model *"},
    {"grad_reduce_in_fp32", "--accumulate-allreduce-grads-in-fp32", M_GRADS,
     "mixed_precision! ddp"},
    {"precision", "--bf16", M_PRECISION, "trainer"},
    {"tokenizer_type", "--tokenizer-type", M_VALUE, "tokenizer *"},
    {"type", "--tokenizer-type", M_VALUE, "model.tokenizer"},
    {"name", "--use-distributed-optimizer", M_OPTIM, "model.optim"},
    {"devices", "--nproc_per_node", M_VALUE, "trainer"},
    {"num_nodes", "--nnodes", M_VALUE, "trainer"},
};

/* What a rule reads: an entry, or a section's default (`dflt`, on the section's line). */
struct pick {
    const struct spsim_yaml_entry *e;
    const struct spsim_yaml_entry *section; /* with dflt: the section that gave it */
    char dflt[24];
};

struct ctx {
    struct spsim_yaml *y;
    struct spsim_sh_script *out;
    struct spsim_error *err;
    bool bridge;
    struct spsim_sh_words cmd; /* the command being built */
    char key[320];             /* its key, for messages */
    uint32_t line;
    const char *origin;
};

/* The live entry SECTION.KEY (or KEY at the top for an empty section). */
static const struct spsim_yaml_entry *
get2(const struct spsim_yaml *y, const char *section, size_t n, const char *key)
{
    char path[256];
    if (n + strlen(key) + 2 > sizeof(path))
        return NULL;
    snprintf(path, sizeof(path), "%.*s%s%s", (int)n, section, n && *key ? "." : "", key);
    return spsim_yaml_get(y, path);
}

static bool
set(const struct spsim_yaml_entry *e)
{
    return e && e->kind != SPSIM_YAML_NULL;
}

/* YAML 1.1's booleans: 1 true, 0 false, -1 neither. */
static int
boolean(const char *v)
{
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    for (size_t i = 0; i < 3; i++)
        if (strcasecmp(v, yes[i]) == 0 || strcasecmp(v, no[i]) == 0)
            return strcasecmp(v, yes[i]) == 0;
    return -1;
}

static struct pick pick_rule(const struct ctx *c, const struct rule *r);

/* The distributed optimizer, for the SECTION+V defaults. */
static bool
distributed_optimizer(const struct ctx *c)
{
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(rules); i++)
        if (strcmp(rules[i].key, "use_distributed_optimizer") == 0) {
            struct pick p = pick_rule(c, &rules[i]);
            return p.e && p.e->kind == SPSIM_YAML_SCALAR && boolean(p.e->v[0]) == 1;
        }
    return false;
}

/* One token of a rule's `from`. @return whether it decided */
static bool
pick_token(const struct ctx *c, const struct rule *r, const char *t, size_t n, struct pick *p)
{
    const struct spsim_yaml *y = c->y;
    if (n == 1 && t[0] == '*') {
        for (size_t i = y->n; i-- > 0;)
            if (strcmp(y->e[i].name, r->key) == 0 && spsim_yaml_live(y, i))
                return p->e = &y->e[i], true;
        return false;
    }
    size_t sn = strcspn(t, "!?+");
    sn = sn < n ? sn : n;
    const struct spsim_yaml_entry *e = get2(y, t, sn, r->key);
    if (sn == n || t[sn] == '!')
        return e && (p->e = e, true);
    const struct spsim_yaml_entry *section = get2(y, t, sn, "");
    if (!section || section->kind != SPSIM_YAML_MAP || (t[sn] == '+' && !distributed_optimizer(c)))
        return false;
    if (set(e))
        return p->e = e, true;
    snprintf(p->dflt, sizeof(p->dflt), "%.*s", (int)(n - sn - 1), t + sn + 1);
    p->section = section;
    return true;
}

/* M_EITHER: the first section that says true, else the first that is there. */
static struct pick
pick_either(const struct ctx *c, const struct rule *r)
{
    struct pick p = {0};
    for (const char *t = r->from; *t;) {
        size_t n = strcspn(t, " ");
        const struct spsim_yaml_entry *e = get2(c->y, t, n, r->key);
        if (e && e->kind == SPSIM_YAML_SCALAR && boolean(e->v[0]) == 1)
            return (struct pick){.e = e};
        p.e = p.e ? p.e : e;
        t += n + (t[n] == ' ');
    }
    return p;
}

static struct pick
pick_rule(const struct ctx *c, const struct rule *r)
{
    if (r->mode == M_EITHER)
        return pick_either(c, r);
    struct pick p = {0};
    for (const char *t = r->from; *t;) {
        size_t n = strcspn(t, " ");
        if (pick_token(c, r, t, n, &p))
            return p;
        t += n + (t[n] == ' ');
    }
    return p;
}

/* A Bridge field's value as a name: a scalar, or a mapping's _target_ (torch.bfloat16,
 * torch.nn.functional.silu: how to_yaml writes a dtype or a function). */
static const char *
target_name(const struct spsim_yaml *y, const struct spsim_yaml_entry *e)
{
    if (e && e->kind == SPSIM_YAML_SCALAR)
        return e->v[0];
    if (!e || e->kind != SPSIM_YAML_MAP)
        return NULL;
    char path[300];
    snprintf(path, sizeof(path), "%s._target_", e->path);
    const struct spsim_yaml_entry *t = spsim_yaml_get(y, path);
    return t && t->kind == SPSIM_YAML_SCALAR ? t->v[0] : NULL;
}

static int SPSIM_PRINTF(3, 4)
    fail(const struct ctx *c, const struct spsim_yaml_entry *e, const char *fmt, ...)
{
    char reason[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    return spsim_fail(c->err, SPSIM_EFIELD, "%s:%u: %s: %s", e ? e->origin : "?", e ? e->line : 0,
                      e ? e->path : "?", reason);
}

/* The command of one key: its words, each naming the key. */
static int
word(struct ctx *c, const char *text, bool off)
{
    if (spsim_sh_append(&c->cmd, text, c->line, c->key) != SPSIM_OK)
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    c->cmd.w[c->cmd.n - 1].off = off;
    c->cmd.w[c->cmd.n - 1].origin = c->origin;
    return SPSIM_OK;
}

static int
flush(struct ctx *c)
{
    if (c->cmd.n && spsim_sh_add_command(c->out, &c->cmd) != SPSIM_OK) {
        spsim_sh_words_free(&c->cmd);
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    }
    return SPSIM_OK;
}

static void
begin(struct ctx *c, const struct spsim_yaml_entry *e, const char *key)
{
    snprintf(c->key, sizeof(c->key), "%s", key ? key : e->path);
    c->line = e->line;
    c->origin = e->origin;
}

/* flag VALUE as one command */
static int
pair(struct ctx *c, const char *flag, const char *value)
{
    int rc = word(c, flag, false);
    return rc ? rc : word(c, value, false);
}

static int
rule_index(const char *key)
{
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(rules); i++)
        if (strcmp(rules[i].key, key) == 0)
            return (int)i;
    return -1;
}

/* Whether the rule of `key` reads true. */
static bool
picked_true(const struct ctx *c, const char *key)
{
    int i = rule_index(key);
    struct pick p = i >= 0 ? pick_rule(c, &rules[i]) : (struct pick){0};
    const char *v = p.e ? (p.e->kind == SPSIM_YAML_SCALAR ? p.e->v[0] : NULL) : p.dflt;
    return v && boolean(v) == 1;
}

/* A switch (or its inverse): on, or the flag unset. */
static int
switch_value(struct ctx *c, const struct rule *r, const struct spsim_yaml_entry *e, const char *v)
{
    int b = boolean(v);
    if (b < 0)
        return fail(c, e, "must be true or false, got %s", SPSIM_Q(v));
    return word(c, r->flag, b != (r->mode != M_INVERSE));
}

/* NeMo 1's own spellings: activation, trainer.precision, optim.name. */
static int
nemo_value(struct ctx *c, const struct rule *r, const struct spsim_yaml_entry *e, const char *v)
{
    switch (r->mode) {
    case M_ACT:
        if (strcmp(v, "swiglu") == 0 || strcmp(v, "fast-swiglu") == 0)
            return word(c, r->flag, false);
        return strcmp(v, "gelu") == 0
                   ? SPSIM_OK
                   : fail(c, e, "%s is not modelled (gelu or swiglu is)", SPSIM_Q(v));
    case M_PRECISION:
        if (strncmp(v, "bf16", 4) == 0 || strcmp(v, "16") == 0 || strcmp(v, "16-mixed") == 0)
            return word(c, v[0] == 'b' ? "--bf16" : "--fp16", false);
        return strcmp(v, "32") == 0
                   ? SPSIM_OK
                   : fail(c, e, "%s is not modelled (bf16, 16 or 32 is)", SPSIM_Q(v));
    default: /* M_OPTIM */
        return strcmp(v, "distributed_fused_adam") == 0 ? word(c, r->flag, false) : SPSIM_OK;
    }
}

/* A scalar value of rule r (v: the entry's, or a section's default). */
static int
scalar_value(struct ctx *c, const struct rule *r, const struct spsim_yaml_entry *e, const char *v)
{
    int b = boolean(v);
    switch (r->mode) {
    case M_SWITCH:
    case M_INVERSE:
    case M_EITHER:
        return switch_value(c, r, e, v);
    case M_GROUPS: /* multi-latent attention reads no query groups (Bridge writes the heads) */
        if (picked_true(c, "multi_latent_attention"))
            return SPSIM_OK;
        return word(c, "--group-query-attention", false) ? SPSIM_ENOMEM : pair(c, r->flag, v);
    case M_NORM:
        return pair(c, r->flag,
                    strcasecmp(v, "layernorm") == 0 ? "LayerNorm"
                    : strcasecmp(v, "rmsnorm") == 0 ? "RMSNorm"
                                                    : v);
    case M_FP8:
        return b == 0 ? word(c, r->flag, true) : pair(c, r->flag, b == 1 ? "hybrid" : v);
    case M_OFFLOAD:
        return picked_true(c, "cpu_offloading") ? pair(c, r->flag, v) : SPSIM_OK;
    case M_SHARDING:
        return picked_true(c, "use_megatron_fsdp") ? pair(c, r->flag, v) : SPSIM_OK;
    case M_POSITION: /* YaRN and mRoPE scale or split RoPE's angles: the same rotation's cost */
        return pair(c, r->flag, strcmp(v, "yarn") == 0 || strcmp(v, "mrope") == 0 ? "rope" : v);
    case M_GRADS:
        if (b < 0)
            return fail(c, e, "must be true or false, got %s", SPSIM_Q(v));
        return word(c, b ? "--accumulate-allreduce-grads-in-fp32" : "--grad-reduce-in-bf16", false);
    case M_BACKEND:
        return pair(c, r->flag, strncmp(v, "AttnBackend.", 12) == 0 ? v + 12 : v);
    case M_SCOPE: /* "full": the whole layer, Megatron's default scope */
        return strcmp(v, "full") == 0 ? SPSIM_OK : pair(c, r->flag, v);
    case M_ACT:
    case M_PRECISION:
    case M_OPTIM:
        return nemo_value(c, r, e, v);
    default:
        return pair(c, r->flag, v);
    }
}

/* Items joined into one word: "[0,1,1]" (a layer pattern), "127,0" (a window). */
static int
joined(struct ctx *c, const struct rule *r, const struct spsim_yaml_entry *e, const char *open,
       const char *close)
{
    size_t cap = 4 + strlen(open) + strlen(close), n = 0;
    for (uint32_t i = 0; i < e->n; i++)
        cap += strlen(e->v[i]) + 1;
    char *text = malloc(cap);
    if (!text)
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    n += (size_t)snprintf(text, cap, "%s", open);
    for (uint32_t i = 0; i < e->n; i++)
        n += (size_t)snprintf(text + n, cap - n, "%s%s", i ? "," : "", e->v[i]);
    snprintf(text + n, cap - n, "%s", close);
    int rc = pair(c, r->flag, text);
    free(text);
    return rc;
}

/* Megatron's list form of a layout (pipeline_parallel_layer_layout.py: a list of stages, each
 * a list of layer names) as its string form: stages joined by '|'. */
static int
layout_value(struct ctx *c, const struct rule *r, const struct spsim_yaml_entry *e)
{
    static const struct {
        const char *name, *symbol;
    } names[] = {{"embedding", "E"}, {"decoder", "t"}, {"mtp", "m"}, {"loss", "L"}};
    if (e->partial)
        return fail(c, e, "a layout that is not a list of lists of layer names");
    char text[8192];
    size_t n = 0;
    for (uint32_t i = 0; i < e->n; i++) {
        const char *sym = NULL;
        if (strcmp(e->v[i], "|") == 0)
            sym = i + 1 < e->n ? "|" : "";
        for (size_t k = 0; !sym && k < SPSIM_ARRAY_LENGTH(names); k++)
            if (strcmp(e->v[i], names[k].name) == 0)
                sym = names[k].symbol;
        if (!sym)
            return fail(c, e, "%s is not a layer of a layout (embedding, decoder, mtp, loss)",
                        SPSIM_Q(e->v[i]));
        if (n + 2 > sizeof(text))
            return fail(c, e, "a layout longer than 8 kB");
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s", sym);
    }
    return pair(c, r->flag, text);
}

static int
sequence_value(struct ctx *c, const struct rule *r, const struct spsim_yaml_entry *e)
{
    switch (r->mode) {
    case M_LIST:
    case M_SCOPE: {
        int rc = word(c, r->flag, e->n == 0);
        for (uint32_t i = 0; rc == SPSIM_OK && i < e->n; i++)
            rc = word(c, e->v[i], false);
        return rc;
    }
    case M_PATTERN:
        return joined(c, r, e, "[", "]");
    case M_WINDOW:
        if (e->n != 2)
            return fail(c, e, "must be two integers [L, R], got %u", e->n);
        return joined(c, r, e, "", "");
    default:
        return fail(c, e, "a list (%u items) where one value is expected", e->n);
    }
}

/* A dtype as Bridge writes it (a mapping whose _target_ is torch.bfloat16, or a name) as
 * Megatron's flag value; TE keeps FP8 moments as torch.uint8 (optimizer.py). */
static int
dtype_value(struct ctx *c, const struct rule *r, const struct spsim_yaml_entry *e)
{
    static const char *const names[][2] = {
        {"float32", "fp32"}, {"float", "fp32"}, {"fp32", "fp32"},     {"float16", "fp16"},
        {"half", "fp16"},    {"fp16", "fp16"},  {"bfloat16", "bf16"}, {"bf16", "bf16"},
        {"uint8", "fp8"},    {"fp8", "fp8"}};
    const char *t = target_name(c->y, e);
    const char *base = t && strncmp(t, "torch.", 6) == 0 ? t + 6 : t;
    for (size_t i = 0; base && i < SPSIM_ARRAY_LENGTH(names); i++)
        if (strcmp(base, names[i][0]) == 0)
            return pair(c, r->flag, names[i][1]);
    return fail(c, e,
                "%s is not a dtype the precision-aware optimizer keeps (fp32, fp16, bf16, "
                "fp8)",
                SPSIM_Q(t ? t : "?"));
}

/* What rule r reads, as flags: a value, a list, or null (the flag unset). */
static int
emit_rule(struct ctx *c, const struct rule *r, const struct pick *p)
{
    const struct spsim_yaml_entry *e = p->e ? p->e : p->section;
    char key[300];
    snprintf(key, sizeof(key), "%s%s%s", e->path, p->e ? "" : ".", p->e ? "" : r->key);
    begin(c, e, key);
    if (!p->e)
        return scalar_value(c, r, e, p->dflt);
    /* Keys that count only beside another (NeMo writes ${sum:...} for a count it ignores). */
    if ((r->mode == M_OFFLOAD && !picked_true(c, "cpu_offloading")) ||
        (r->mode == M_SHARDING && !picked_true(c, "use_megatron_fsdp")) ||
        (r->mode == M_DTYPE && !picked_true(c, "use_precision_aware_optimizer")))
        return SPSIM_OK; /* OptimizerConfig: the dtypes are read only with the optimizer */
    if (r->mode == M_DTYPE)
        return dtype_value(c, r, e);
    if (e->unresolved)
        return fail(c, e, "%s: an interpolation spsim cannot resolve (write the value)",
                    SPSIM_Q(e->n ? e->v[0] : ""));
    switch (e->kind) {
    case SPSIM_YAML_NULL:
        if (r->mode == M_NULLABLE)
            return pair(c, r->flag, "None");
        if (r->mode == M_GROUPS && word(c, "--group-query-attention", true))
            return SPSIM_ENOMEM;
        return word(c, r->mode == M_GRADS ? "--accumulate-allreduce-grads-in-fp32" : r->flag, true);
    case SPSIM_YAML_SEQ:
        return sequence_value(c, r, e);
    case SPSIM_YAML_COMPLEX:
        if (r->mode == M_LAYOUT)
            return layout_value(c, r, e);
        return fail(c, e, "a list of collections where %s is expected",
                    r->mode == M_LIST ? "a list of names" : "one value");
    case SPSIM_YAML_MAP:
        return fail(c, e, "a mapping where %s is expected",
                    r->mode == M_LIST ? "a list" : "one value");
    default:
        return scalar_value(c, r, e, e->v[0]);
    }
}

/* Megatron-Bridge's named precision recipes (training/mixed_precision.py), as the fields they
 * set beside MixedPrecisionConfig's defaults (fp8 None, fp8_recipe tensorwise,
 * grad_reduce_in_fp32 True, first_last_layers_bf16 False with 0 and 0 layers). */
static const struct {
    const char *name, *fields;
} precision_recipes[] = {
    {"bf16_mixed", "bf16=true"},
    {"fp16_mixed", "fp16=true grad_reduce_in_fp32=false"},
    {"bf16_with_fp8_delayed_scaling_mixed",
     "bf16=true fp8=hybrid fp8_recipe=delayed fp8_param_gather=true"},
    {"fp16_with_fp8_delayed_scaling_mixed",
     "fp16=true grad_reduce_in_fp32=false fp8=hybrid fp8_recipe=delayed fp8_param_gather=true"},
    {"bf16_with_mxfp8_mixed", "bf16=true fp8=e4m3 fp8_recipe=mxfp8 fp8_param_gather=true"},
    {"fp16_with_mxfp8_mixed",
     "fp16=true grad_reduce_in_fp32=false fp8=e4m3 fp8_recipe=mxfp8 fp8_param_gather=true"},
    {"bf16_with_fp8_current_scaling_mixed",
     "bf16=true fp8=hybrid fp8_recipe=tensorwise first_last_layers_bf16=true "
     "num_layers_at_start_in_bf16=1 num_layers_at_end_in_bf16=1 fp8_param_gather=true"},
    {"nemotron_h_bf16_with_fp8_current_scaling_mixed",
     "bf16=true fp8=hybrid fp8_recipe=tensorwise first_last_layers_bf16=true "
     "num_layers_at_start_in_bf16=2 num_layers_at_end_in_bf16=2 fp8_param_gather=true"},
    {"nanov2_bf16_with_fp8_current_scaling_mixed",
     "bf16=true fp8=hybrid fp8_recipe=blockwise first_last_layers_bf16=true "
     "num_layers_at_start_in_bf16=2 num_layers_at_end_in_bf16=2 fp8_param_gather=true"},
    {"fp16_with_fp8_current_scaling_mixed",
     "fp16=true grad_reduce_in_fp32=false fp8=hybrid fp8_recipe=tensorwise "
     "first_last_layers_bf16=true num_layers_at_start_in_bf16=1 num_layers_at_end_in_bf16=1 "
     "fp8_param_gather=true"},
    {"bf16_with_fp8_subchannel_scaling_mixed", "bf16=true fp8=hybrid fp8_recipe=blockwise"},
    {"fp16_with_fp8_subchannel_scaling_mixed",
     "fp16=true grad_reduce_in_fp32=false fp8=hybrid fp8_recipe=blockwise"},
    {"bf16_with_nvfp4_mixed", "bf16=true fp4=e2m1 fp4_recipe=nvfp4 fp4_param_gather=true"},
    {"nemotron_3_super_bf16_with_nvfp4_mixed",
     "bf16=true fp4=e2m1 fp4_recipe=nvfp4 fp4_param_gather=true first_last_layers_bf16=true "
     "num_layers_at_end_in_bf16=14"},
};

/* mixed_precision: NAME stands for that recipe's fields (get_mixed_precision_config, '-' read
 * as '_'). */
static int
precision_recipe(struct ctx *c)
{
    static const char defaults[] =
        "fp32=false fp16=false bf16=false grad_reduce_in_fp32=true fp8= fp8_recipe=tensorwise "
        "fp8_param_gather=false fp4= fp4_recipe=nvfp4 fp4_param_gather=false "
        "first_last_layers_bf16=false num_layers_at_start_in_bf16=0 num_layers_at_end_in_bf16=0 "
        "fp8_dot_product_attention=false fp8_multi_head_attention=false";
    const struct spsim_yaml_entry *mp = spsim_yaml_get(c->y, "mixed_precision");
    if (!mp || mp->kind != SPSIM_YAML_SCALAR)
        return SPSIM_OK;
    char name[64];
    snprintf(name, sizeof(name), "%s", mp->v[0]);
    for (char *p = name; *p; p++)
        *p = *p == '-' ? '_' : *p;
    size_t k = 0;
    while (k < SPSIM_ARRAY_LENGTH(precision_recipes) && strcmp(precision_recipes[k].name, name))
        k++;
    if (k == SPSIM_ARRAY_LENGTH(precision_recipes))
        return fail(c, mp,
                    "%s is not a Megatron-Bridge precision recipe spsim knows (bf16_mixed, "
                    "fp16_mixed, bf16_with_fp8_current_scaling_mixed, ...)",
                    SPSIM_Q(mp->v[0]));
    int32_t parent = (int32_t)(mp - c->y->e);
    uint32_t line = mp->line;
    for (int pass = 0; pass < 2; pass++) {
        const char *f = pass ? precision_recipes[k].fields : defaults;
        while (*f) {
            size_t n = strcspn(f, " "), eq = strcspn(f, "=");
            char path[96], value[32];
            snprintf(path, sizeof(path), "mixed_precision.%.*s", (int)eq, f);
            snprintf(value, sizeof(value), "%.*s", (int)(n - eq - 1), f + eq + 1);
            if (spsim_yaml_set(c->y, path, *value ? value : NULL, parent, line) != SPSIM_OK)
                return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
            f += n + (f[n] == ' ');
        }
    }
    return SPSIM_OK;
}

/* Bridge fields that change the layer, the optimizer or the memory in ways spsim does not
 * model, refused when set (TRUE: true; SET: anything but null; NOT: other than `value`). */
static const struct {
    const char *path;
    enum { IS_TRUE, IS_SET, IS_NOT } when;
    const char *value, *why;
} refusals[] = {
    {"peft", IS_SET, NULL,
     "PEFT (LoRA, DoRA) is not modelled: frozen weights keep no gradients or optimizer state"},
    {"model.heterogeneous_block_specs", IS_TRUE, NULL, "heterogeneous layers are not modelled"},
    {"model.dsa_indexer_n_heads", IS_SET, NULL, "DeepSeek sparse attention is not modelled"},
    {"model.fine_grained_activation_offloading", IS_TRUE, NULL,
     "fine-grained activation offloading is not modelled"},
    {"model.fp32_residual_connection", IS_TRUE, NULL,
     "an fp32 residual stream is not modelled (spsim keeps activations in 16 bits)"},
};

static bool
refused(const struct spsim_yaml *y, size_t k, const struct spsim_yaml_entry *e)
{
    if (!set(e))
        return false;
    const char *v = e->kind == SPSIM_YAML_SCALAR ? e->v[0] : NULL;
    switch (refusals[k].when) {
    case IS_TRUE:
        return v && boolean(v) == 1;
    case IS_SET:
        return true;
    default:
        return !v || strcmp(v, refusals[k].value) != 0;
    }
    (void)y;
}

/* The model's provider and activation: a GPT or hybrid (Mamba, Nemotron-H: HybridModelProvider
 * and its predecessors) layer with SiLU (gated: SwiGLU), GeLU or squared ReLU. */
static int
bridge_model(struct ctx *c)
{
    const struct spsim_yaml_entry *t = spsim_yaml_get(c->y, "model._target_");
    static const char *const others[] = {"T5", "Bert", "VL", NULL};
    for (size_t i = 0; t && t->kind == SPSIM_YAML_SCALAR && others[i]; i++)
        if (strstr(t->v[0], others[i]))
            return fail(c, t, "%s: only GPT models are modelled", SPSIM_Q(t->v[0]));
    const struct spsim_yaml_entry *a = spsim_yaml_get(c->y, "model.activation_func");
    const char *f = target_name(c->y, a);
    if (!f)
        return SPSIM_OK;
    const char *base = strrchr(f, '.') ? strrchr(f, '.') + 1 : f;
    bool gated = picked_true(c, "gated_linear_unit");
    /* gpt-oss's quick_gelu (megatron.core.fusions.fused_bias_geglu) is gated like SwiGLU, its
     * fused kernel taking and giving the same tensors (megatron_args.c, --quick-geglu). */
    if (strcmp(base, "silu") == 0 || strcmp(base, "quick_gelu") == 0 ? gated
                                                                     : strcmp(base, "gelu") == 0)
        return SPSIM_OK; /* SwiGLU, GeGLU, quick-GeGLU (the gated MLP models each) or GeLU */
    if (strcmp(base, "squared_relu") == 0 && !gated) { /* megatron.core.activations */
        begin(c, a, NULL);
        int rc = word(c, "--squared-relu", false);
        return rc ? rc : flush(c);
    }
    return fail(c, a,
                "%s%s is not modelled (silu or quick_gelu with gated_linear_unit, gelu, or "
                "squared_relu)",
                SPSIM_Q(f), gated ? " gated" : "");
}

static int
bridge_checks(struct ctx *c)
{
    for (size_t k = 0; k < SPSIM_ARRAY_LENGTH(refusals); k++) {
        const struct spsim_yaml_entry *e = spsim_yaml_get(c->y, refusals[k].path);
        if (refused(c->y, k, e))
            return fail(c, e, "%s", refusals[k].why);
    }
    const struct spsim_yaml_entry *a = spsim_yaml_get(c->y, "ddp.use_distributed_optimizer"),
                                  *b = spsim_yaml_get(c->y, "optimizer.use_distributed_optimizer");
    if (a && b && a->kind == SPSIM_YAML_SCALAR && b->kind == SPSIM_YAML_SCALAR &&
        boolean(a->v[0]) != boolean(b->v[0]))
        return fail(c, b, "%s, but ddp.use_distributed_optimizer is %s (Bridge uses both)",
                    SPSIM_Q(b->v[0]), SPSIM_Q(a->v[0]));
    return bridge_model(c);
}

/* Bridge's vocabulary: model.vocab_size as given (setup.py: a preset size is not padded), else
 * the tokenizer's padded to make_vocab_size_divisible_by · tp; a dump written after setup says
 * which by should_pad_vocab. */
static int
bridge_vocab(struct ctx *c)
{
    const struct spsim_yaml_entry *v = spsim_yaml_get(c->y, "model.vocab_size"),
                                  *pad = spsim_yaml_get(c->y, "model.should_pad_vocab"),
                                  *div = spsim_yaml_get(c->y, "model.make_vocab_size_divisible_by");
    bool padded = pad && pad->kind == SPSIM_YAML_SCALAR && boolean(pad->v[0]) == 1;
    if (!set(v)) {
        v = spsim_yaml_get(c->y, "tokenizer.vocab_size");
        padded = true;
    }
    if (!set(v))
        return SPSIM_OK;
    if (v->kind != SPSIM_YAML_SCALAR || (set(div) && div->kind != SPSIM_YAML_SCALAR))
        return fail(c, v->kind != SPSIM_YAML_SCALAR ? v : div, "must be one value");
    begin(c, v, NULL);
    int rc = pair(c, "--vocab-size", v->v[0]);
    if (rc == SPSIM_OK && (set(div) || !padded)) {
        if (padded)
            begin(c, div, NULL);
        rc = pair(c, "--make-vocab-size-divisible-by", padded ? div->v[0] : "1");
    }
    return rc ? rc : flush(c);
}

/* Bridge's sections that hold no figure spsim computes (files, logging, schedules, data
 * loading, seeds, fault tolerance). */
static const char *const quiet_sections[] = {"checkpoint",
                                             "logger",
                                             "profiling",
                                             "rng",
                                             "rerun_state_machine",
                                             "scheduler",
                                             "dist",
                                             "ft",
                                             "straggler",
                                             "nvrx_straggler",
                                             "validation",
                                             "inprocess_restart",
                                             "tensor_inspect",
                                             "optimizer_config_override_provider",
                                             "tokenizer",
                                             "dataset",
                                             "peft"};

/* Fields of model, train, ddp, optimizer, mixed_precision and comm_overlap that change nothing
 * spsim computes: initialization, numerics of the norms, RoPE's angles, kernel fusions, loss
 * scaling, learning rates, logging, and fields read only beside an option spsim refuses or
 * reads elsewhere. */
static const char *const quiet_fields[] = {
    "activation_func_fp8_input_store",
    "adam_beta1",
    "adam_beta2",
    "adam_eps",
    "align_param_gather",
    "apply_query_key_layer_scaling",
    "apply_rope_fusion",
    "apply_wd_to_qk_layernorm",
    "attention_softmax_in_fp32",
    "autocast_dtype",
    "autocast_enabled",
    "average_in_collective",
    "barrier_with_L1_time",
    "batch_invariant_mode",
    "batch_p2p_comm",
    "batch_p2p_sync",
    "beta_fast",
    "beta_slow",
    "bias_activation_fusion",
    "bias_dropout_fusion",
    "cache_mla_latents",
    "calculate_per_token_loss",
    "check_for_large_grads",
    "check_for_nan_in_grad",
    "check_optimizer_step_success",
    "check_weight_hash_across_dp_replicas_interval",
    "clip_grad",
    "clone_scatter_output_in_embedding",
    "config_logger_dir",
    "cpu_offloading_activations",
    "cpu_offloading_double_buffering",
    "cpu_offloading_retain_pinned_cpu_buffers",
    "cuda_graph_use_single_mempool",
    "cuda_graph_warmup_steps",
    "data_parallel_size",
    "deallocate_pipeline_outputs",
    "decoupled_lr",
    "decoupled_min_lr",
    "decoupled_weight_decay",
    "decrease_batch_size_if_needed",
    "deterministic_mode",
    "disable_bf16_reduced_precision_matmul",
    "disable_parameter_transpose_cache",
    "disable_symmetric_registration",
    "embedding_init_method",
    "embedding_init_method_std",
    "empty_unused_memory_level",
    "enable_autocast",
    "enable_megatron_core_experimental",
    "eval_interval",
    "eval_iters",
    "exit_duration_in_mins",
    "exit_interval",
    "exit_signal",
    "exit_signal_handler",
    "exit_signal_handler_for_dataloader",
    "exp_avg_dtype",
    "exp_avg_sq_dtype",
    "finalize_model_grads_func",
    "fp16_lm_cross_entropy",
    "fp32",
    "fp4_param",
    "fp4_quantizer_factory",
    "fp8_amax_compute_algo",
    "fp8_amax_history_len",
    "fp8_interval",
    "fp8_margin",
    "fp8_param",
    "fp8_quantizer_factory",
    "fp8_wgrad",
    "fsdp_all_gather_in_start_param_sync",
    "fused_residual_rmsnorm",
    "fused_single_qkv_rope",
    "glu_linear_offset",
    "grad_scale_func",
    "grad_sync_func",
    "gradient_accumulation_fusion",
    "gradient_reduce_div_fusion",
    "hetereogenous_dist_checkpoint",
    "hf_model_id",
    "hf_model_revision",
    "hysteresis",
    "inference_disable_triton_nvls_kernels",
    "inference_fuse_tp_communication",
    "inference_grouped_gemm_backend",
    "inference_moe_disable_fused_quant_kernels",
    "inference_rng_tracker",
    "inference_sampling_seed",
    "init_method",
    "init_method_std",
    "init_model_with_meta_device",
    "initial_loss_scale",
    "iterations_to_skip",
    "keep_fp8_transpose_cache",
    "kitchen_attention_backend",
    "layernorm_epsilon",
    "layernorm_zero_centered_gamma",
    "lion_beta1",
    "lion_beta2",
    "log_max_attention_logit",
    "loss_scale",
    "loss_scale_window",
    "lr",
    "main_grads_dtype",
    "main_params_dtype",
    "manual_gc",
    "manual_gc_eval",
    "manual_gc_interval",
    "masked_softmax_fusion",
    "max_seqlen_per_dp_cp_rank",
    "megatron_fsdp_grad_comm_dtype",
    "megatron_fsdp_main_grads_dtype",
    "megatron_fsdp_main_params_dtype",
    "memory_efficient_layer_norm",
    "min_loss_scale",
    "min_lr",
    "min_offloaded_tensor_size",
    "mla_down_proj_fusion",
    "mlp_chunks_for_prefill",
    "moe_enable_routing_replay",
    "moe_input_jitter_eps",
    "moe_pad_experts_for_cuda_graph_inference",
    "moe_per_layer_logging",
    "moe_permute_fusion",
    "moe_router_bias_update_rate",
    "moe_router_dtype",
    "moe_router_force_load_balancing",
    "moe_router_fusion",
    "moe_router_padding_for_fp8",
    "moe_router_padding_for_quantization",
    "moe_router_pre_softmax",
    "moe_router_topk_scaling_factor",
    "moe_token_drop_policy",
    "mrope_section",
    "mscale",
    "mscale_all_dim",
    "mtp_loss_scaling_factor",
    "muon_extra_scale_factor",
    "muon_momentum",
    "muon_scale_mode",
    "mup_attn_scale_power",
    "mup_base_head_dim",
    "mup_base_hidden_size",
    "mup_embedding_mult",
    "mup_output_mult",
    "mup_width_mult",
    "nccl_all_reduce_for_prefill",
    "no_sync_func",
    "original_max_position_embeddings",
    "output_layer_init_method",
    "overlap_param_gather_with_optimizer_step",
    "overlap_p2p_comm_warmup_flush",
    "pad_buckets_for_high_nccl_busbw",
    "param_name_patterns_for_fp32_local_accumulation",
    "param_sync_func",
    "parallel_output",
    "params_dtype",
    "perform_initialization",
    "persist_layer_norm",
    "pin_cpu_grads",
    "pin_cpu_params",
    "pipeline_dtype",
    "pipeline_model_parallel_comm_backend",
    "qk_clip",
    "qk_clip_alpha",
    "qk_clip_threshold",
    "reduce_scatter_with_fp32_accumulation",
    "restore_modelopt_state",
    "reuse_grad_buf_for_mxfp8_param_ag",
    "rope_scaling",
    "rope_scaling_factor",
    "rope_type",
    "rotary_base",
    "rotary_interleaved",
    "rotary_scaling_factor",
    "scatter_embedding_sequence_parallel",
    "seq_len_interpolation_factor",
    "sgd_momentum",
    "should_pad_vocab",
    "skip_sync_grad_norm_across_mp",
    "skip_train",
    "softmax_scale",
    "store_param_remainders",
    "suggested_communication_unit_size",
    "symmetric_ar_type",
    "test_mode",
    "timers",
    "tp_comm_atomic_ag",
    "tp_comm_atomic_rs",
    "tp_comm_bootstrap_backend",
    "tp_comm_bulk_dgrad",
    "tp_comm_bulk_wgrad",
    "tp_comm_overlap_ag",
    "tp_comm_overlap_cfg",
    "tp_comm_overlap_disable_fc1",
    "tp_comm_overlap_disable_qkv",
    "tp_comm_overlap_rs",
    "tp_comm_overlap_rs_dgrad",
    "tp_comm_split_ag",
    "tp_comm_split_rs",
    "tp_only_amax_red",
    "train_iters",
    "train_samples",
    "train_sync_interval",
    "transformer_layer_spec",
    "use_arbitrary_attention_mask",
    "use_cpu_initialization",
    "use_inference_optimized_layers",
    "use_mamba_mem_eff_path",
    "use_precision_aware_optimizer",
    "use_te_activation_func",
    "use_te_rng_tracker",
    "use_torch_optimizer_for_cpu_offload",
    "variable_seq_lengths",
    "weight_decay",
    "yarn_beta_fast",
    "yarn_beta_slow",
    "yarn_correction_range_round_to_int",
    "yarn_mscale",
    "yarn_mscale_all_dim",
    "yarn_original_max_position_embeddings",
    "yarn_rotary_scaling_factor",
};

static bool
listed_in(const char *const *list, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == len && strncmp(list[i], name, len) == 0)
            return true;
    return false;
}

/* Whether a rule reads entry e: its name, in a section its `from` names (or anywhere: *). */
static bool
ruled(const struct spsim_yaml_entry *e)
{
    size_t parent = (size_t)(e->name - e->path);
    parent -= parent > 0;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(rules); i++) {
        if (strcmp(rules[i].key, e->name) != 0)
            continue;
        for (const char *t = rules[i].from; *t;) {
            size_t n = strcspn(t, " "), sn = strcspn(t, "!?+");
            sn = sn < n ? sn : n;
            if ((n == 1 && *t == '*') || (sn == parent && strncmp(t, e->path, sn) == 0))
                return true;
            t += n + (t[n] == ' ');
        }
    }
    return false;
}

/* A key to list as not modelled: set, not read by a rule, and for Bridge not a quiet one. */
static bool
listed(const struct ctx *c, const struct spsim_yaml_entry *e)
{
    if (e->kind == SPSIM_YAML_MAP || e->kind == SPSIM_YAML_NULL || e->name[0] == '_' || ruled(e))
        return false;
    if (!c->bridge)
        return true;
    for (size_t k = 0; k < SPSIM_ARRAY_LENGTH(refusals); k++)
        if (strcmp(refusals[k].path, e->path) == 0)
            return false; /* checked: refused, or as spsim models it */
    static const char *const at_default[][2] = {{"model.rotary_percent", "1.0"},
                                                {"model.transformer_impl", "transformer_engine"}};
    for (size_t k = 0; k < SPSIM_ARRAY_LENGTH(at_default); k++)
        if (strcmp(at_default[k][0], e->path) == 0 && e->kind == SPSIM_YAML_SCALAR &&
            (strcmp(e->v[0], at_default[k][1]) == 0 || (strtod(e->v[0], NULL) == 1.0 && k == 0)))
            return false;
    size_t section = strcspn(e->path, ".");
    if (!e->path[section] || strchr(e->path + section + 1, '.') || /* a field's own fields */
        listed_in(quiet_sections, SPSIM_ARRAY_LENGTH(quiet_sections), e->path, section) ||
        listed_in(quiet_fields, SPSIM_ARRAY_LENGTH(quiet_fields), e->name, strlen(e->name)))
        return false;
    const char *v = e->kind == SPSIM_YAML_SCALAR ? e->v[0] : NULL;
    return e->kind != SPSIM_YAML_SCALAR
               ? e->n > 0
               : boolean(v) != 0 && strcmp(v, "0") != 0 && strcmp(v, "0.0") != 0 && *v;
}

static int
list_unmodelled(struct ctx *c)
{
    for (size_t i = 0; i < c->y->n; i++) {
        const struct spsim_yaml_entry *e = &c->y->e[i];
        if (!spsim_yaml_live(c->y, i) || !listed(c, e))
            continue;
        begin(c, e, NULL);
        int rc = word(c, e->path, false);
        if (rc || (rc = flush(c)))
            return rc;
    }
    return SPSIM_OK;
}

/* A Megatron-Bridge ConfigContainer (or an override of one): a model: section beside one of
 * the container's others, or the container's _target_. */
static bool
is_bridge(const struct spsim_yaml *y)
{
    static const char *const others[] = {
        "train",      "ddp",    "optimizer", "mixed_precision", "comm_overlap", "dataset",
        "checkpoint", "logger", "scheduler", "tokenizer",       "dist",         "rng"};
    const struct spsim_yaml_entry *t = spsim_yaml_get(y, "_target_");
    if (t && t->kind == SPSIM_YAML_SCALAR && strstr(t->v[0], "ConfigContainer"))
        return true;
    if (spsim_yaml_get(y, "trainer"))
        return false; /* NeMo 1 */
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(others); i++)
        if (spsim_yaml_get(y, others[i]))
            return true;
    return false;
}

int
spsim_yaml_flags(struct spsim_yaml *y, struct spsim_sh_script *out, struct spsim_error *err)
{
    struct ctx c = {.y = y, .out = out, .err = err, .bridge = is_bridge(y)};
    memset(out, 0, sizeof(*out));
    int rc = spsim_yaml_resolve(y, err);
    if (rc == SPSIM_OK && c.bridge && (rc = precision_recipe(&c)) == SPSIM_OK &&
        (rc = bridge_checks(&c)) == SPSIM_OK)
        rc = bridge_vocab(&c);
    for (size_t i = 0; rc == SPSIM_OK && i < SPSIM_ARRAY_LENGTH(rules); i++) {
        const struct rule *r = &rules[i];
        if (c.bridge && (strcmp(r->key, "vocab_size") == 0 ||
                         strcmp(r->key, "make_vocab_size_divisible_by") == 0))
            continue;
        struct pick p = pick_rule(&c, r);
        if ((p.e || p.section) && (rc = emit_rule(&c, r, &p)) == SPSIM_OK)
            rc = flush(&c);
    }
    if (rc == SPSIM_OK)
        rc = list_unmodelled(&c);
    spsim_sh_words_free(&c.cmd);
    if (rc != SPSIM_OK)
        spsim_sh_free(out);
    return rc;
}
