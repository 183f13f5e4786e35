/*
 * Megatron-LM launch lines out: the flags of a model and a configuration, in the names
 * megatron_args.c reads, so that reading the text back gives the same model and configuration.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "profiles/profiles.h"
#include "spsim/megatron.h"

struct out {
    char *buf;
    size_t cap, n;
};

static void SPSIM_PRINTF(2, 3) emit(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w =
        vsnprintf(o->n < o->cap ? o->buf + o->n : NULL, o->n < o->cap ? o->cap - o->n : 0, fmt, ap);
    va_end(ap);
    if (w > 0)
        o->n += (size_t)w;
}

static void
model_flags(struct out *o, const struct spsim_model_shape *s)
{
    emit(o, "    --num-layers %u \\\n    --hidden-size %u \\\n", s->layers, s->hidden);
    emit(o, "    --num-attention-heads %u \\\n", s->heads);
    if (s->kv_heads != s->heads)
        emit(o, "    --group-query-attention \\\n    --num-query-groups %u \\\n", s->kv_heads);
    /* Multi-latent attention's heads are qk_head_dim + qk_pos_emb_head_dim wide; it reads no
     * --kv-channels. */
    if (!s->kv_lora_rank)
        emit(o, "    --kv-channels %u \\\n", s->head_dim);
    emit(o, "    --ffn-hidden-size %u \\\n", s->ffn_hidden);
    emit(o, "    --max-position-embeddings %u \\\n", s->seq_len);
    if (s->mlp == SPSIM_MLP_SWIGLU)
        emit(o, "    --swiglu \\\n");
    if (s->mlp == SPSIM_MLP_RELU2)
        emit(o, "    --squared-relu \\\n");
    emit(o, "    --normalization %s \\\n", s->norm == SPSIM_NORM_RMSNORM ? "RMSNorm" : "LayerNorm");
    emit(o, "    --position-embedding-type %s \\\n",
         s->position == SPSIM_POSITION_ROPE   ? "rope"
         : s->position == SPSIM_POSITION_NONE ? "none"
                                              : "learned_absolute");
    if (!s->linear_bias)
        emit(o, "    --disable-bias-linear \\\n");
    if (!s->linear_bias && s->qkv_bias)
        emit(o, "    --add-qkv-bias \\\n");
    if (!s->tied_embeddings)
        emit(o, "    --untie-embeddings-and-output-weights \\\n");
    if (s->qk_norm)
        emit(o, "    --qk-layernorm \\\n");
    if (s->attention_output_gate)
        emit(o, "    --attention-output-gate \\\n");
    if (s->rotary_percent > 0 && s->rotary_percent < 1)
        emit(o, "    --rotary-percent %.17g \\\n", s->rotary_percent);
    /* Megatron's defaults are 0.1 for both (TransformerConfig). */
    const char *p = s->dropout ? "0.1" : "0.0";
    emit(o, "    --attention-dropout %s \\\n    --hidden-dropout %s \\\n", p, p);
    /* NullTokenizer takes its size from --vocab-size (megatron/core/tokenizers). */
    emit(o, "    --tokenizer-type NullTokenizer \\\n    --vocab-size %u \\\n", s->vocab);
    if (s->vocab_divisible_by && s->vocab_divisible_by != 128)
        emit(o, "    --make-vocab-size-divisible-by %u \\\n", s->vocab_divisible_by);
}

/* Which layers are MoE: --moe-layer-freq N when the rule is Megatron's alone, else the list as
 * runs ("[0]*3+[1]*58", arguments.py moe_freq_type), one entry per layer. */
