/*
 * Model FLOPs per token of a model with mixture-of-experts layers, multi-latent attention or
 * multi-token-prediction layers (issue 11), in the engine's three named formulas. A dense model
 * takes the closed form in evaluate.c compose_flops; this is the same arithmetic summed layer
 * kind by layer kind, so that for a dense shape both agree.
 */
#include "config.h"

#include "eval.h"

/* Forward matmul weights one token passes through in a layer's attention, and its core widths:
 * QKᵀ over qk channels and attention·V over v channels, summed over the heads. */
static void
attention_weights(const struct spsim_model_shape *m, double *weights, double *qk, double *v)
{
    double h = m->hidden, n = m->heads;
    if (!m->kv_lora_rank) {
        double q = n * m->head_dim, kv = (double)m->kv_heads * m->head_dim;
        *weights = h * (q + 2 * kv) + q * h;
        *qk = *v = q;
        return;
    }
    /* MLA (multi_latent_attention.py): q down h·r_q and up r_q·n·(d_qk + d_r), or h·n·(d_qk + d_r)
     * without r_q; kv down h·(r_kv + d_r) and up r_kv·n·(d_qk + d_v); output n·d_v·h. */
    double rq = m->q_lora_rank, rkv = m->kv_lora_rank, dr = m->qk_pos_emb_head_dim;
    double qkw = n * ((double)m->qk_head_dim + dr);
    *weights = (rq ? rq * (h + qkw) : h * qkw) + h * (rkv + dr) +
               rkv * n * ((double)m->qk_head_dim + m->v_head_dim) + n * m->v_head_dim * h;
    *qk = qkw;
    *v = n * m->v_head_dim;
}

/* Decoder layers by kind, the MTP layers counted as the last decoder layer's kind (training.py
 * num_floating_point_operations: num_moe_layers += last_layer_is_moe · mtp_num_layers). */
static void
layer_counts(const struct spsim_model *model, double *dense, double *moe)
{
    const struct spsim_model_shape *m = &model->shape;
    *moe = model->moe_layers;
    *dense = (double)m->layers - model->moe_layers;
    *(spsim_model_layer_is_moe(model, m->layers - 1) ? moe : dense) += m->mtp_layers;
}

/* Megatron-Bridge's core-attention context per layer summed over the L + D layers, in units of
 * s/2 (flop_utils.py transformer_flops at 067f987): a full causal layer averages s/2 keys per
 * query; a sliding-window layer, window W < s, averages W - W·(W - 1)/(2s) (its "exact average
 * causal SWA context"), else s/2. Layer i (0-based) attends fully when (i + 1) % freq == 0. */
static double
bridge_core_layers(const struct spsim_model_shape *m, double s, double layers)
{
    double w = m->window;
    if (!m->window || w >= s)
        return layers;
    double full =
        m->window_skip_freq ? (double)((m->layers + m->mtp_layers) / m->window_skip_freq) : 0;
    return full + (layers - full) * (w - w * (w - 1) / (2 * s)) / (s / 2);
}

void
spsim_model_flops_per_token(const struct spsim_model *model, double s, double vpad,
                            struct spsim_flops_per_token *f)
{
    const struct spsim_model_shape *m = &model->shape;
    double h = m->hidden, r = m->mlp == SPSIM_MLP_SWIGLU ? 3 : 2, D = m->mtp_layers;
    double att, qk, v, dense, moe;
    attention_weights(m, &att, &qk, &v);
    layer_counts(model, &dense, &moe);
    double layers = dense + moe;
    /* The MLP matmuls: a dense FFN; top-k routed experts and the shared experts (the router's
     * h·E is not counted, as Megatron's formula does not count it). */
    double mlp =
        dense * r * h * m->ffn_hidden +
        moe * r * h *
            ((double)m->experts_per_token * m->expert_ffn_hidden + m->shared_expert_ffn_hidden);
    /* MTP's eh_proj 2h → h per MTP layer; the logits once for the model and once per MTP
     * layer (its shared output head). */
    double weights = layers * att + mlp + D * 2 * h * h;
    f->logits = 2 * h * vpad * (1 + D);
    /* 2 FLOPs per weight; core attention 2·s·(qk + v) per layer without causal masking (the
     * 2022 paper's Appendix A convention, as compose_flops for dense models). */
    f->model = 2 * weights + layers * 2 * s * (qk + v) + f->logits;
    /* Megatron-LM's own count (training.py transformer_flops at d98e8a6): the same weights, the
     * MLA norms' r_q and r_kv (its "+ 1" terms), MTP's 3h of norms, and core attention halved
     * for the causal mask; Megatron-Bridge's (flop_utils.py) is the same but for the sliding
     * windows it counts (bridge_core_layers). */
    double mla_norms = m->kv_lora_rank ? (double)m->q_lora_rank + m->kv_lora_rank : 0;
    f->megatron = 2 * (weights + layers * mla_norms + D * 3 * h) +
                  bridge_core_layers(m, s, layers) * s * (qk + v) + f->logits;
}
