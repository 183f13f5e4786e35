/*
 * A layer evaluation (schedule, per-step costs) folded into the totals the composition reads.
 * spsim_evaluate() and the sweep both compose from this summary, so a sweep row and a query
 * of the same configuration are the same arithmetic.
 */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "eval.h"
#include "moe.h"

static void
block_totals(const struct spsim_block_eval *b, struct spsim_block_totals *t)
{
    t->saved_bytes = b->saved_bytes;
    t->fwd_s = b->fwd_s;
    t->bwd_s = b->bwd_s;
    t->recompute_s = b->recompute_s;
    t->fwd_compute_s = b->fwd_compute_s;
    t->bwd_compute_s = b->bwd_compute_s;
    t->recompute_compute_s = b->recompute_compute_s;
    t->wgrad_compute_s = b->wgrad_compute_s;
    t->tp_exposed_s = b->tp_exposed_s;
    t->recompute_comm_s = b->recompute_comm_s;
    t->recompute_exposed_s = b->recompute_exposed_s;
    /* Steps without a collective cost 0, and x + 0 = x: leaving them out changes no sum. */
    t->ncomm = 0;
    for (uint32_t i = 0; i < b->sched.nsteps; i++)
        if (b->cost[i].comm_s != 0 && b->sched.steps[i].op->kind < SPSIM_OPK_CP &&
            t->ncomm < SPSIM_BLOCK_MAX_COMM)
            t->comm_s[t->ncomm++] = b->cost[i].comm_s;
    t->cp_exposed_s = b->cp_exposed_s;
    t->moe_aux_exposed_s = b->moe_aux_exposed_s;
    t->cp_recompute_comm_s = b->cp_recompute_comm_s;
    t->cp_recompute_exposed_s = b->cp_recompute_exposed_s;
    t->cp_comm_s = b->cp_comm_s;
    t->cp_bwd_wire_bytes = b->cp_bwd_wire_bytes;
    memcpy(t->cp_wire, b->cp_wire, sizeof(t->cp_wire));
    t->cp_network = b->cp_network;
    t->ep_exposed_s = b->ep_exposed_s;
    t->ep_comm_s = b->ep_comm_s;
    t->ep_bwd_wire_bytes = b->ep_bwd_wire_bytes;
    memcpy(t->ep_wire, b->ep_wire, sizeof(t->ep_wire));
    t->ep_network = b->ep_network;
    memcpy(t->ep_pair_exposed_s, b->ep_pair_exposed_s, sizeof(t->ep_pair_exposed_s));
    t->fwd_flops = b->fwd_flops;
    t->bwd_flops = b->bwd_flops;
    t->recompute_flops = b->recompute_flops;
    t->tp_bwd_wire_bytes = b->tp_bwd_wire_bytes;
    memcpy(t->tp_wire, b->tp_wire, sizeof(t->tp_wire));
    t->tp_regather_wire = b->tp_regather_wire;
    t->message_bytes = b->block.message_bytes;
    memcpy(t->launches, b->launches, sizeof(t->launches));
    t->host_exposed_s = b->host_exposed_s;
}

/* The layer's collectives in schedule order, as comm.per_layer reports them. */
static void
layer_collectives(const struct spsim_hardware *hw, const struct spsim_block_eval *L,
                  struct spsim_layer_summary *s)
{
    s->ncoll = 0;
    for (uint32_t i = 0; i < L->sched.nsteps; i++) {
        const struct spsim_step *st = &L->sched.steps[i];
        if (st->coll == SPSIM_COLL_NONE || s->ncoll >= SPSIM_MAX_LAYER_COLLECTIVES)
            continue;
        struct spsim_collective_entry *e = &s->coll[s->ncoll++];
        e->phase = st->phase;
        e->op = st->coll;
        e->site = st->coll_site;
        e->message_bytes = st->message_bytes;
        e->wire_bytes_per_rank = st->wire_bytes;
        e->group_size = st->group_size;
        e->tier = L->cost[i].coll.tier;
        if (!hw)
            e->tier = st->group_size > 1 ? SPSIM_TIER_NVLINK : SPSIM_TIER_LOCAL;
        e->overlap = st->overlap;
        e->time_s = L->cost[i].comm_s;
        e->exposed_s = L->cost[i].exposed_comm_s;
    }
}