static void
layer_freq_flag(struct out *o, const struct spsim_model *model, const struct spsim_model_shape *s)
{
    if (!model->moe_pattern && s->moe_first_dense_layers == 0) {
        if (s->moe_layer_freq > 1)
            emit(o, "    --moe-layer-freq %u \\\n", s->moe_layer_freq);
        return;
    }
    emit(o, "    --moe-layer-freq ");
    for (uint32_t i = 0, run; i < s->layers; i += run) {
        bool moe = spsim_model_layer_is_moe(model, i);
        for (run = 1; i + run < s->layers && spsim_model_layer_is_moe(model, i + run) == moe;)
            run++;
        emit(o, "%s[%d]*%u", i ? "+" : "", moe, run);
    }
    emit(o, " \\\n");
}

/* The routed and shared experts, multi-latent attention and multi-token prediction. */
/* The router's auxiliary terms. spsim keeps only whether each is on, so a coefficient is
 * Megatron's recommended starting value: 1e-2 for the aux loss (arguments.py
 * --moe-aux-loss-coeff help), 1e-3 for the z-loss (transformer_config.py moe_z_loss_coeff). */
static void
router_loss_flags(struct out *o, const struct spsim_model_shape *s)
{
    static const char *const types[] = {
        [SPSIM_BALANCE_AUX_LOSS] = "aux_loss",
        [SPSIM_BALANCE_SEQ_AUX_LOSS] = "seq_aux_loss",
        [SPSIM_BALANCE_GLOBAL_AUX_LOSS] = "global_aux_loss",
    };
    /* none: Megatron's default coefficient 0.0 turns the loss off; Sinkhorn has no loss */
    if (s->load_balancing == SPSIM_BALANCE_SINKHORN)
        emit(o, "    --moe-router-load-balancing-type sinkhorn \\\n");
    else if (s->load_balancing != SPSIM_BALANCE_NONE)
        emit(o, "    --moe-router-load-balancing-type %s \\\n    --moe-aux-loss-coeff 1e-2 \\\n",
             types[s->load_balancing]);
    if (s->z_loss)
        emit(o, "    --moe-z-loss-coeff 1e-3 \\\n");
    if (s->expert_bias)
        emit(o, "    --moe-router-enable-expert-bias \\\n");
}

static void hybrid_flags(struct out *o, const struct spsim_model_shape *s);

static void
moe_mla_flags(struct out *o, const struct spsim_model *model, const struct spsim_model_shape *s)
{
    if (s->experts) {
        emit(o, "    --num-experts %u \\\n    --moe-router-topk %u \\\n", s->experts,
             s->experts_per_token);
        emit(o, "    --moe-ffn-hidden-size %u \\\n", s->expert_ffn_hidden);
        if (s->shared_expert_ffn_hidden)
            emit(o, "    --moe-shared-expert-intermediate-size %u \\\n",
                 s->shared_expert_ffn_hidden);
        if (s->shared_expert_ffn_hidden && s->moe_shared_expert_gate)
            emit(o, "    --moe-shared-expert-gate \\\n");
        layer_freq_flag(o, model, s);
        emit(o, "    --moe-router-score-function %s \\\n",
             s->router_score == SPSIM_ROUTER_SIGMOID ? "sigmoid" : "softmax");
        if (s->capacity_factor > 0)
            emit(o, "    --moe-expert-capacity-factor %.17g \\\n", s->capacity_factor);
        if (s->pad_to_capacity)
            emit(o, "    --moe-pad-expert-input-to-capacity \\\n");
        if (s->router_group_topk)
            emit(o, "    --moe-router-num-groups %u \\\n    --moe-router-group-topk %u \\\n",
                 s->router_num_groups, s->router_group_topk);
        router_loss_flags(o, s);
    }
    if (s->kv_lora_rank) {
        emit(o, "    --multi-latent-attention \\\n");
        if (s->q_lora_rank)
            emit(o, "    --q-lora-rank %u \\\n", s->q_lora_rank);
        emit(o, "    --kv-lora-rank %u \\\n    --qk-head-dim %u \\\n", s->kv_lora_rank,
             s->qk_head_dim);
        emit(o, "    --qk-pos-emb-head-dim %u \\\n    --v-head-dim %u \\\n", s->qk_pos_emb_head_dim,
             s->v_head_dim);
    }
    if (s->mtp_layers && !s->hybrid_pattern) /* a hybrid model's: its pattern's depths */
        emit(o, "    --mtp-num-layers %u \\\n", s->mtp_layers);
    hybrid_flags(o, s);
    if (s->window) /* window_size (W − 1, 0): W positions, causal */
        emit(o, "    --window-size %u,0 \\\n", s->window - 1);
    if (s->window_skip_freq)
        emit(o, "    --window-attn-skip-freq %u \\\n", s->window_skip_freq);
    if (s->softmax_type != SPSIM_SOFTMAX_VANILLA) /* arguments.py --softmax-type */
        emit(o, "    --softmax-type %s \\\n", spsim_softmax_names[s->softmax_type]);
}

