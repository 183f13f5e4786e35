/*
 * Exact parameter counts of the parts a mixture-of-experts or multi-latent-attention layer adds
 * (issue 11), at Megatron-LM d98e8a6. Each part is counted as Megatron-Core builds it: the
 * weights and biases a TP (or expert-TP) split divides, and those every rank keeps whole.
 * Leaf helpers: nothing here calls the rest of the profiles part.
 */
#include "config.h"

#include "profiles.h"

/* Weights of one norm over n channels: RMSNorm γ; LayerNorm γ and β. */
static uint64_t
norm_params(const struct spsim_model_shape *m, uint64_t n)
{
    return m->norm == SPSIM_NORM_LAYERNORM ? 2 * n : n;
}

/*
 * Standard attention (transformer/attention.py SelfAttention): linear_qkv h → q + 2·kv and
 * linear_proj q → h split over TP; the QKV bias is column-parallel (split), the projection's
 * row-parallel bias is kept whole; --qk-layernorm adds a norm of head_dim channels for Q and
 * one for K, shared by the heads.
 */
static void
standard_attention(const struct spsim_model_shape *m, struct spsim_param_split *p, bool *ok)
{
    uint64_t h = m->hidden, d = m->head_dim;
    uint64_t q = (uint64_t)m->heads * d, kv = (uint64_t)m->kv_heads * d;
    uint64_t qkv_out = q + 2 * kv;
    /* attention.py: linear_qkv_out_dim += kv_channels · num_attention_heads for the gate. */
    uint64_t gate = m->attention_output_gate ? q : 0;
    p->sharded = spsim_add(spsim_mul(h, qkv_out + gate, ok), spsim_mul(q, h, ok), ok);
    p->replicated = m->qk_norm ? 2 * norm_params(m, d) : 0;
    if (m->linear_bias || m->qkv_bias)
        p->sharded = spsim_add(p->sharded, qkv_out, ok);
    if (m->linear_bias)
        p->replicated += h;
}

/*
 * Multi-latent attention (transformer/multi_latent_attention.py MLASelfAttention, built at
 * :508-620): linear_q_down_proj h → r_q and linear_kv_down_proj h → r_kv + d_r are duplicated
 * on every TP rank (TELinear parallel_mode 'duplicated'); linear_q_up_proj r_q → n·(d_qk + d_r)
 * (or linear_q_proj h → n·(d_qk + d_r) without r_q), linear_kv_up_proj r_kv → n·(d_qk + d_v) and
 * linear_proj n·d_v → h are split over TP. The projections have no bias (bias=False), but
 * linear_proj keeps add_bias_linear's. With --qk-layernorm (mla_qk_norm_config.py) q_layernorm
 * over r_q and kv_layernorm over r_kv, whole on each rank.
 */
static void
mla_attention(const struct spsim_model_shape *m, struct spsim_param_split *p, bool *ok)
{
    uint64_t h = m->hidden, n = m->heads, rq = m->q_lora_rank, rkv = m->kv_lora_rank;
    uint64_t qk = (uint64_t)m->qk_head_dim + m->qk_pos_emb_head_dim;
    p->sharded = spsim_mul3(rq ? rq : h, n, qk, ok);
    p->sharded =
        spsim_add(p->sharded, spsim_mul3(rkv, n, (uint64_t)m->qk_head_dim + m->v_head_dim, ok), ok);
    p->sharded = spsim_add(p->sharded, spsim_mul3(n, m->v_head_dim, h, ok), ok);
    p->replicated =
        spsim_add(spsim_mul(h, rq, ok), spsim_mul(h, rkv + m->qk_pos_emb_head_dim, ok), ok);
    if (m->qk_norm)
        p->replicated += (rq ? norm_params(m, rq) : 0) + norm_params(m, rkv);
    if (m->linear_bias)
        p->replicated += h;
}

/* Either attention, and with learnable softmax offsets (attention sinks) TE's softmax_offset
 * Parameter of num_attention_heads // tp_size values in its DotProductAttention
 * (dot_product_attention.py:778-784 at TE d0067d0; Megatron-Core's TEDotProductAttention
 * passes softmax_type, extensions/transformer_engine.py:2184-2189 at d98e8a6): split over TP
 * with the heads. Off-by-one's zero offset is a buffer, not a parameter. */
void
spsim_attention_parameters(const struct spsim_model_shape *m, struct spsim_param_split *p, bool *ok)
{
    if (m->kv_lora_rank)
        mla_attention(m, p, ok);
    else
        standard_attention(m, p, ok);
    if (m->softmax_type == SPSIM_SOFTMAX_LEARNABLE)
        p->sharded = spsim_add(p->sharded, m->heads, ok);
}

/*
 * An MLP of inner size f (transformer/mlp.py): linear_fc1 h → f (2·f for SwiGLU's gate and up)
 * column-parallel, linear_fc2 f → h row-parallel; with add_bias_linear fc1's bias is split and
 * fc2's kept whole. Megatron's experts (moe/experts.py TEGroupedMLP, SequentialMLP) and shared
 * experts (moe/shared_experts.py SharedExpertMLP) are this MLP at their own f.
 */
