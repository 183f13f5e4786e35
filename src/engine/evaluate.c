/* Composition: a result from a checked configuration and its layer summary (memory, then
 * communication, then time: memory.c, comm.c, pipeline_time.c), the model and hardware FLOPs
 * and the throughput, and spsim_evaluate. */
#include "config.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "compose.h"
#include "pp_schedule.h"

const char *
spsim_act_mode_name(enum spsim_act_mode mode)
{
    static const char *const names[SPSIM_MODE_COUNT] = {
        "none", "tp", "tp_sp", "tp_selective", "tp_sp_selective", "full"};
    return (unsigned)mode < SPSIM_MODE_COUNT ? names[mode] : "?";
}

const char *
spsim_phase_name(enum spsim_phase phase)
{
    switch (phase) {
    case SPSIM_PHASE_FORWARD:
        return "forward";
    case SPSIM_PHASE_BACKWARD:
        return "backward";
    case SPSIM_PHASE_RECOMPUTE:
        return "recompute";
    }
    return "?";
}

const char *
spsim_tier_name(enum spsim_tier tier)
{
    switch (tier) {
    case SPSIM_TIER_LOCAL:
        return "local";
    case SPSIM_TIER_NVLINK:
        return "nvlink";
    case SPSIM_TIER_NETWORK:
        return "network";
    case SPSIM_TIER_HIERARCHICAL:
        return "hierarchical";
    }
    return "?";
}

const char *
spsim_overlap_name(enum spsim_overlap overlap)
{
    switch (overlap) {
    case SPSIM_OVERLAP_NONE:
        return "none";
    case SPSIM_OVERLAP_DGRAD:
        return "dgrad";
    case SPSIM_OVERLAP_WGRAD:
        return "wgrad";
    case SPSIM_OVERLAP_ATTENTION:
        return "attention";
    case SPSIM_OVERLAP_RING_EXCHANGE:
        return "ring_exchange";
    case SPSIM_OVERLAP_PIPELINE:
        return "pipeline";
    }
    return "?";
}

/*
 * The other named model-FLOPs formulas, from the 2022 formula's per-token sum: Megatron-LM's
 * current one (training.py num_floating_point_operations at d98e8a6: 6 FLOPs per weight and
 * token, causal attention halved, Σs²·6·q per layer, i.e. 6·s·q less per layer-token than the
 * 2022 paper's 12·s·q), and Narayanan et al. 2021's 96·B·s·L·h²·(1 + s/(6h) + V/(16Lh)), which
 * counts the recomputed forward of every layer (4 passes instead of 3) but not of the logits.
 */
static void
model_flops_named(const struct spsim_model_shape *m, const struct spsim_layer_summary *le,
                  const struct shape *x, const struct spsim_parallel *par, double per_token,
                  struct spsim_time_report *tr)
{
    double s = (double)le->cfg.s, tokens = (double)par->gbs * s;
    double sa = le->cfg.attn_len ? (double)le->cfg.attn_len : s;
    double q = (double)m->heads * m->head_dim, logits = 2.0 * m->hidden * (double)le->padded_vocab;
    tr->model_flops_megatron = 3.0 * tokens * (per_token - x->L * 2.0 * sa * q);
    tr->model_flops_narayanan2021 = tokens * (4.0 * (per_token - logits) + 3.0 * logits);
    if (!par->lora_rank)
        return;
    /* LoRA (Megatron-Bridge flop_utils.py transformer_flops, its LoRA branch: model_flops_frozen
     * · 2/3 + model_flops_unfrozen): the frozen weights' FLOPs forward and data gradient only
     * (2/3 of 3 passes), core attention's all three, not halved for the causal mask (its
     * 12·L·h²·Σs²/h); the adapters' own are not counted. Bridge reports this for its LoRA runs,
     * so both counts take it. */
    double attn = x->L * 4.0 * sa * q;
    tr->model_flops = tokens * (2.0 * (per_token - attn) + 3.0 * attn);
    tr->model_flops_megatron = tr->model_flops;
}

