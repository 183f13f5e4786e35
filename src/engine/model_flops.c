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
        /* training.py's gate_projection_size: the output gate's h·q with linear_qkv. */
        double gate = m->attention_output_gate ? q : 0;
        *weights = h * (q + 2 * kv + gate) + q * h;
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

/* A hybrid model's layers of kind k in the decoder and the D MTP depths (Megatron-Bridge's
 * get_hybrid_layer_counts over the unified pattern, whose MTP part repeats once per depth). */
static double
hybrid_layers(const struct spsim_model_shape *m, enum spsim_layer_kind k)
{
    return spsim_hybrid_count(m->hybrid_pattern, k) +
           (double)m->mtp_layers * spsim_hybrid_count(m->mtp_pattern, k);
}

/*
 * A hybrid model's forward FLOPs per token by kind.
 * model: 2 FLOPs per weight one token passes through (Mamba's in_proj and out_proj, the
 *   attention's projections, an MLP's, the top-k experts' at their width, the shared experts', a
 *   latent MoE's two projections, each MTP depth's eh_proj), core attention 4·s·q (QKᵀ and
 *   ·V) without causal masking as for every model here, and the Mamba mixer's own work as its
 * kernels do it: the depthwise conv 2·d_conv·(d + 2GN) and the SSD chunked scan's matmuls 2·Q·N·G +
 * 4·N·d + 2·Q·d (layer.c add_ssd_scan). megatron: Megatron-Bridge's hybrid_flops
 * (training/utils/flop_utils.py at 067f987, the same as Megatron-LM training.py at d98e8a6): per
 * Mamba layer 2h(2·d_in + 2GN + H) + 7·d_in·N + 2·d_in·h with d_in = 2h whatever H·P (its "d_in = 2
 * * hidden_size"), attention 4h·p·(h + h·g/n) + 2h·p·s (causal), an MLP 4·f·h, an MoE layer
 * 4·h·f_e·k + 4·h·f_s, with a latent r 4·r·f_e·k + 4·h·r + 4·h·f_s (the routed ones on r), the
 * logits 2hV(1 + D), and no eh_proj nor norms. A Gated DeltaNet layer: its GEMMs, the
 * convolution 2·K·(2qk + v) and the chunked kernel's matmuls per value head and token,
 * 6·C·d_k + 4·C·d_v + 6·d_k·d_v (layer.c add_gdn_kernel); Megatron-LM training.py
 * gdn_layer_flops (d98e8a6): 2·(h·(2qk + 2v + 2H_v) + K·(2qk + v) + 4·H_v·d_v² + h·v), its
 * recurrent "KK^T, VK^T, S(a(I-bKK^T)), and SQ".
 */
static void
gdn_flops_per_token(const struct spsim_model_shape *m, double *model, double *megatron)
{
    double h = m->hidden, Hv = m->gdn_value_heads, dk = m->gdn_key_head_dim;
    double dv = m->gdn_value_head_dim, K = m->gdn_conv, C = 64; /* gdn.py chunk_size */
    double qk = m->gdn_key_heads * dk, v = Hv * dv, in = 2 * qk + 2 * v + 2 * Hv;
    *model =
        2 * (h * in + v * h) + 2 * K * (2 * qk + v) + Hv * (6 * C * dk + 4 * C * dv + 6 * dk * dv);
    *megatron = 2 * (h * in + K * (2 * qk + v) + 4 * Hv * dv * dv + h * v);
}

static void
hybrid_flops_per_token(const struct spsim_model_shape *m, double s, double vpad,
                       struct spsim_flops_per_token *f)
{
    double h = m->hidden, H = m->mamba_heads, d = H * m->mamba_head_dim, N = m->mamba_state_dim;
    double GN = (double)m->mamba_groups * N, Q = m->mamba_chunk, D = m->mtp_layers;
    double q = (double)m->heads * m->head_dim, kv = (double)m->kv_heads * m->head_dim;
    double r = m->mlp == SPSIM_MLP_SWIGLU ? 3 : 2, lat = m->moe_latent ? m->moe_latent : h;
    double nM = hybrid_layers(m, SPSIM_LAYER_MAMBA), nA = hybrid_layers(m, SPSIM_LAYER_ATTENTION);
    double nF = hybrid_layers(m, SPSIM_LAYER_MLP), nE = hybrid_layers(m, SPSIM_LAYER_MOE);
    double k = m->experts_per_token, fe = m->expert_ffn_hidden, fs = m->shared_expert_ffn_hidden;
    double mamba_w = h * (2 * d + 2 * GN + H) + d * h;
    double moe_w = r * lat * fe * k + r * h * fs + (m->moe_latent ? 2 * h * lat : 0);
    double gate = m->attention_output_gate ? q : 0; /* the attention's output gate */
    double weights = nM * mamba_w + nA * (h * (q + 2 * kv + gate) + q * h) +
                     nF * r * h * m->ffn_hidden + nE * moe_w + D * 2 * h * h;
    double scan = 2 * m->mamba_conv * (d + 2 * GN) + 2 * Q * GN + 4 * N * d + 2 * Q * d;
    f->logits = 2 * h * vpad * (1 + D);
    f->model = 2 * weights + nM * scan + nA * 4 * s * q + f->logits;
    double din = 2 * h, sf = r / 2; /* Bridge's swiglu scale 3/2, else 1 */
    double bridge_moe = m->moe_latent ? 4 * lat * fe * k * sf + 4 * h * lat : 4 * h * fe * k * sf;
    double nG = hybrid_layers(m, SPSIM_LAYER_GDN), gdn = 0, gdn_megatron = 0;
    if (nG > 0)
        gdn_flops_per_token(m, &gdn, &gdn_megatron);
    f->model += nG * gdn;
    f->megatron = nG * gdn_megatron +
                  nM * (2 * h * (2 * din + 2 * GN + H) + 7 * din * N + 2 * din * h) +
                  nA * (4 * h * (q + kv) + 2 * q * s) + nF * 4 * m->ffn_hidden * h * sf +
                  nE * (bridge_moe + 4 * h * fs * sf) + f->logits;
}

void
spsim_model_flops_per_token(const struct spsim_model *model, double s, double vpad,
                            struct spsim_flops_per_token *f)
{
    const struct spsim_model_shape *m = &model->shape;
    if (m->hybrid_pattern) {
        hybrid_flops_per_token(m, s, vpad, f);
        return;
    }
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