/* A hybrid model (arguments.py --hybrid-layer-pattern, its MTP depths after '/'; the mixers'
 * TransformerConfig fields; Megatron-Bridge's mamba_chunk_size, which spsim reads back). */
static void
hybrid_flags(struct out *o, const struct spsim_model_shape *s)
{
    if (!s->hybrid_pattern)
        return;
    emit(o, "    --hybrid-layer-pattern '%s", s->hybrid_pattern);
    for (uint32_t i = 0; s->mtp_pattern && i < s->mtp_layers; i++)
        emit(o, "/%s", s->mtp_pattern);
    emit(o, "' \\\n");
    if (s->mtp_shared)
        emit(o, "    --mtp-use-repeated-layer \\\n");
    if (s->mamba_heads)
        emit(o,
             "    --mamba-num-heads %u \\\n    --mamba-head-dim %u \\\n    --mamba-state-dim %u "
             "\\\n    --mamba-num-groups %u \\\n",
             s->mamba_heads, s->mamba_head_dim, s->mamba_state_dim, s->mamba_groups);
    if (s->mamba_chunk && s->mamba_chunk != 128)
        emit(o, "    --mamba-chunk-size %u \\\n", s->mamba_chunk);
    if (s->gdn_key_heads)
        emit(o,
             "    --linear-num-key-heads %u \\\n    --linear-num-value-heads %u \\\n"
             "    --linear-key-head-dim %u \\\n    --linear-value-head-dim %u \\\n"
             "    --linear-conv-kernel-dim %u \\\n",
             s->gdn_key_heads, s->gdn_value_heads, s->gdn_key_head_dim, s->gdn_value_head_dim,
             s->gdn_conv);
    if (s->moe_latent)
        emit(o, "    --moe-latent-size %u \\\n", s->moe_latent);
}

/* Expert parallelism: ep, etp (absent: tp) and the dispatcher (absent: allgather). */
static void
expert_flags(struct out *o, const struct spsim_model_shape *s, const struct spsim_parallel *p)
{
    if (!s->experts)
        return;
    if (p->ep > 1)
        emit(o, "    --expert-model-parallel-size %u \\\n", p->ep);
    if (p->etp)
        emit(o, "    --expert-tensor-parallel-size %u \\\n", p->etp);
    emit(o, "    --moe-token-dispatcher-type %s \\\n",
         spsim_moe_dispatcher_name(p->moe_dispatcher));
    if (p->moe_a2a_overlap)
        emit(o, "    --overlap-moe-expert-parallel-comm \\\n");
    if (p->delay_wgrad_compute)
        emit(o, "    --delay-wgrad-compute \\\n");
    if (p->moe_dispatcher != SPSIM_MOE_FLEX)
        return;
    emit(o, "    --moe-flex-dispatcher-backend %s \\\n",
         spsim_moe_flex_backend_name(p->moe_flex_backend));
    if (p->moe_flex_sms)
        emit(o, "    --moe-flex-dispatcher-num-sms %u \\\n", p->moe_flex_sms);
}