/* The three model-FLOPs formulas for a model with MoE, MLA or MTP layers, layer kind by kind. */
static void
sparse_model_flops(const struct spsim_model *model, const struct spsim_layer_summary *le,
                   const struct spsim_parallel *par, struct spsim_time_report *tr)
{
    struct spsim_flops_per_token f;
    double s = (double)le->cfg.s, tokens = (double)par->gbs * s;
    /* Packed sequences: attention over the sub-sequences (finetune.c), s is the row's tokens. */
    spsim_model_flops_per_token(model, le->cfg.attn_len ? (double)le->cfg.attn_len : s,
                                (double)le->padded_vocab, &f);
    tr->model_flops = 3.0 * tokens * f.model;
    tr->model_flops_megatron = 3.0 * tokens * f.megatron;
    tr->model_flops_narayanan2021 = tokens * (4.0 * (f.model - f.logits) + 3.0 * f.logits);
}

/* A hybrid model's executed layer FLOPs per micro-batch on one rank: each kind's layers of the
 * decoder and of the D MTP depths. */
static double
hybrid_hardware_flops(const struct spsim_model_shape *m, const struct spsim_layer_summary *le)
{
    double sum = 0;
    for (int k = SPSIM_LAYER_MAMBA; k < SPSIM_LAYER_KIND_COUNT; k++) {
        const struct spsim_block_totals *b = spsim_hybrid_totals(le, (enum spsim_layer_kind)k);
        double n =
            spsim_hybrid_count(m->hybrid_pattern, (enum spsim_layer_kind)k) +
            (double)m->mtp_layers * spsim_hybrid_count(m->mtp_pattern, (enum spsim_layer_kind)k);
        if (n > 0)
            sum += n * (b->fwd_flops + b->bwd_flops + b->recompute_flops);
    }
    return sum;
}

static void
compose_flops(const struct spsim_model *model, const struct spsim_parallel *par,
              const struct spsim_layer_summary *le, const struct shape *x, uint32_t gpus,
              const double peak[2], uint64_t replayed_layers, struct spsim_time_report *tr)
{
    const struct spsim_model_shape *m = &model->shape;
    double h = m->hidden, d = m->head_dim, q = (double)m->heads * d, kv = (double)m->kv_heads * d;
    double gate = m->mlp == SPSIM_MLP_SWIGLU ? 2 : 1, s = (double)le->cfg.s;
    /* Packed THD rows: each token attends within its sub-sequence, Σs_i²/Σs_i keys on average
     * (Megatron-Bridge flop_utils.py core_attn_seq_factor in place of the sequence length). */
    double sa = le->cfg.attn_len ? (double)le->cfg.attn_len : s;
    /* Model FLOPs (paper Appendix A, Eq. 7, generalised): per token and layer, 2 FLOPs per
     * weight of QKV, projection, FC1 (gate and up for SwiGLU) and FC2, plus 4·s·q for QKᵀ and
     * attention·V without causal masking; 2·h·v for the logits; backward twice forward. For
     * the GPT layer: 72·B·L·s·h²·(1 + s/(6h) + v/(12hL)). */
    double per_token = x->L * (2.0 * (h * (q + 2 * kv) + q * h + h * m->ffn_hidden * gate +
                                      (double)m->ffn_hidden * h) +
                               4.0 * sa * q) +
                       2.0 * h * (double)le->padded_vocab;
    tr->model_flops = 3.0 * (double)par->gbs * s * per_token;
    model_flops_named(m, le, x, par, per_token, tr); /* LoRA's count too */
    if ((m->experts | m->kv_lora_rank | m->mtp_layers | m->window) || m->hybrid_pattern)
        sparse_model_flops(model, le, par, tr);
    /* Hardware FLOPs: what the schedule executes (recomputation, flash attention's causal
     * half and backward recomputation), summed over the TP group and all micro-batches. */
    double passes = (double)par->gbs / par->mbs;
    const struct spsim_block_totals *L = &le->layer, *O = &le->output;
    double layer = L->fwd_flops + L->bwd_flops + L->recompute_flops;
    double output = O->fwd_flops + O->bwd_flops;
    double layers = x->L * layer;
    if (x->mixed) /* an MoE model's dense layers */
        layers = (x->L - x->dense_total) * layer +
                 x->dense_total *
                     (le->dense.fwd_flops + le->dense.bwd_flops + le->dense.recompute_flops);
    if (par->recompute == SPSIM_RECOMPUTE_FULL && replayed_layers != x->lps)
        layers = x->L * (L->fwd_flops + L->bwd_flops) +
                 (double)(x->p * replayed_layers) * L->recompute_flops;
    if (x->hybrid) /* every kind's layers, the D MTP depths' with them */
        layers = hybrid_hardware_flops(m, le);
    if (le->params_mtp && x->hybrid) {
        const struct spsim_block_totals *mb = &le->mtp;
        output += m->mtp_layers * (O->fwd_flops + O->bwd_flops + mb->fwd_flops + mb->bwd_flops);
    } else if (le->params_mtp) { /* the D depths (mtp_time) */
        const struct spsim_block_totals *ml = mtp_layer(le, x), *mb = &le->mtp;
        layers += m->mtp_layers * (ml->fwd_flops + ml->bwd_flops + ml->recompute_flops);
        output += m->mtp_layers * (O->fwd_flops + O->bwd_flops + mb->fwd_flops + mb->bwd_flops);
    }
    tr->hardware_flops = passes * x->t * x->c * (layers + output);
    double iter = tr->iteration_s;
    tr->tokens_per_s = (double)par->gbs * s / iter;
    tr->tokens_per_s_per_gpu = tr->tokens_per_s / gpus;
    /* One stated peak, the dense BF16 one, whatever the GEMMs' dtype: what Megatron's and
     * Megatron-Bridge's model TFLOP/s per GPU are compared with (Bridge train_utils.py logs
     * "MODEL_TFLOP/s/GPU", Megatron training.py "throughput per GPU (TFLOP/s/GPU)", neither per
     * dtype), so that MFU ranks as throughput does; and against the dtype's own peak. */
    tr->mfu = tr->model_flops / (iter * gpus * peak[0]);
    tr->hfu = tr->hardware_flops / (iter * gpus * peak[0]);
    tr->mfu_dtype = tr->model_flops / (iter * gpus * peak[1]);
    tr->hfu_dtype = tr->hardware_flops / (iter * gpus * peak[1]);
    tr->tflops_per_gpu = tr->model_flops / (iter * gpus) / 1e12;
    tr->tflops_per_gpu_megatron = tr->model_flops_megatron / (iter * gpus) / 1e12;
    tr->tflops_per_gpu_narayanan2021 = tr->model_flops_narayanan2021 / (iter * gpus) / 1e12;
    tr->hardware_tflops_per_gpu = tr->hardware_flops / (iter * gpus) / 1e12;
    tr->nvlink_utilisation = tr->nvlink_busy_s / iter;
    tr->network_utilisation = tr->network_busy_s / iter;
}