/*
 * CP's transient buffers in one layer's attention (TE context_parallel.py), with
 * KV_blk = b·(s/c)·(k + v)·2 B (k = v = kv·d/t; MLA k = n·(d_qk + d_r)/t, v = n·d_v/t): p2p keeps
 * two receive buffers of [KV, dKV] in backward (p2p_comm_buffers), 4·KV_blk; all_gather the
 * gathered K and V and the full dK, dV before the ReduceScatter, 2·c·KV_blk; a2a the exchanged Q,
 * K, V, 2·b·(s/c)·(a·d/t + k + v) B.
 */
static uint64_t
cp_working_bytes(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg, bool *ok)
{
    if (cfg->cp <= 1)
        return 0;
    uint64_t tokens = spsim_mul(cfg->s / cfg->cp, cfg->b, ok);
    /* K and V channels per token on the rank: 2·kv·d/t, or MLA's n·(d_qk + d_r + d_v)/t. */
    uint64_t kvw = m->kv_lora_rank
                       ? (uint64_t)m->heads * ((uint64_t)m->head_dim + m->v_head_dim) / cfg->t
                       : 2 * (uint64_t)m->kv_heads * m->head_dim / cfg->t;
    uint64_t blk = spsim_mul3(tokens, 2, kvw, ok);
    switch (cfg->cp_comm) {
    case SPSIM_CP_ALL_GATHER:
        return spsim_mul3(blk, 2, cfg->cp, ok);
    case SPSIM_CP_A2A:
        return spsim_mul3(tokens, 2, (uint64_t)m->heads * m->head_dim / cfg->t + kvw, ok);
    default:
        return spsim_mul(blk, 4, ok);
    }
}

/*
 * The cross-entropy's peak beside the fp32 logits the output block keeps (layer.c): Megatron-LM
 * @d98e8a64 gpt_model.py:807 holds the output layer's 16-bit logits [s/c, b, v/t] while
 * compute_language_model_loss (:839, language_module.py:200) runs; vocab_parallel_cross_entropy
 * copies them to fp32 (tensor_parallel/cross_entropy.py:25 .float()), works in place on the copy
 * (:42, :62, :77) and saves it as the softmax (:181). Both are live until the forward returns,
 * 2 + 4 B per logit; the backward's gradient, cast back to the 16-bit input's dtype beside the
 * fp32 softmax it is computed in (an fp32 one reaching the output layer is cast there,
 * tensor_parallel/layers.py:644), is the same 2 B. The logits take the output layer's input
 * dtype (--output-logit-dtype unset, arguments.py:3075), 16-bit for every training dtype: the
 * output layer is tensor_parallel.ColumnParallelLinear, outside FP8 (gpt_model.py:272).
 * The fused losses (layer.c add_cross_entropy): TE up to 2.17 writes its gradient into the
 * logits it keeps (nothing beside them); TE 2.18 keeps an fp32 gradient beside the 16-bit
 * logits, as the unfused loss its softmax; the native fusion's compiled functions return the
 * exponentials as a new fp32 tensor while calculate_logits_max's fp32 copy is still live
 * (fused_cross_entropy.py:93-119): 2 + 4 B beside the kept 4. Measured: Megatron-LM's
 * gpt3_mcore_te_tp2_pp2(_resume_torch_dist)_cross_entropy_loss_fusion cases peak 409.4 and
 * 417.3 MB above their unfused cases on DGX H100 (golden values, d98e8a64); 4 B a logit is
 * 413.1 MB there (4,096 tokens, 25,216 logits each).
 */