static void
context_flags(struct out *o, const struct spsim_parallel *p)
{
    if (p->cp > 1)
        emit(o, "    --context-parallel-size %u \\\n", p->cp);
    if (p->cp_comm_type != SPSIM_CP_P2P)
        emit(o, "    --cp-comm-type %s \\\n", spsim_cp_comm_name(p->cp_comm_type));
    if (p->hcp_sizes[0])
        emit(o, "    --hierarchical-context-parallel-sizes %u %u \\\n", p->hcp_sizes[0],
             p->hcp_sizes[1]);
}

/* The distributed optimizer, Megatron-FSDP's strategy, gradient buffers, parameter gather. */
static void
sharding_flags(struct out *o, const struct spsim_parallel *p)
{
    static const char *const strategies[] = {"no_shard", "optim", "optim_grads",
                                             "optim_grads_params"};
    /* Level 1 is the distributed optimizer, or Megatron-FSDP's optim (spsim's --zero 1). */
    if (p->distributed_optimizer)
        emit(o, "    --use-distributed-optimizer \\\n");
    if (p->zero < 4 && (p->zero > 1 || (p->zero == 1 && !p->distributed_optimizer)))
        emit(o, "    --use-megatron-fsdp \\\n    --data-parallel-sharding-strategy %s \\\n",
             strategies[p->zero]);
    if (p->dist_opt_instances > 1) /* HSDP: arguments.py's flags, default 1 and no_shard */
        emit(o, "    --num-distributed-optimizer-instances %u \\\n%s", p->dist_opt_instances,
             p->outer_dp_shard ? "    --outer-dp-sharding-strategy optim \\\n" : "");
    if (p->grad_reduce_in_fp32 >= 0)
        emit(o, "    %s \\\n",
             p->grad_reduce_in_fp32 ? "--accumulate-allreduce-grads-in-fp32"
                                    : "--grad-reduce-in-bf16");
    /* A Megatron-Bridge recipe's DDP may overlap the gather alone (bridge_ddp); Megatron-LM's
     * arguments.py:1028 refuses that line, so the gather is written only beside the reduction
     * (the refusal is said in a comment, spsim_megatron_format). */
    if (p->overlap_param_gather && (p->overlap_grad_reduce || p->zero >= 2))
        emit(o, "    --overlap-param-gather \\\n");
    if (p->precision_aware_optimizer)
        emit(o,
             "    --use-precision-aware-optimizer \\\n    --main-grads-dtype %s \\\n"
             "    --main-params-dtype %s \\\n    --exp-avg-dtype %s \\\n"
             "    --exp-avg-sq-dtype %s \\\n",
             spsim_opt_dtype_name(p->main_grads_dtype), spsim_opt_dtype_name(p->main_params_dtype),
             spsim_opt_dtype_name(p->exp_avg_dtype), spsim_opt_dtype_name(p->exp_avg_sq_dtype));
    if (p->optimizer_cpu_offload)
        emit(o, "    --optimizer-cpu-offload \\\n    --optimizer-offload-fraction %.17g \\\n%s",
             p->optimizer_offload_fraction,
             p->overlap_cpu_optimizer_d2h_h2d ? "    --overlap-cpu-optimizer-d2h-h2d \\\n" : "");
    emit(o, "%s%s", p->log_params_norm ? "    --log-params-norm \\\n" : "",
         p->log_num_zeros_in_grad ? "    --log-num-zeros-in-grad \\\n" : "");
    if (p->log_interval)
        emit(o, "    --log-interval %u \\\n", p->log_interval);
    emit(o, "%s%s%s", p->tensorboard ? "    --tensorboard-dir tensorboard \\\n" : "",
         p->log_timers_to_tensorboard ? "    --log-timers-to-tensorboard \\\n" : "",
         p->log_memory_to_tensorboard ? "    --log-memory-to-tensorboard \\\n" : "");
    emit(o, "%s%s%s",
         p->no_gradient_accumulation_fusion ? "    --no-gradient-accumulation-fusion \\\n" : "",
         p->no_create_attention_mask_in_dataloader
             ? "    --no-create-attention-mask-in-dataloader \\\n"
             : "",
         p->no_check_for_nan_in_loss_and_grad ? "    --no-check-for-nan-in-loss-and-grad \\\n"
                                              : "");
    if (p->defer_embedding_wgrad_compute)
        emit(o, "    --defer-embedding-wgrad-compute \\\n    --wgrad-deferral-limit %u \\\n",
             p->wgrad_deferral_limit);
    /* Megatron-LM's launcher takes only the native fusion (arguments.py:1697-1702; TE's is
     * Megatron-Bridge's, said in a comment by spsim_megatron_format). */
    if (p->cross_entropy_loss_fusion)
        emit(o, "    --cross-entropy-loss-fusion \\\n");
    if (p->optimizer == SPSIM_OPTIMIZER_MUON) /* with the distributed optimizer: layer-wise */
        emit(o,
             "    --optimizer muon \\\n    --muon-num-ns-steps %u \\\n    --muon-tp-mode %s \\\n"
             "%s%s",
             p->muon_ns_steps ? p->muon_ns_steps : 5,
             p->muon_tp_mode == SPSIM_MUON_TP_BLOCKWISE ? "blockwise" : "duplicated",
             p->muon_nesterov ? "    --muon-nesterov \\\n" : "",
             p->muon_no_split_qkv ? "    --muon-no-split-qkv \\\n" : "");
}