/* The pipeline's shape: its stage plan and the most layers a rank and a chunk build. */
/* The in-flight layers of the first, a middle and the last rank under a schedule other than
 * Megatron's (pp_schedule.c): its micro-batches in flight times the rank's built layers per
 * chunk. */
static void
schedule_held(struct shape *x)
{
    uint64_t rank[3] = {0, x->p > 2 ? 1 : 0, x->p - 1}; /* first, a middle one, last */
    for (int i = 0; i < 3; i++)
        x->held[i] =
            spsim_pp_schedule_inflight(x->schedule, x->p, rank[i], x->micro) * x->built[i] / x->v;
}

/* An even split (the sweep's common case), as spsim_stage_plan_make resolves it, without its
 * checks (spsim_parallel_check ran them): every rank L/p layers, the in-flight closed forms. */
static bool
even_shape(const struct spsim_model_shape *m, const struct spsim_parallel *par,
           struct spsim_stage_plan *plan, struct shape *x)
{
    if (par->first_stage_layers || par->last_stage_layers || par->account_embedding ||
        par->account_loss || par->pipeline_layout)
        return false;
    /* Field by field: the layout table (4 kB) stays untouched. */
    plan->p = par->pp;
    plan->v = par->vpp;
    plan->g = par->microbatch_group ? par->microbatch_group : par->pp;
    plan->even = true;
    plan->emb = plan->loss = false;
    plan->nlayout = 0;
    plan->bf16_start = plan->bf16_end = 0;
    plan->first = plan->middle = plan->last = m->layers / par->pp;
    x->lps = plan->first;
    x->lpc = x->lps / x->v;
    for (uint64_t i = 0, r; i < 3; i++) {
        r = i == 2 ? x->p - 1 : i == 1 && x->p > 2 ? 1 : 0;
        x->built[i] = x->lps;
        x->held[i] =
            x->v == 1 ? spsim_min_u64(x->p - r, x->micro) * x->lps
                      : spsim_min_u64(2 * (x->p - r - 1) + (x->v - 1) * x->p + 1, x->micro * x->v) *
                            x->lpc;
    }
    return true;
}