static uint64_t
logits_working_bytes(const struct spsim_layer_config *cfg, uint64_t padded_vocab, bool *ok)
{
    uint64_t t = cfg->t ? cfg->t : 1, c = cfg->cp > 1 ? cfg->cp : 1;
    uint64_t per_logit = cfg->cross_entropy == 1 + SPSIM_CE_TE_INPLACE ? 0
                         : cfg->cross_entropy == 1 + SPSIM_CE_NATIVE   ? 6
                                                                       : 2;
    return spsim_mul3(spsim_mul(cfg->s / c, cfg->b, ok), padded_vocab / t, per_logit, ok);
}

/* A hybrid model's kinds (struct spsim_layer_summary): totals, parameters and FP8 weights per
 * kind on one rank; an 'E' layer's routed experts are params_layer_experts, as a MoE model's.
 * With SP and t > 1 the latent projections, duplicated over TP, join the router's TP gradient
 * all-reduce. */
static void
hybrid_summary(const struct spsim_model_shape *m, const struct spsim_layer_eval *le, bool non_tn,
               struct spsim_layer_summary *s, bool *ok)
{
    uint32_t t = le->cfg.t;
    s->hybrid_primary = le->hybrid_primary;
    s->hybrid_kinds = le->hybrid_kinds;
    s->act_no_recompute = le->hybrid_no_recompute;
    for (int k = SPSIM_LAYER_MAMBA; k < SPSIM_LAYER_KIND_COUNT; k++) {
        if (!(le->hybrid_kinds >> k & 1))
            continue;
        const struct spsim_block_eval *b =
            k == (int)le->hybrid_primary ? &le->layer : &le->hybrid[k];
        if (k != (int)le->hybrid_primary)
            block_totals(b, &s->hybrid[k]);
        s->params_hybrid[k] = spsim_hybrid_layer_parameters(m, (enum spsim_layer_kind)k, t, ok);
        s->fp8_weights_hybrid[k] = spsim_layer_fp8_weights(&b->block, ok);
        s->fp8_weight_bytes_hybrid[k] = spsim_layer_fp8_weight_bytes(&b->block, non_tn, ok);
        s->host_bound = s->host_bound || b->host_exposed_s != 0;
    }
    if (le->hybrid_kinds >> SPSIM_LAYER_MOE & 1) { /* its layer's parameters hold its experts */
        s->params_layer_experts = spsim_mul(
            m->experts / le->cfg.ep, spsim_expert_parameters_per_rank(m, le->cfg.etp, ok), ok);
        s->params_hybrid[SPSIM_LAYER_MOE] =
            spsim_add(s->params_hybrid[SPSIM_LAYER_MOE], s->params_layer_experts, ok);
        if (le->cfg.sp && t > 1)
            s->params_router_tp_synced =
                spsim_router_parameters(m) + spsim_moe_latent_parameters(m);
    }
    s->params_layer = s->params_hybrid[le->hybrid_primary];
}