static void
recompute_flags(struct out *o, const struct spsim_parallel *p)
{
    char modules[128];
    if (p->recompute == SPSIM_RECOMPUTE_SELECTIVE)
        emit(o, "    --recompute-granularity selective \\\n");
    /* Megatron takes the modules as separate words (nargs='*'). */
    if (p->recompute_modules) {
        spsim_recompute_modules_format(p->recompute_modules, modules, sizeof(modules));
        for (char *c = modules; *c; c++)
            *c = *c == '+' ? ' ' : *c;
        emit(o, "    --recompute-modules %s \\\n", modules);
    }
    if (p->recompute != SPSIM_RECOMPUTE_FULL)
        return;
    bool block = p->recompute_method == SPSIM_RECOMPUTE_METHOD_BLOCK;
    emit(o, "    --recompute-granularity full \\\n    --recompute-method %s \\\n",
         block ? "block" : "uniform");
    emit(o, "    --recompute-num-layers %u \\\n", p->recompute_layers ? p->recompute_layers : 1);
}

/* CUDA graphs; the modules under --cuda-graph-scope, the name every Megatron-LM with the flag
 * reads (newer ones migrate it to --cuda-graph-modules), one word each (nargs '+'). */
static void
graph_flags(struct out *o, const struct spsim_parallel *p)
{
    if (p->cuda_graph_impl == SPSIM_CUDA_GRAPH_NONE)
        return;
    emit(o, "    --cuda-graph-impl %s \\\n", spsim_cuda_graph_impl_name(p->cuda_graph_impl));
    if (!p->cuda_graph_scope)
        return;
    emit(o, "    --cuda-graph-scope");
    for (int i = 0; i < SPSIM_CGS_COUNT_; i++)
        if (p->cuda_graph_scope & (1u << i))
            emit(o, " %s", spsim_cuda_graph_scope_names[i]);
    emit(o, " \\\n");
}

/* Uneven pipeline stages: the first/last ranks' layers, the embedding and loss accounted, or a
 * layout (its text quoted: '|', '(' and '*' are the shell's). */