static int
make_shape(const struct spsim_model_shape *m, const struct spsim_parallel *par,
           struct spsim_stage_plan *plan, struct shape *x, struct spsim_error *err)
{
    spsim_clear(x, sizeof(*x));
    x->L = m->layers;
    x->p = par->pp;
    x->v = par->vpp;
    x->d = par->dp;
    x->t = par->tp;
    x->micro = par->gbs / ((uint64_t)par->mbs * par->dp);
    x->c = par->cp;
    x->dc = x->d * x->c;
    x->R = par->dist_opt_instances > 1 ? par->dist_opt_instances : 1;
    x->di = x->dc / x->R;
    x->plan = plan;
    if (even_shape(m, par, plan, x))
        return SPSIM_OK;
    int rc = spsim_stage_plan_make(m, par, plan, err);
    if (rc != SPSIM_OK)
        return rc;
    x->v = plan->v;
    x->lpc = spsim_stage_max_chunk_layers(plan);
    const uint32_t at[3] = {0, x->p > 2 ? 1 : 0, (uint32_t)x->p - 1};
    for (int i = 0; i < 3; i++) {
        x->built[i] = spsim_stage_rank_layers(plan, at[i]);
        x->held[i] = spsim_stage_inflight_layers(plan, at[i], x->micro);
    }
    for (uint32_t i = 0, n = spsim_stage_ncandidates(plan); i < n; i++)
        x->lps =
            spsim_max_u64(x->lps, spsim_stage_rank_layers(plan, spsim_stage_candidate(plan, i)));
    return SPSIM_OK;
}