void
spsim_layer_summarize(const struct spsim_model *model, const struct spsim_hardware *hw,
                      const struct spsim_layer_eval *le, struct spsim_layer_summary *s)
{
    const struct spsim_model_shape *m = &model->shape;
    uint32_t t = le->cfg.t;
    /* Everything but the collectives' list, of which layer_collectives writes the ncoll
     * entries read (3 kB of the summary's 9 kB: a fresh point cleared it for nothing). */
    memset(s, 0, offsetof(struct spsim_layer_summary, coll));
    memset((char *)(s->coll + SPSIM_MAX_LAYER_COLLECTIVES), 0,
           sizeof(*s) - offsetof(struct spsim_layer_summary, coll) - sizeof(s->coll));
    s->cfg = le->cfg;
    s->tp_group = le->tp_group;
    s->padded_vocab = le->padded_vocab;
    block_totals(&le->layer, &s->layer);
    block_totals(&le->embedding, &s->embedding);
    block_totals(&le->output, &s->output);
    memcpy(s->act_modes, le->act_modes, sizeof(s->act_modes));
    s->act_no_recompute = le->act_no_recompute;
    s->offload_bytes = le->offload_bytes;
    bool ok = true;
    s->params_layer = spsim_layer_parameters_per_rank(m, t, &ok);
    s->params_embedding = spsim_embedding_parameters_per_rank(m, le->padded_vocab, t, &ok);
    s->params_output = spsim_output_parameters_per_rank(m, le->padded_vocab, t, &ok);
    s->params_total = spsim_model_parameters(model, t);
    s->params_active = spsim_model_active_parameters(model, t);
    s->cp_working_bytes = cp_working_bytes(m, &le->cfg, &ok);
    s->logits_working_bytes = logits_working_bytes(&le->cfg, le->padded_vocab, &ok);
    if (m->kv_lora_rank && le->cfg.sp && t > 1) { /* dp_time.c mla_grad_sync */
        struct spsim_param_split attn;
        spsim_attention_parameters(m, &attn, &ok);
        s->params_tp_synced = attn.replicated;
    }
    if (le->cfg.moe)
        s->params_layer = spsim_moe_layer_parameters(m, t, le->cfg.ep, le->cfg.etp,
                                                     &s->params_layer_experts, &ok);
    if (le->cfg.moe && le->cfg.sp && t > 1)
        s->params_router_tp_synced = spsim_router_parameters(m);
    s->has_dense = le->has_dense && model->moe_layers < m->layers;
    if (s->has_dense) {
        block_totals(&le->dense, &s->dense);
        s->params_dense_layer = spsim_layer_parameters_per_rank(m, t, &ok);
        /* Full recomputation rebuilds either kind of layer: the larger is live at peak. */
        s->act_no_recompute = spsim_max_u64(s->act_no_recompute, le->dense_no_recompute);
    }
    if (m->mtp_layers) {
        block_totals(&le->mtp, &s->mtp);
        s->params_mtp = spsim_mtp_extra_parameters_per_rank(m, t, &ok);
    }
    s->fp8_weight_bytes_layer =
        spsim_layer_fp8_weight_bytes(&le->layer.block, spsim_te_non_tn_fp8(hw), &ok);
    s->fp8_weights_layer = spsim_layer_fp8_weights(&le->layer.block, &ok);
    s->fp8_gemms_layer = 0;
    for (uint32_t i = 0; i < le->layer.block.nops; i++) {
        const struct spsim_op *op = &le->layer.block.ops[i];
        s->fp8_gemms_layer += op->fp8;
        if (op->adapter && op->kind == SPSIM_OPK_GEMM) /* its weight: k·n on this rank */
            s->params_lora_layer =
                spsim_add(s->params_lora_layer, spsim_mul(op->k, op->n, &ok), &ok);
    }
    spsim_muon_block(m, &le->layer.block, s->muon_layer);
    if (s->has_dense)
        spsim_muon_block(m, &le->dense.block, s->muon_dense);
    if (m->mtp_layers)
        spsim_muon_block(m, &le->mtp.block, s->muon_mtp);
    s->params_ok = ok;
    layer_collectives(hw, &le->layer, s);
    const uint32_t *n = le->layer.launches;
    s->layer_forward_launches = n[SPSIM_PHASE_FORWARD];
    s->layer_backward_launches = n[SPSIM_PHASE_BACKWARD] + n[SPSIM_PHASE_RECOMPUTE];
    s->host_bound = le->layer.host_exposed_s != 0 || le->embedding.host_exposed_s != 0 ||
                    le->output.host_exposed_s != 0 || le->dense.host_exposed_s != 0 ||
                    le->mtp.host_exposed_s != 0;
    if (m->hybrid_pattern) {
        hybrid_summary(m, le, spsim_te_non_tn_fp8(hw), s, &ok);
        s->params_ok = s->params_ok && ok;
    }
}