static void
uneven_flags(struct out *o, const struct spsim_parallel *p)
{
    if (p->first_stage_layers)
        emit(o, "    --decoder-first-pipeline-num-layers %u \\\n", p->first_stage_layers);
    if (p->last_stage_layers)
        emit(o, "    --decoder-last-pipeline-num-layers %u \\\n", p->last_stage_layers);
    if (p->account_embedding)
        emit(o, "    --account-for-embedding-in-pipeline-split \\\n");
    if (p->account_loss)
        emit(o, "    --account-for-loss-in-pipeline-split \\\n");
    if (p->pipeline_layout)
        emit(o, "    --pipeline-model-parallel-layout '%s' \\\n", p->pipeline_layout);
    if (p->microbatch_group)
        emit(o, "    --microbatch-group-size-per-virtual-pipeline-stage %u \\\n",
             p->microbatch_group);
}

static void
parallel_flags(struct out *o, const struct spsim_model_shape *s, const struct spsim_parallel *p)
{
    emit(o, "    --tensor-model-parallel-size %u \\\n", p->tp);
    emit(o, "    --pipeline-model-parallel-size %u \\\n", p->pp);
    context_flags(o, p);
    expert_flags(o, s, p);
    uneven_flags(o, p);
    bool vpp = p->vpp > 1 && !p->pipeline_layout; /* a layout gives vpp */
    if (vpp && p->pp && s->layers % (p->pp * p->vpp) == 0)
        emit(o, "    --num-layers-per-virtual-pipeline-stage %u \\\n",
             s->layers / (p->pp * p->vpp));
    else if (vpp)
        emit(o, "    --num-virtual-stages-per-pipeline-rank %u \\\n", p->vpp);
    if (p->sp)
        emit(o, "    --sequence-parallel \\\n");
    recompute_flags(o, p);
    if (p->offload_layers)
        emit(o, "    --cpu-offloading \\\n    --cpu-offloading-num-layers %u \\\n",
             p->offload_layers);
    bool flash = p->flash_attn >= 0 ? p->flash_attn == 1 : s->attention == SPSIM_ATTENTION_FLASH;
    emit(o, "    --attention-backend %s \\\n",
         !flash                                     ? "unfused"
         : p->attention_backend == SPSIM_ATTN_FUSED ? "fused"
         : p->attention_backend == SPSIM_ATTN_AUTO  ? "auto"
                                                    : "flash");
    emit(o, "    --seq-length %u \\\n", p->seq ? p->seq : s->seq_len);
    emit(o, "    --micro-batch-size %u \\\n    --global-batch-size %llu \\\n", p->mbs,
         (unsigned long long)p->gbs);
    sharding_flags(o, p);
    if (p->overlap_grad_reduce)
        emit(o, "    --overlap-grad-reduce \\\n");
    if (p->ddp_bucket_size)
        emit(o, "    --ddp-bucket-size %llu \\\n", (unsigned long long)p->ddp_bucket_size);
    if (p->no_overlap_p2p && p->vpp > 1)
        emit(o, "    --no-overlap-p2p-communication \\\n");
    if (p->tp_comm_overlap)
        emit(o, "    --tp-comm-overlap \\\n");
    graph_flags(o, p);
    if (p->dtype == SPSIM_DTYPE_FP8) {
        static const char *const recipes[] = {"delayed", "tensorwise", "mxfp8", "blockwise"};
        emit(o, "    --fp8-format hybrid \\\n    --fp8-recipe %s \\\n%s",
             recipes[p->fp8_recipe < SPSIM_FP8_RECIPE_COUNT ? p->fp8_recipe : 0],
             p->fp8_param_gather ? "    --fp8-param-gather \\\n" : "");
    }
    if (p->dtype == SPSIM_DTYPE_NVFP4)
        emit(o, "    --fp4-format e2m1 \\\n    --fp4-recipe nvfp4 \\\n%s",
             p->fp8_param_gather ? "    --fp4-param-gather \\\n" : "");
    if (p->first_last_layers_bf16)
        emit(o,
             "    --first-last-layers-bf16 \\\n    --num-layers-at-start-in-bf16 %u \\\n"
             "    --num-layers-at-end-in-bf16 %u \\\n",
             p->bf16_layers_start, p->bf16_layers_end);
    emit(o, "    %s\n", p->dtype == SPSIM_DTYPE_FP16 ? "--fp16" : "--bf16");
}