static void
mlp_width_parameters(const struct spsim_model_shape *m, uint64_t h, uint64_t f,
                     struct spsim_param_split *p, bool *ok)
{
    uint64_t fc1_out = (m->mlp == SPSIM_MLP_SWIGLU ? 2 : 1) * f;
    p->sharded = spsim_add(spsim_mul(h, fc1_out, ok), spsim_mul(f, h, ok), ok);
    p->replicated = 0;
    if (m->linear_bias && f) {
        p->sharded = spsim_add(p->sharded, fc1_out, ok);
        p->replicated = h;
    }
}

void
spsim_mlp_parameters(const struct spsim_model_shape *m, uint64_t f, struct spsim_param_split *p,
                     bool *ok)
{
    mlp_width_parameters(m, m->hidden, f, p, ok);
}

/* Latent MoE (moe_layer.py): the routed experts run on moe_latent channels, the tokens
 * projected into them by fc1_latent_proj h → latent and back by fc2_latent_proj latent → h, two
 * TELinear of parallel_mode 'duplicated' (whole on every rank) with add_bias_linear's bias. */
uint64_t
spsim_moe_latent_parameters(const struct spsim_model_shape *m)
{
    uint64_t h = m->hidden, r = m->moe_latent;
    return r ? 2 * h * r + (m->linear_bias ? r + h : 0) : 0;
}

uint64_t
spsim_expert_parameters_per_rank(const struct spsim_model_shape *m, uint32_t etp, bool *ok)
{
    struct spsim_param_split p;
    mlp_width_parameters(m, m->moe_latent ? m->moe_latent : m->hidden, m->expert_ffn_hidden, &p,
                         ok);
    return spsim_add(p.sharded / (etp ? etp : 1), p.replicated, ok);
}

uint64_t
spsim_expert_parameters(const struct spsim_model_shape *m)
{
    bool ok = true;
    uint64_t n = spsim_expert_parameters_per_rank(m, 1, &ok);
    return ok ? n : UINT64_MAX;
}

uint64_t
spsim_shared_expert_parameters(const struct spsim_model_shape *m)
{
    struct spsim_param_split p;
    bool ok = true;
    spsim_mlp_parameters(m, m->shared_expert_ffn_hidden, &p, &ok);
    return ok ? p.sharded + p.replicated : UINT64_MAX;
}

/*
 * The router (moe/router.py Router.__init__): a weight of experts × h, replicated over TP and
 * EP, and a bias of experts with add_bias_linear. The aux-loss-free expert_bias of sigmoid
 * routers (--moe-router-enable-expert-bias) is a buffer (register_buffer), not a parameter:
 * the optimizer never sees it, so it is not counted.
 */
uint64_t
spsim_router_parameters(const struct spsim_model_shape *m)
{
    uint64_t e = m->experts;
    /* shared_experts.py SharedExpertMLP: gate_weight (1 × h), whole on every rank like the
     * router's, counted with it. */
    uint64_t gate = m->moe_shared_expert_gate && m->shared_expert_ffn_hidden ? m->hidden : 0;
    return (uint64_t)m->hidden * e + (m->linear_bias ? e : 0) + gate;
}

/*
 * A MoE layer on one rank of TP size tp, EP size ep and expert-TP size etp: the attention,
 * the layer's two norms (input_layernorm, pre_mlp_layernorm), the router and the shared
 * experts (TP-split as a dense MLP) as in a dense layer, and experts/ep routed experts split
 * etp ways (moe/experts.py: each EP rank builds num_local_experts = experts / ep).
 */
uint64_t
spsim_moe_layer_parameters_per_rank(const struct spsim_model_shape *m, uint32_t tp, uint32_t ep,
                                    uint32_t etp, bool *ok)
{
    struct spsim_param_split att, shared;
    spsim_attention_parameters(m, &att, ok);
    spsim_mlp_parameters(m, m->shared_expert_ffn_hidden, &shared, ok);
    uint64_t dense = spsim_add(att.sharded, shared.sharded, ok) / (tp ? tp : 1);
    dense = spsim_add(dense, att.replicated + shared.replicated, ok);
    dense = spsim_add(dense, 2 * norm_params(m, m->hidden) + spsim_router_parameters(m), ok);
    dense = spsim_add(dense, spsim_moe_latent_parameters(m), ok);
    uint64_t local = m->experts / (ep ? ep : 1);
    return spsim_add(dense, spsim_mul(local, spsim_expert_parameters_per_rank(m, etp, ok), ok), ok);
}

/*
 * What one multi-token-prediction layer adds to its transformer layer
 * (transformer/multi_token_prediction.py MultiTokenPredictionLayer): enorm, hnorm and
 * final_layernorm over h, whole on each rank, and eh_proj 2h → h without bias, split over TP.
 * The embedding and the output head are the model's, shared (not counted again).
 */
uint64_t
spsim_mtp_extra_parameters_per_rank(const struct spsim_model_shape *m, uint32_t tp, bool *ok)
{
    uint64_t h = m->hidden;
    return spsim_add(spsim_mul(2 * h, h, ok) / (tp ? tp : 1), 3 * norm_params(m, h), ok);
}