int
spsim_compose_into(const struct spsim_model *model, const struct spsim_hardware *hw,
                   const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                   uint32_t warnings, struct spsim_coll_memo *memo, bool per_layer,
                   struct spsim_result *out, struct spsim_error *err)
{
    const struct spsim_model_shape *m = &model->shape;
    struct spsim_result *r = out;
    /* comm.per_layer (a kilobyte) is cleared only when it is filled in. */
    size_t list = offsetof(struct spsim_result, comm.per_layer);
    size_t after = list + sizeof(r->comm.per_layer);
    spsim_clear(r, list);
    spsim_clear((char *)r + after, sizeof(*r) - after);
    spsim_copy(&r->config, par, sizeof(r->config));
    r->config.seq = (uint32_t)le->cfg.s;
    r->config.flash_attn = le->cfg.flash ? 1 : 0;
    r->config.recompute_modules = le->cfg.rmods; /* resolved: Megatron's default for selective */
    r->gpus = par->tp * par->cp * par->pp * par->dp;
    r->flash_attention = le->cfg.flash;
    r->grad_reduce_in_fp32 = grad_bytes(par) == 4;
    r->config.grad_reduce_in_fp32 = r->grad_reduce_in_fp32;
    r->config.zero = zero_level(par); /* the distributed optimizer is level 1 */
    r->padded_vocab = le->padded_vocab;
    r->warnings = warnings;
    if (per_layer) {
        r->comm.per_layer_count = le->ncoll;
        memset(r->comm.per_layer, 0, sizeof(r->comm.per_layer));
        memcpy(r->comm.per_layer, le->coll, le->ncoll * sizeof(le->coll[0]));
    }
    struct spsim_stage_plan plan;
    struct shape x;
    int rc = make_shape(m, par, &plan, &x, err);
    if (rc != SPSIM_OK)
        return rc;
    r->config.vpp = plan.v;
    x.model = model;
    x.edp = x.dc;
    x.edi = x.di;
    if (m->experts) { /* the dense path pays this one branch */
        x.moe = true;
        x.mixed = le->has_dense || m->hybrid_pattern;
        x.edp = spsim_moe_edp(par);
        x.edi = x.edp / x.R; /* check_hsdp: R divides edp */
        x.ep_group = par->moe_dispatcher == SPSIM_MOE_ALLTOALL
                         ? par->ep
                         : (uint64_t)par->ep * spsim_moe_etp(par);
        x.dense_total = m->layers - model->moe_layers;
        r->config.etp = spsim_moe_etp(par);
    } else if (m->hybrid_pattern) {
        x.mixed = true;
    } else if (le->has_dense) { /* first_last_layers_bf16 (bf16_layers.c) */
        x.mixed = x.bf16 = true;
        plan.bf16_start = par->bf16_layers_start;
        plan.bf16_end = par->bf16_layers_end;
        x.dense_total = spsim_bf16_layers_total(m->layers, plan.bf16_start, plan.bf16_end);
    }
    x.hybrid = m->hybrid_pattern != NULL;
    x.schedule = par->pp_schedule;
    if (x.schedule != SPSIM_PP_SCHEDULE_MEGATRON)
        schedule_held(&x);
    if (par->overlap_grad_reduce && x.dc > 1) /* resolved: Megatron's default bucket size */
        r->config.ddp_bucket_size = spsim_bucket_params(par, &x);
    bool ok = true;
    rc = spsim_compose_memory(memo, m, hw, par, le, &x, &r->memory, &ok);
    if (rc == SPSIM_OK)
        spsim_compose_comm(hw, par, le, &x, m->hidden, &r->memory, &r->comm, &ok);
    if (rc == SPSIM_OK && !ok)
        return spsim_fail(err, SPSIM_ERANGE,
                          "parallel config: a byte count of this configuration does not fit in "
                          "64 bits (reduce seq, mbs or gbs)");
    if (rc == SPSIM_OK && hw) {
        rc = spsim_compose_time(memo, model, hw, par, le, &x, &r->memory, &r->comm, &r->time);
        if (rc == SPSIM_OK)
            compose_flops(
                model, par, le, &x, r->gpus,
                (const double[2]){hw->peak_flops[SPSIM_DTYPE_BF16], hw->peak_flops[par->dtype]},
                r->memory.recomputed_layers_per_stage, &r->time);
        if (rc == SPSIM_OK && !(isfinite(r->time.iteration_s) && r->time.iteration_s > 0))
            rc = SPSIM_ENUMERIC;
        if (rc != SPSIM_OK)
            return spsim_fail(err, rc, "numerical failure while timing the configuration");
    }
    return rc;
}

int
spsim_compose(const struct spsim_model *model, const struct spsim_hardware *hw,
              const struct spsim_parallel *par, const struct spsim_layer_summary *le,
              uint32_t warnings, struct spsim_result *out, struct spsim_error *err)
{
    struct spsim_result r;
    int rc = spsim_compose_into(model, hw, par, le, warnings, NULL, true, &r, err);
    if (rc == SPSIM_OK)
        *out = r;
    return rc;
}

int
spsim_evaluate(const struct spsim_model *model, const struct spsim_hardware *hw,
               const struct spsim_parallel *par, struct spsim_result *out, struct spsim_error *err)
{
    if (!model || !par || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_evaluate: NULL argument");
    uint32_t warnings = 0;
    int rc = spsim_parallel_check(model, hw, par, &warnings, err);
    if (rc != SPSIM_OK)
        return rc;
    struct spsim_layer_config cfg;
    spsim_layer_config_from(&model->shape, par, &cfg);
    /* On the heap: as thread-local storage these 80 kB were zeroed for every thread and at
     * every program start, a fifth of a short `spsim query`'s page faults. */
    struct spsim_layer_eval *le = spsim_calloc(1, sizeof(*le));
    struct spsim_layer_summary *sum = spsim_calloc(1, sizeof(*sum));
    rc = le && sum ? SPSIM_OK : spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    if (rc == SPSIM_OK)
        rc = spsim_layer_evaluate(&model->shape, hw, &cfg, spsim_model_padded_vocab(model, par->tp),
                                  le, err);
    if (rc == SPSIM_OK) {
        spsim_layer_summarize(model, hw, le, sum);
        rc = spsim_compose(model, hw, par, sum, warnings, out, err);
    }
    free(le);
    free(sum);
    return rc;
}