/* Megatron-LM at d98e8a6 has no flag for a norm after linear_proj or linear_fc2 (arguments.py;
 * transformer_config.py's apply_residual_connection_post_layernorm moves the residual, it adds no
 * norm): Gemma's post-norms come from Megatron-Bridge's own layer spec only. */
const char *
spsim_megatron_unsupported(const struct spsim_model *model)
{
    const struct spsim_model_shape *s = spsim_model_get_shape(model);
    if (s && s->post_norms)
        return "post-attention and post-MLP norms (post_norms, Gemma 2/3: Megatron-Bridge's "
               "TERowParallelLinearLayerNorm; Megatron-LM has no flag for them)";
    /* LanguageModelEmbedding scales only by MuP's mup_embedding_mult (language_model_embedding.py
     * :135 @d98e8a64), with MuP's other changes: no flag scales by sqrt(h) alone. */
    if (s && s->embedding_scale)
        return "the embedding's sqrt(h) scale (embedding_scale, Gemma: Megatron-Bridge's "
               "Gemma providers; Megatron-LM has no flag for it)";
    return NULL;
}

size_t
spsim_megatron_format(const struct spsim_model *model, const struct spsim_parallel *par,
                      uint32_t gpus_per_node, char *buf, size_t cap)
{
    struct out o = {buf, cap, 0};
    if (cap)
        buf[0] = '\0';
    if (!model || !par)
        return 0;
    const struct spsim_model_shape *s = spsim_model_get_shape(model);
    uint64_t gpus = (uint64_t)par->tp * par->pp * par->dp * (par->cp ? par->cp : 1);
    uint64_t per_node = gpus_per_node && gpus % gpus_per_node == 0 ? gpus_per_node : gpus;
    emit(&o, "# %s: written by spsim %s (spsim --megatron-args reads it back)\n",
         spsim_model_name(model), spsim_version());
    /* Megatron-LM has no LoRA nor a packed-sequence flag (Bridge's peft and packed datasets):
     * said, not dropped silently. */
    if (par->lora_rank)
        emit(&o,
             "# LoRA rank %u is Megatron-Bridge's (peft), not a pretrain_gpt.py flag: this "
             "line trains the whole model\n",
             par->lora_rank);
    if (par->pp_schedule != SPSIM_PP_SCHEDULE_MEGATRON)
        emit(&o,
             "# the %s pipeline schedule is its reference code's (README \"Pipeline "
             "schedules\"), not a pretrain_gpt.py flag: this line runs Megatron's\n",
             spsim_pp_schedule_name(par->pp_schedule, par->vpp));
    if (par->packed_subseq_len)
        emit(&o,
             "# packed sequences (THD, %u-token sub-sequences) come from the data, not a "
             "flag: this line trains on whole rows\n",
             par->packed_subseq_len);
    if (par->overlap_param_gather && !par->overlap_grad_reduce && par->zero < 2)
        emit(&o, "# the parameter gather overlapped without the gradient reduction is Megatron-"
                 "Bridge's DDP; Megatron-LM refuses it (arguments.py): this line does not "
                 "overlap the gather\n");
    if (par->cross_entropy_loss_fusion && par->cross_entropy_fusion_impl != SPSIM_CE_NATIVE)
        emit(&o, "# Transformer Engine's cross-entropy fusion is Megatron-Bridge's; Megatron-LM "
                 "refuses it (arguments.py): this line runs the native fusion\n");
    emit(&o, "torchrun --nproc_per_node %llu --nnodes %llu %s \\\n", (unsigned long long)per_node,
         (unsigned long long)(gpus / per_node),
         s->hybrid_pattern ? "pretrain_hybrid.py" : "pretrain_gpt.py");
    model_flags(&o, s);
    moe_mla_flags(&o, model, s);
    parallel_flags(&o, s, par);
    return o.n;
}
