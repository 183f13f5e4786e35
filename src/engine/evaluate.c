/* Composition: memory per stage, pipeline, data parallelism and optimizer from a layer summary. */
#include "config.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "buckets.h"
#include "eval.h"
#include "ep_overlap.h"
#include "moe.h"
#include "stages.h"

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

/* Everything the composition derives from the configuration before folding. */
/* d is the data-parallel size (it sets the micro-batches), dc = d·c the group gradients are
 * reduced over and the optimizer is sharded over (Megatron's intra_dp_cp_group). */
struct shape {
    uint64_t L, p, v, d, t, micro, c, dc;
    uint64_t lps, lpc; /* the most layers a rank, and a model chunk, builds */
    const struct spsim_stage_plan *plan;
    /* Ranks 0, 1 and p − 1 (the candidates without a layout): layers built and in flight,
     * computed once per configuration. */
    uint64_t built[3], held[3];
    /* Mixture of experts: the expert data-parallel size (edp; dc for a dense model), whether
     * dense layers mix with the MoE ones (their count per rank from the model), and all of
     * them. */
    bool moe, mixed;
    uint64_t edp, dense_total, ep_group; /* ep_group: ranks of the widest dispatch group */
    const struct spsim_model *model;
    /* first_last_layers_bf16 on a dense model (bf16_layers.c): mixed too, the second kind of
     * layer (le->dense, rank_dense, dense_total) being the BF16 one; every rank a candidate. */
    bool bf16;
};

/* The sharding level: --zero, or 1 for the distributed optimizer alone. */
static uint32_t
zero_level(const struct spsim_parallel *par)
{
    return par->zero > 0 ? par->zero : (par->distributed_optimizer ? 1u : 0u);
}

/* Bytes per parameter of the gradient buffer: fp32 main gradients, or the parameter dtype
 * (arguments.py: bf16 training accumulates and reduces in fp32 unless --grad-reduce-in-bf16;
 * fp16 training keeps fp16 gradients). */
static uint64_t
grad_bytes(const struct spsim_parallel *par)
{
    bool fp32 = par->grad_reduce_in_fp32 < 0 ? par->dtype != SPSIM_DTYPE_FP16
                                             : par->grad_reduce_in_fp32 == 1;
    return fp32 ? 4 : 2;
}

static uint64_t
ceil_div(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* Index of rank r in the shape's cache, or -1 (a layout's other ranks). */
static int
cached(const struct shape *x, uint64_t r)
{
    if (r == x->p - 1)
        return 2;
    return r == 0 ? 0 : r == 1 && !x->plan->nlayout ? 1 : -1;
}

static uint64_t
rank_built(const struct shape *x, uint64_t r)
{
    int i = cached(x, r);
    return i >= 0 ? x->built[i] : spsim_stage_rank_layers(x->plan, (uint32_t)r);
}

static uint64_t
rank_held(const struct shape *x, uint64_t r)
{
    int i = cached(x, r);
    return i >= 0 ? x->held[i] : spsim_stage_inflight_layers(x->plan, (uint32_t)r, x->micro);
}

/*
 * Model chunks whose activations pipeline rank r holds at peak. 1F1B (PipeDream-Flush): rank r
 * runs p − r forward passes before its first backward, so min(p − r, micro-batches) are in
 * flight, each of L/p layers. Interleaved (Megatron-LM schedules.py): rank r warms up with
 * 2(p − r − 1) + (v − 1)p chunk forwards and holds one more in steady state, each of
 * L/(p·v) layers; for r = 0 that is L(1 + (p − 1)/(p·v)) layers, the paper's factor.
 */
static uint64_t
inflight_chunks(const struct shape *x, uint64_t rank)
{
    if (x->v == 1)
        return spsim_min_u64(x->p - rank, x->micro);
    return spsim_min_u64(2 * (x->p - rank - 1) + (x->v - 1) * x->p + 1, x->micro * x->v);
}

/*
 * Micro-batches whose embedding dropout mask rank 0 holds at peak: those whose forward has run
 * through its first model chunk (where the embedding is) and whose backward has not. 1F1B: the
 * p in flight (paper §4.3, sbhp/t). Interleaved (schedules.py get_model_chunk_id: forwards run
 * chunk by chunk in groups of p micro-batches, backwards in reverse chunk order): rank 0's
 * 2(p − 1) + (v − 1)p warm-up forwards and its first steady-state forward cover chunk 0 of the
 * first two groups, 2p micro-batches, before the first chunk-0 backward; from then on each
 * chunk-0 backward is matched by a chunk-0 forward, so 2p. Megatron's estimate
 * (theoretical_memory_usage.py) scales the p by its interleaving penalty 1 + (p − 1)/(pv)
 * instead, which is the mean over chunks, not chunk 0's count.
 */
static uint64_t
embedding_inflight(const struct shape *x)
{
    return spsim_min_u64(x->v > 1 ? 2 * x->p : x->p, x->micro);
}

struct stage_memory {
    uint64_t params, weights, grads, optimizer, activations, total;
};

/*
 * Megatron theoretical_memory_usage.py: 18 bytes per parameter (bf16 weight 2, fp32 main
 * gradient 4, fp32 master weight and Adam moments 12), or 6 + 12/D with the distributed
 * optimizer, which shards the 12 over the D = dp·cp ranks. Megatron-FSDP (megatron_fsdp.py):
 * optim_grads (2) also shards the gradient buffer, optim_grads_params (3) the bf16 weights;
 * a sharded buffer keeps the FSDP units (transformer layers) in flight unsharded: for
 * weights the unit computing and the one prefetched, for gradients the unit being produced and
 * the one in the reduce-scatter queue (2 units each).
 */
static void
fsdp_static(uint64_t unit, const struct spsim_parallel *par, const struct shape *x,
            struct stage_memory *s, bool *ok)
{
    uint64_t g = grad_bytes(par), D = x->dc;
    if (par->zero >= 3)
        s->weights = spsim_add(ceil_div(s->weights, D), spsim_mul3(unit, 2, 2, ok), ok);
    s->grads = spsim_add(ceil_div(s->grads, D), spsim_mul3(unit, 2, g, ok), ok);
}

static void
stage_static(uint64_t params, uint64_t expert, uint64_t unit, const struct spsim_parallel *par,
             const struct shape *x, struct stage_memory *s, bool *ok)
{
    uint64_t D = x->dc;
    s->params = params;
    s->weights = spsim_mul(params, 2, ok);
    bool fp32 = grad_bytes(par) == 4;
    s->grads = fp32 ? spsim_mul(params, 4, ok) : spsim_mul(params, 2, ok);
    if (par->zero >= 2 && D > 1)
        fsdp_static(unit, par, x, s, ok);
    /* 16-bit gradients: the optimizer keeps an fp32 copy of its gradients (Megatron's
     * dist_optimizer.md: fp16 parameters and gradients, 20 = 4 + 16 B per parameter). */
    uint64_t opt = spsim_mul(params, fp32 ? 12 : 16, ok);
    s->optimizer = par->zero || par->distributed_optimizer ? (opt + D - 1) / D : opt;
    /* MoE: the experts' state is sharded over the expert data-parallel group instead
     * (distrib_optimizer.py builds their buffers over the expert-DP group). */
    if (expert && s->optimizer != opt) {
        uint64_t e = spsim_mul(expert, fp32 ? 12 : 16, ok), E = x->edp;
        s->optimizer = (opt - e + D - 1) / D + (e + E - 1) / E;
    }
}

/*
 * Multi-token prediction (transformer/multi_token_prediction.py MultiTokenPredictionBlock, on
 * the last pipeline stage): each of the D depths runs the embedding of the shifted tokens (the
 * model's embedding block), its own rows (enorm, hnorm, eh_proj: le->mtp), one transformer
 * layer of the last decoder layer's kind (MoE if that one is: training.py counts it so) and
 * the shared output head with its own loss (the output block).
 */
static const struct spsim_block_totals *
mtp_layer(const struct spsim_layer_summary *le, const struct shape *x)
{
    bool dense = x->moe && x->mixed && !spsim_model_layer_is_moe(x->model, (uint32_t)x->L - 1);
    return dense ? &le->dense : &le->layer; /* MTP layers run quantized (bf16_layers.c) */
}

/* The activations the D depths keep for backward (one micro-batch in flight on the last
 * stage, as the output block's). */
static uint64_t
mtp_saved(const struct spsim_layer_summary *le, const struct shape *x, bool *ok)
{
    uint64_t one = spsim_add(le->embedding.saved_bytes, le->mtp.saved_bytes, ok);
    one = spsim_add(one, mtp_layer(le, x)->saved_bytes, ok);
    one = spsim_add(one, le->output.saved_bytes, ok);
    return spsim_mul(x->model->shape.mtp_layers, one, ok);
}

static uint64_t rank_dense(const struct shape *x, uint64_t r);

/* TE's FP8 weight copies of rank r's quantized layers (not its BF16 ones, bf16_layers.c)
 * beside their BF16 weights; none with FP8 parameters (--fp8-param-gather: the FP8 tensors are
 * the weights). */
static void
add_fp8_weight_copies(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                      const struct shape *x, uint64_t r, struct stage_memory *s, bool *ok)
{
    if (le->fp8_weight_bytes_layer == 0 || par->fp8_param_gather) /* the one test: not FP8 */
        return;
    uint64_t layers = rank_built(x, r) - (x->bf16 ? rank_dense(x, r) : 0);
    s->weights = spsim_add(s->weights, spsim_mul(layers, le->fp8_weight_bytes_layer, ok), ok);
}

/* Rank r's activations: the layers it holds in flight, plus the embedding's dropout masks on
 * rank 0 and the output layer on rank p − 1. */
static uint64_t
rank_activations(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                 const struct shape *x, uint64_t r, bool *ok)
{
    uint64_t act = spsim_mul(rank_held(x, r), le->layer.saved_bytes, ok);
    if (x->mixed) {
        const uint64_t kept[2] = {le->layer.saved_bytes, le->dense.saved_bytes};
        act = spsim_moe_rank_held_bytes(x->model, x->plan, (uint32_t)r, x->micro, kept, ok);
    }
    /* The embedding dropout masks of the micro-batches in flight (embedding_inflight). */
    if (r == 0)
        act = spsim_add(act, spsim_mul(le->embedding.saved_bytes, embedding_inflight(x), ok), ok);
    /* Paper §4.3: the last stage's final norm, output-layer input and fp32 logits,
     * 4sbh/t·(1 + v/h). */
    if (r == x->p - 1)
        act = spsim_add(act, le->output.saved_bytes, ok);
    if (r == x->p - 1 && le->params_mtp)
        act = spsim_add(act, mtp_saved(le, x, ok), ok);
    /* Full recomputation rebuilds one layer's activations before its backward: that layer's
     * whole inventory is live on top of the checkpoints. */
    if (par->recompute == SPSIM_RECOMPUTE_FULL)
        act = spsim_add(act, le->act_no_recompute, ok);
    /* CP's transient exchange buffers of the layer in its attention (summary.c). */
    return spsim_add(act, le->cp_working_bytes, ok);
}

/* One model chunk's activations by Megatron's full-recompute method (megatron/core/recompute.py
 * checkpointed_forward, which runs per chunk over its layers):
 *   uniform N: groups of N layers (the last one shorter), each keeping only its input; while a
 *     group is recomputed and its backward runs, its N layers' whole activations are live;
 *   block N: the first N layers keep their input only, the others everything; one layer is
 *     recomputed at a time.
 * spsim's plain `full` is uniform with N = 1. With CPU offload (no recomputation, pp = 1, so
 * the chunk is the model) the offloaded layers' moved tensors are in host memory at peak (TE
 * cpu_offload.py: peak (L − N)·T). */
static uint64_t
chunk_activations(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                  const struct shape *x, struct spsim_memory_report *mem, bool *ok)
{
    uint64_t lpc = x->lpc, kept = le->layer.saved_bytes, whole = le->act_no_recompute;
    mem->offload_bytes_per_layer = par->offload_layers ? le->offload_bytes : 0;
    mem->offload_hbm_saved_bytes = spsim_mul(par->offload_layers, le->offload_bytes, ok);
    mem->offload_host_bytes = mem->offload_hbm_saved_bytes;
    if (par->recompute != SPSIM_RECOMPUTE_FULL)
        return spsim_mul(lpc, kept, ok) - mem->offload_hbm_saved_bytes; /* N·O < L·T */
    uint64_t n = spsim_min_u64(par->recompute_layers ? par->recompute_layers : 1, lpc);
    if (par->recompute_method == SPSIM_RECOMPUTE_METHOD_BLOCK) {
        mem->recomputed_layers_per_stage = (uint32_t)(n * x->v);
        mem->activation_recompute_working_bytes = whole;
        return spsim_add(spsim_mul(n, kept, ok), spsim_mul(lpc - n, whole, ok), ok);
    }
    mem->recomputed_layers_per_stage = (uint32_t)x->lps;
    mem->activation_recompute_working_bytes = spsim_mul(n, whole, ok);
    return spsim_mul((lpc + n - 1) / n, kept, ok);
}

/* The first and last stages' activations: in-flight chunks of the schedule, plus the extras
 * of the first (embedding) and last (output layer) stages. */
static void
activation_memory(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                  const struct shape *x, struct spsim_memory_report *mem, bool *ok)
{
    memcpy(mem->activation_modes_bytes, le->act_modes, sizeof(le->act_modes));
    mem->activation_per_layer_bytes = le->layer.saved_bytes;
    mem->layers_per_stage = (uint32_t)x->lps;
    mem->layers_per_chunk = (uint32_t)x->lpc;
    mem->layers_first_stage = (uint32_t)x->built[0];
    mem->layers_last_stage = (uint32_t)x->built[2];

    uint64_t chunks0 = inflight_chunks(x, 0);
    mem->inflight_chunks_first_stage = (uint32_t)chunks0;
    uint64_t chunk = chunk_activations(par, le, x, mem, ok);
    if (x->plan->even && !x->mixed) {
        mem->interleave_factor = (double)(chunks0 * x->lpc) / (double)x->L;
        mem->activation_layers_bytes = spsim_mul(chunks0, chunk, ok);
    } else {
        /* Uneven (no recompute method, no offload: spsim_parallel_check): the layers held. */
        mem->interleave_factor = (double)x->held[0] / (double)x->L;
        mem->activation_layers_bytes = spsim_mul(x->held[0], le->layer.saved_bytes, ok);
        if (x->mixed) {
            const uint64_t kept[2] = {le->layer.saved_bytes, le->dense.saved_bytes};
            mem->activation_layers_bytes =
                spsim_moe_rank_held_bytes(x->model, x->plan, 0, x->micro, kept, ok);
        }
    }
    /* The embedding dropout masks of the micro-batches in flight (embedding_inflight). */
    mem->activation_embedding_bytes =
        spsim_mul(le->embedding.saved_bytes, embedding_inflight(x), ok);
    mem->activation_output_bytes = x->p == 1 ? le->output.saved_bytes : 0;
    if (!x->plan->even || x->mixed) {
        mem->activation_cp_working_bytes = le->cp_working_bytes;
        mem->activation_first_stage_bytes = rank_activations(par, le, x, 0, ok);
        mem->activation_last_stage_bytes = rank_activations(par, le, x, x->p - 1, ok);
        return;
    }
    /* Full recomputation rebuilds a group's activations before its backward: that group's
     * whole inventory is live on top of the checkpoints (chunk_activations). */
    mem->activation_cp_working_bytes = le->cp_working_bytes;
    uint64_t first = spsim_add(mem->activation_layers_bytes, mem->activation_embedding_bytes, ok);
    first = spsim_add(first, mem->activation_output_bytes, ok);
    first = spsim_add(first, mem->activation_recompute_working_bytes, ok);
    first = spsim_add(first, mem->activation_cp_working_bytes, ok);
    if (x->p == 1 && le->params_mtp)
        first = spsim_add(first, mtp_saved(le, x, ok), ok);
    mem->activation_first_stage_bytes = first;
    uint64_t last = first;
    if (x->p > 1) {
        last = spsim_mul(inflight_chunks(x, x->p - 1), chunk, ok);
        last = spsim_add(last, le->output.saved_bytes, ok);
        last = spsim_add(last, mem->activation_recompute_working_bytes, ok);
        last = spsim_add(last, mem->activation_cp_working_bytes, ok);
        if (le->params_mtp)
            last = spsim_add(last, mtp_saved(le, x, ok), ok);
    }
    mem->activation_last_stage_bytes = last;
}

/* Dense layers of an MoE model that pipeline rank r builds (0 when every layer is alike). */
static uint64_t
rank_dense(const struct shape *x, uint64_t r)
{
    return x->mixed ? spsim_moe_rank_dense_layers(x->model, x->plan, (uint32_t)r) : 0;
}

/* MoE layers of pipeline rank r: its decoder layers less the dense ones, and on the last rank
 * the MTP depths when their layer is an MoE layer. */
static uint64_t
rank_moe_layers(const struct spsim_layer_summary *le, const struct shape *x, uint64_t r)
{
    uint64_t layers = rank_built(x, r) - rank_dense(x, r);
    if (r == x->p - 1 && le->params_mtp && mtp_layer(le, x) == &le->layer) /* MoE MTP layers */
        layers += x->model->shape.mtp_layers;
    return layers;
}

/* The routed experts' parameters on one rank of pipeline rank r. */
static uint64_t
rank_expert_parameters(const struct spsim_layer_summary *le, const struct shape *x, uint64_t r,
                       bool *ok)
{
    if (!x->moe)
        return 0; /* the dense path: no rank_built/rank_dense per candidate rank */
    return spsim_mul(rank_moe_layers(le, x, r), le->params_layer_experts, ok);
}

/* The most MoE layers a pipeline rank runs (the stage whose token exchanges move the most). */
static uint64_t
busiest_moe_layers(const struct spsim_layer_summary *le, const struct shape *x)
{
    uint64_t most = 0;
    for (uint64_t r = 0; r < x->p; r++)
        most = spsim_max_u64(most, rank_moe_layers(le, x, r));
    return most;
}

/* The D depths' parameters on the last stage: each its own (enorm, hnorm, eh_proj,
 * final_layernorm) and a transformer layer's. With pp > 1 the last stage also holds a copy of
 * the word embedding for the shifted tokens (rank_parameters; its gradient is all-reduced
 * with the first stage's, tied_embedding_sync). */
static uint64_t
mtp_parameters(const struct spsim_layer_summary *le, const struct shape *x, bool *ok)
{
    uint64_t layer = mtp_layer(le, x) == &le->layer ? le->params_layer : le->params_dense_layer;
    return spsim_mul(x->model->shape.mtp_layers, spsim_add(le->params_mtp, layer, ok), ok);
}

/* Parameters of one TP rank of pipeline rank r: its layers, the embedding on rank 0, the
 * output layer on rank p − 1 (and there a tied embedding's copy, which Megatron keeps in sync
 * by an all-reduce of its gradient). */
static uint64_t
rank_parameters(const struct spsim_model_shape *m, const struct spsim_layer_summary *le,
                const struct shape *x, uint64_t r, bool *ok)
{
    uint64_t n = spsim_mul(rank_built(x, r), le->params_layer, ok);
    if (x->mixed) {
        uint64_t dense = rank_dense(x, r);
        n = spsim_add(spsim_mul(rank_built(x, r) - dense, le->params_layer, ok),
                      spsim_mul(dense, le->params_dense_layer, ok), ok);
    }
    if (r == 0)
        n = spsim_add(n, le->params_embedding, ok);
    if (r == x->p - 1) {
        n = spsim_add(n, le->params_output, ok);
        if (x->p > 1 && (m->tied_embeddings || m->mtp_layers))
            n = spsim_add(n, spsim_mul(le->padded_vocab, m->hidden, ok) / x->t, ok);
        if (le->params_mtp)
            n = spsim_add(n, mtp_parameters(le, x, ok), ok);
    }
    return n;
}

static void
parameter_memory(const struct spsim_model_shape *m, const struct spsim_layer_summary *le,
                 const struct shape *x, struct spsim_memory_report *mem, bool *ok)
{
    if (!le->params_ok)
        *ok = false;
    mem->parameters_total = le->params_total;
    mem->parameters_active = le->params_active;
    mem->parameters_first_stage = rank_parameters(m, le, x, 0, ok);
    mem->parameters_last_stage = rank_parameters(m, le, x, x->p - 1, ok);
}

static uint64_t
stage_sum(const struct stage_memory *s, bool *ok)
{
    return spsim_add(spsim_add(spsim_add(s->weights, s->grads, ok), s->optimizer, ok),
                     s->activations, ok);
}

/* The ranks that can be the most loaded: with BF16 first/last layers every rank, in order (a
 * middle rank may hold BF16 layers of both ends through its interleaved chunks, and its BF16
 * layers follow from its chunks' global indices); else `n` of spsim_stage_candidate's. */
static uint32_t
candidate_count(const struct shape *x, uint32_t n)
{
    return x->bf16 ? (uint32_t)x->p : n;
}

static uint32_t
candidate_rank(const struct shape *x, uint32_t i)
{
    return x->bf16 ? i : spsim_stage_candidate(x->plan, i);
}

/* Weights, gradients, optimizer and activations of every rank that can be the most loaded;
 * the per-GPU figures are the most loaded one's. */
static void
peak_stage(const struct spsim_model_shape *m, const struct spsim_parallel *par,
           const struct spsim_layer_summary *le, const struct shape *x,
           struct spsim_memory_report *mem, bool *ok)
{
    /* Evenly split, a middle rank holds rank 0's layers, fewer in flight and no embedding: it
     * never exceeds rank 0. */
    uint32_t n = candidate_count(
        x, x->plan->even && x->p > 2 && !x->mixed ? 2 : spsim_stage_ncandidates(x->plan));
    struct stage_memory best = {0};
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = candidate_rank(x, i);
        bool first = r == 0, last = r == x->p - 1;
        struct stage_memory s;
        stage_static(first  ? mem->parameters_first_stage
                     : last ? mem->parameters_last_stage
                            : rank_parameters(m, le, x, r, ok),
                     rank_expert_parameters(le, x, r, ok), le->params_layer, par, x, &s, ok);
        add_fp8_weight_copies(par, le, x, r, &s, ok);
        s.activations = first  ? mem->activation_first_stage_bytes
                        : last ? mem->activation_last_stage_bytes
                               : rank_activations(par, le, x, r, ok);
        s.total = stage_sum(&s, ok);
        if (i == 0 || s.total > best.total) {
            best = s;
            mem->peak_stage = r;
        }
    }
    if (x->moe)
        mem->expert_parameters_per_gpu = rank_expert_parameters(le, x, mem->peak_stage, ok);
    mem->parameters_per_gpu = best.params;
    mem->weights_bytes = best.weights;
    mem->gradients_bytes = best.grads;
    mem->optimizer_bytes = best.optimizer;
    mem->total_bytes = best.total;
    mem->activation_peak_stage_bytes = best.activations;
    mem->layers_peak_stage = (uint32_t)rank_built(x, mem->peak_stage);
}

/* What the GPU reports less what tensors cannot use: the CUDA context and cuBLAS workspace,
 * the NCCL buffers of each communicator this configuration runs collectives on (TP, CP, DP·CP,
 * the tied embedding's pair), then the allocator's fragmentation as a fraction of the rest. */
static void
memory_limit(const struct spsim_hardware *hw, const struct shape *x, bool tied,
             struct spsim_memory_report *mem)
{
    uint64_t comms = (x->t > 1) + (x->c > 1) + (x->dc > 1) + (x->p > 1 && tied);
    if (x->moe) /* the dispatch group and the expert data-parallel group */
        comms += (x->ep_group > 1) + (x->edp > 1);
    uint64_t reserved = hw->reserved_fixed_bytes + comms * hw->nccl_comm_bytes;
    uint64_t left = hw->hbm_capacity_bytes > reserved ? hw->hbm_capacity_bytes - reserved : 0;
    if (hw->allocator_fragmentation > 0)
        left = (uint64_t)((double)left * (1.0 - hw->allocator_fragmentation));
    mem->hbm_bytes = hw->hbm_capacity_bytes;
    mem->reserved_bytes = hw->hbm_capacity_bytes - left;
    mem->capacity_bytes = left;
}

/* The first stage's totals in the six modes; whether it fits. */
static void
stage_totals(const struct spsim_model_shape *m, const struct spsim_hardware *hw,
             const struct spsim_parallel *par, const struct spsim_layer_summary *le,
             const struct shape *x, struct spsim_memory_report *mem, bool *ok)
{
    struct stage_memory s0;
    stage_static(mem->parameters_first_stage, rank_expert_parameters(le, x, 0, ok),
                 le->params_layer, par, x, &s0, ok);
    add_fp8_weight_copies(par, le, x, 0, &s0, ok);
    peak_stage(m, par, le, x, mem, ok);
    if (hw)
        memory_limit(hw, x, m->tied_embeddings, mem);
    uint64_t extras = spsim_add(mem->activation_embedding_bytes, mem->activation_output_bytes, ok);
    uint64_t static0 = spsim_add(spsim_add(s0.weights, s0.grads, ok), s0.optimizer, ok);
    uint64_t layers0 = x->held[0];
    for (int i = 0; i < SPSIM_MODE_COUNT; i++) {
        uint64_t act = spsim_add(spsim_mul(layers0, le->act_modes[i], ok), extras, ok);
        if (i == SPSIM_MODE_FULL)
            act = spsim_add(act, le->act_modes[SPSIM_MODE_TP], ok);
        mem->activation_modes_first_stage_bytes[i] = act;
        mem->total_modes_bytes[i] = spsim_add(static0, act, ok);
    }
}

static int
compose_memory(const struct spsim_model_shape *m, const struct spsim_hardware *hw,
               const struct spsim_parallel *par, const struct spsim_layer_summary *le,
               const struct shape *x, struct spsim_memory_report *mem, bool *ok)
{
    activation_memory(par, le, x, mem, ok);
    parameter_memory(m, le, x, mem, ok);
    stage_totals(m, hw, par, le, x, mem, ok);
    if (hw) {
        if (mem->total_bytes > (uint64_t)INT64_MAX || mem->capacity_bytes > (uint64_t)INT64_MAX) {
            *ok = false;
            return SPSIM_OK;
        }
        mem->headroom_bytes = (int64_t)mem->capacity_bytes - (int64_t)mem->total_bytes;
        mem->fits = mem->total_bytes <= mem->capacity_bytes;
    }
    return SPSIM_OK;
}

/* Context parallelism's per-layer exchanges (per rank) and the tier of its group. */
static void
compose_cp_comm(const struct spsim_hardware *hw, const struct spsim_layer_summary *le,
                const struct shape *x, struct spsim_comm_report *comm, bool *ok)
{
    const struct spsim_block_totals *L = &le->layer;
    comm->cp_forward_wire_bytes_per_layer = L->cp_wire[SPSIM_PHASE_FORWARD];
    comm->cp_backward_wire_bytes_per_layer = L->cp_wire[SPSIM_PHASE_BACKWARD];
    comm->cp_recompute_wire_bytes_per_layer = L->cp_wire[SPSIM_PHASE_RECOMPUTE];
    uint64_t per_layer = spsim_add(spsim_add(L->cp_wire[0], L->cp_wire[1], ok), L->cp_wire[2], ok);
    comm->cp_wire_bytes_per_iteration = spsim_mul3(x->lps, per_layer, x->micro, ok);
    comm->cp_tier = SPSIM_TIER_LOCAL;
    if (x->c > 1)
        comm->cp_tier = hw ? spsim_group_tier(hw, spsim_group_place(hw, (uint32_t)x->c, x->t))
                           : SPSIM_TIER_NVLINK;
}

/* --fp8-param-gather: the data-parallel AllGathers carry the linear weights in FP8, 1 B instead
 * of 2 (Megatron DDP fp8_param_gather; megatron-core-and-nccl.md sec. 7.3): the bytes that
 * `layers` layers' gather saves. */
static uint64_t
fp8_gather_saved(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                 uint64_t layers)
{
    if (!par->fp8_param_gather)
        return 0;
    /* --fp4-param-gather (Megatron arguments.py): the NVFP4 weights gathered instead, their
     * rowwise 1/2 B and the E4M3 scale of each 16×16 block (the columnwise copy of a 2D-scaled
     * weight is its transpose, made where it is used): 2 − 1/2 − 1/256 B saved a weight. */
    uint64_t w = le->fp8_weights_layer;
    if (par->dtype == SPSIM_DTYPE_NVFP4)
        w = w + w / 2 - w / 256;
    return layers * w;
}

/*
 * Sharded data parallelism's traffic per rank and iteration. The distributed optimizer
 * reduce-scatters the gradients once and gathers the updated bf16 weights once. Megatron-FSDP
 * (megatron_fsdp.py): optim_grads and
 * optim_grads_params reduce-scatter the gradients after every micro-batch's backward
 * (grad_reduce_every_bprop), m times ZeRO-1's; optim_grads gathers the updated bf16
 * parameters once after the step, optim_grads_params gathers each layer's bf16 parameters
 * before its forward and again before its backward, every micro-batch, and never after the step.
 */
static void
zero_comm(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
          const struct shape *x, uint64_t grad_frac, uint32_t peak, struct spsim_comm_report *comm,
          bool *ok)
{
    uint64_t D = x->dc, unit = spsim_mul(le->params_layer, 2, ok) - fp8_gather_saved(par, le, 1);
    uint64_t fp8_layers = x->lps - (x->bf16 ? rank_dense(x, peak) : 0);
    uint64_t weights = spsim_mul(comm->dp_grad_bytes / grad_bytes(par), 2, ok) -
                       fp8_gather_saved(par, le, fp8_layers);
    uint32_t z = zero_level(par);
    comm->dp_rs_wire_bytes_per_rank = z >= 2 ? spsim_mul(grad_frac, x->micro, ok) : grad_frac;
    if (z == 1 && grad_bytes(par) == 4 && !par->fp8_param_gather) {
        comm->dp_ag_wire_bytes_per_rank = grad_frac / 2; /* bf16 weights: half the fp32 grads */
    } else if (z >= 3) {
        uint64_t unit_frac = (unit / D) * (D - 1) + (unit % D) * (D - 1) / D;
        comm->dp_ag_wire_bytes_per_rank = spsim_mul4(unit_frac, 2, x->lps, x->micro, ok);
    } else {
        comm->dp_ag_wire_bytes_per_rank = (weights / D) * (D - 1) + (weights % D) * (D - 1) / D;
    }
    comm->dp_wire_bytes_per_rank =
        spsim_add(comm->dp_rs_wire_bytes_per_rank, comm->dp_ag_wire_bytes_per_rank, ok);
}

/*
 * MoE (per rank): the dispatch and combine of one MoE layer and of the MoE layers of the stage
 * that runs the most of them over the iteration (the recompute phase on every layer: MoE models
 * have no recompute method; the MTP depths on the last stage when theirs is an MoE layer), and
 * the experts' gradients reduced over the expert data-parallel group, whose members are
 * etp·ep ranks apart (the expert grid's order tp-ep-dp, parallel_state.py): an AllReduce
 * (2(D−1)/D), or a ReduceScatter of the gradients and an AllGather of the bf16 weights.
 */
static void
moe_comm(const struct spsim_hardware *hw, const struct spsim_parallel *par,
         const struct spsim_layer_summary *le, const struct shape *x,
         const struct spsim_memory_report *mem, struct spsim_comm_report *comm, bool *ok)
{
    const struct spsim_block_totals *L = &le->layer;
    comm->ep_forward_wire_bytes_per_layer = L->ep_wire[SPSIM_PHASE_FORWARD];
    comm->ep_backward_wire_bytes_per_layer = L->ep_wire[SPSIM_PHASE_BACKWARD];
    comm->ep_recompute_wire_bytes_per_layer = L->ep_wire[SPSIM_PHASE_RECOMPUTE];
    uint64_t per_layer = spsim_add(spsim_add(L->ep_wire[0], L->ep_wire[1], ok), L->ep_wire[2], ok);
    comm->ep_wire_bytes_per_iteration =
        spsim_mul3(busiest_moe_layers(le, x), per_layer, x->micro, ok);
    uint32_t stride =
        par->moe_dispatcher == SPSIM_MOE_ALLTOALL && par->ep > 1 ? spsim_moe_etp(par) : 1;
    comm->ep_tier = x->ep_group <= 1 ? SPSIM_TIER_LOCAL
                    : hw
                        ? spsim_group_tier(hw, spsim_group_place(hw, (uint32_t)x->ep_group, stride))
                        : SPSIM_TIER_NVLINK;
    if (par->moe_dispatcher == SPSIM_MOE_FLEX && hw && x->ep_group > 1)
        comm->ep_tier = spsim_moe_flex_tier(hw, par);
    comm->expert_dp_ranks = (uint32_t)x->edp;
    uint64_t D = x->edp, grads = spsim_mul(mem->expert_parameters_per_gpu, grad_bytes(par), ok);
    if (D <= 1)
        return;
    comm->expert_dp_grad_bytes = grads;
    uint64_t frac = (grads / D) * (D - 1) + (grads % D) * (D - 1) / D;
    bool sharded = zero_level(par) >= 1;
    /* Sharded: the bf16 weights gathered are half the fp32 gradients (2/g of them). */
    comm->expert_dp_wire_bytes_per_rank = sharded ? frac + frac * 2 / grad_bytes(par) : 2 * frac;
    comm->expert_dp_tier =
        hw ? spsim_group_tier(
                 hw, spsim_group_place(hw, (uint32_t)D, (uint64_t)spsim_moe_etp(par) * par->ep))
           : SPSIM_TIER_NETWORK;
}

static void
compose_comm(const struct spsim_hardware *hw, const struct spsim_parallel *par,
             const struct spsim_layer_summary *le, const struct shape *x, uint32_t hidden,
             const struct spsim_memory_report *mem, struct spsim_comm_report *comm, bool *ok)
{
    const struct spsim_block_totals *L = &le->layer;
    comm->tp_forward_wire_bytes_per_layer = L->tp_wire[SPSIM_PHASE_FORWARD];
    comm->tp_backward_wire_bytes_per_layer = L->tp_wire[SPSIM_PHASE_BACKWARD];
    comm->tp_recompute_wire_bytes_per_layer = L->tp_wire[SPSIM_PHASE_RECOMPUTE];
    comm->tp_wgrad_gather_wire_bytes_per_layer = L->tp_regather_wire;
    /* Forward and backward on every layer; recompute on the replayed ones (block method). */
    uint64_t per_layer = spsim_add(L->tp_wire[0], L->tp_wire[1], ok);
    uint64_t replayed =
        par->recompute == SPSIM_RECOMPUTE_FULL ? mem->recomputed_layers_per_stage : x->lps;
    uint64_t stage = spsim_add(spsim_mul(x->lps, per_layer, ok),
                               spsim_mul(replayed, L->tp_wire[SPSIM_PHASE_RECOMPUTE], ok), ok);
    comm->tp_wire_bytes_per_microbatch = stage;
    comm->tp_wire_bytes_per_iteration = spsim_mul(comm->tp_wire_bytes_per_microbatch, x->micro, ok);
    comm->tp_wire_bytes_per_iteration_all_layers =
        spsim_mul(spsim_mul(x->p, stage, ok), x->micro, ok);
    comm->microbatches = (uint32_t)x->micro;
    comm->tp_tier =
        x->t > 1 ? (hw ? spsim_group_tier(hw, le->tp_group) : SPSIM_TIER_NVLINK) : SPSIM_TIER_LOCAL;

    if (x->c > 1) /* the fields are cleared: nothing to fill without CP */
        compose_cp_comm(hw, le, x, comm, ok);
    /* Data parallel over the dp·cp group: fp32 gradients (Megatron accumulates and reduces in
     * fp32 for bf16 training: arguments.py sets accumulate_allreduce_grads_in_fp32). */
    uint64_t grads =
        spsim_mul(mem->parameters_per_gpu - mem->expert_parameters_per_gpu, grad_bytes(par), ok);
    comm->dp_grad_bytes = x->dc > 1 ? grads : 0;
    if (x->moe)
        moe_comm(hw, par, le, x, mem, comm, ok);
    if (x->dc > 1) {
        uint64_t D = x->dc;
        uint64_t frac = (grads / D) * (D - 1) + (grads % D) * (D - 1) / D;
        /* AllReduce moves 2(D−1)/D; RS of the gradients + AG of bf16 parameters with the
         * distributed optimizer moves (D−1)/D of each. */
        comm->dp_wire_bytes_per_rank = 2 * frac;
        comm->dp_tier = hw ? spsim_group_tier(hw, spsim_group_place(hw, (uint32_t)D, x->t))
                           : SPSIM_TIER_NETWORK;
        if (zero_level(par) >= 1)
            zero_comm(par, le, x, frac, mem->peak_stage, comm, ok);
    }
    /* Pipeline: Megatron's scatter-gather optimisation sends 1/t of the [s/c, b, h] activation
     * (with SP the activation already is the s/(c·t) shard). */
    if (x->p > 1) {
        comm->pp_message_bytes = spsim_mul3(le->cfg.s / x->c, le->cfg.b, 2ull * hidden, ok) / x->t;
        comm->pp_wire_bytes_per_rank = spsim_mul4(comm->pp_message_bytes, x->micro, x->v, 2, ok);
        comm->pp_tier =
            hw ? spsim_group_tier(hw, spsim_group_place(hw, 2, x->t * x->dc)) : SPSIM_TIER_NETWORK;
    }
}

/* Per micro-batch work of one stage: its layers plus the embedding or output block. */
struct stage_time {
    double wall, fwd, bwd, rec, exposed, bwd_window, tp_comm, fwd_wall, cp_exposed, cp_comm,
        offload;
    uint64_t layers;
};

static void
add_block(struct stage_time *s, const struct spsim_block_totals *b, double times)
{
    s->wall += times * (b->fwd_s + b->bwd_s + b->recompute_s);
    s->fwd += times * b->fwd_compute_s;
    s->bwd += times * b->bwd_compute_s;
    s->rec += times * b->recompute_compute_s;
    s->exposed += times * b->tp_exposed_s;
    s->bwd_window += times * (b->bwd_s + b->recompute_s);
    for (uint32_t i = 0; i < b->ncomm; i++)
        s->tp_comm += times * b->comm_s[i];
    s->fwd_wall += times * b->fwd_s;
    s->cp_exposed += times * b->cp_exposed_s;
    s->cp_comm += times * b->cp_comm_s;
}

/* A stage's layers: forward and backward on all of them, the recompute phase on the `replayed`
 * ones (fewer than all with the block method); the CP exchanges likewise. (An MoE layer's
 * token exchanges and aux-loss AllReduces never come here: moe.c refuses a recompute method
 * with MoE layers.) */
static void
add_layers(struct stage_time *s, const struct spsim_block_totals *b, double layers, double replayed)
{
    if (replayed == layers) { /* the same sums as every other block */
        add_block(s, b, layers);
        return;
    }
    s->wall += layers * (b->fwd_s + b->bwd_s) + replayed * b->recompute_s;
    s->fwd += layers * b->fwd_compute_s;
    s->bwd += layers * b->bwd_compute_s;
    s->rec += replayed * b->recompute_compute_s;
    s->exposed +=
        layers * (b->tp_exposed_s - b->recompute_exposed_s) + replayed * b->recompute_exposed_s;
    s->bwd_window += layers * b->bwd_s + replayed * b->recompute_s;
    double comm = 0;
    for (uint32_t i = 0; i < b->ncomm; i++)
        comm += b->comm_s[i];
    s->tp_comm += layers * (comm - b->recompute_comm_s) + replayed * b->recompute_comm_s;
    s->cp_exposed += layers * (b->cp_exposed_s - b->cp_recompute_exposed_s) +
                     replayed * b->cp_recompute_exposed_s;
    s->cp_comm +=
        layers * (b->cp_comm_s - b->cp_recompute_comm_s) + replayed * b->cp_recompute_comm_s;
}

/*
 * Stall of the compute stream behind TE's CPU offload (cpu_offload.py DefaultOffloadSynchronizer)
 * over one pass of L layers of `step` seconds each, N of them offloaded with copies of `copy`
 * seconds on one offload stream, in order. Forward: layer i's copy starts when its forward has
 * ended and the previous copy is done, and must finish before the forward of layer L − N + i
 * starts (its memory is released there). Backward is the mirror image: the j-th reload (of
 * layer N − 1 − j) is issued before the backward of the pass's position j + 1 and is needed by
 * position L − N + j, so the same recurrence holds with the backward's step.
 */
static double
offload_stall_s(uint32_t L, uint32_t N, double step, double copy)
{
    double done[SPSIM_MODEL_MAX_LAYERS]; /* when each copy finishes */
    double end = 0, last_copy = 0;
    uint32_t D = L - N;
    for (uint32_t j = 0; j < L; j++) {
        double start = j >= D ? spsim_max_d(end, done[j - D]) : end;
        end = start + step;
        if (j < N) {
            last_copy = spsim_max_d(end, last_copy) + copy;
            done[j] = last_copy;
        }
    }
    return end - L * step;
}

/* CPU offload's exposed time per micro-batch (pp = 1: the stage holds all L layers). */
static double
offload_exposed(const struct spsim_hardware *hw, const struct spsim_parallel *par,
                const struct spsim_layer_summary *le, const struct shape *x,
                struct spsim_time_report *tr)
{
    if (par->offload_layers == 0)
        return 0;
    double bytes = (double)le->offload_bytes;
    tr->offload_d2h_s_per_layer = bytes / hw->host_d2h_Bps;
    tr->offload_h2d_s_per_layer = bytes / hw->host_h2d_Bps;
    uint32_t L = (uint32_t)x->lps, N = par->offload_layers;
    return offload_stall_s(L, N, le->layer.fwd_s, tr->offload_d2h_s_per_layer) +
           offload_stall_s(L, N, le->layer.bwd_s, tr->offload_h2d_s_per_layer);
}

/* spsim_collective_time(), through the memo when there is one. */
static int
memo_time(struct spsim_coll_memo *memo, const struct spsim_hardware *hw, enum spsim_coll_op op,
          struct spsim_group g, double bytes, struct spsim_coll_time *out)
{
    if (!memo)
        return spsim_collective_time(hw, op, g, bytes, 1.0, out);
    uint64_t bits;
    memcpy(&bits, &bytes, sizeof(bits));
    /* Fibonacci hashing of the inputs. */
    uint64_t h = (bits ^ ((uint64_t)op << 56) ^ ((uint64_t)g.size << 24) ^ g.per_domain) *
                 0x9E3779B97F4A7C15ull;
    struct spsim_coll_memo_slot *s = &memo->slot[h >> 52 & (SPSIM_COLL_MEMO_SLOTS - 1)];
    uint64_t slot_bits; /* the same bits (not ==: a hit must be what a run gives, -0 and NaN) */
    memcpy(&slot_bits, &s->bytes, sizeof(slot_bits));
    if (s->hw == hw && s->op == (uint32_t)op && s->size == g.size &&
        s->per_domain == g.per_domain && slot_bits == bits) {
        *out = s->out;
        return SPSIM_OK;
    }
    int rc = spsim_collective_time(hw, op, g, bytes, 1.0, out);
    if (rc == SPSIM_OK)
        *s = (struct spsim_coll_memo_slot){hw, (uint32_t)op, g.size, g.per_domain, bytes, *out};
    return rc;
}

/* The finish time of flows[0] under max-min sharing (spsim_maxmin_run), through the memo when
 * there is one: keyed by every input, so a hit is what a run would give. */
static int
memo_maxmin(struct spsim_coll_memo *memo, const double cap[2], struct spsim_flow *flows, uint32_t n,
            double *finish)
{
    double key[SPSIM_MAXMIN_MEMO_KEY] = {(double)n, cap[0], cap[1]};
    for (uint32_t i = 0; i < n; i++) {
        key[3 + 3 * i] = flows[i].bytes;
        key[4 + 3 * i] = flows[i].max_rate;
        key[5 + 3 * i] = flows[i].res[0];
    }
    struct spsim_maxmin_memo_slot *s = NULL;
    /* key[0] = n: the first 3 + 3n entries are the whole key. */
    size_t len = 3 + 3 * (size_t)n;
    if (memo) {
        uint64_t h = 0;
        for (size_t i = 0; i < len; i++) {
            uint64_t bits;
            memcpy(&bits, &key[i], sizeof(bits));
            h = (h ^ bits) * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing */
        }
        s = &memo->maxmin[h >> 58];
        if (s->used && memcmp(s->key, key, len * sizeof(key[0])) == 0) {
            *finish = s->finish;
            return SPSIM_OK;
        }
    }
    double makespan = 0;
    int rc = spsim_maxmin_run(cap, 2, flows, n, &makespan, NULL);
    *finish = flows[0].finish_s;
    if (rc == SPSIM_OK && s) {
        memcpy(s->key, key, len * sizeof(key[0]));
        s->finish = *finish;
        s->used = true;
    }
    return rc;
}

static int
collective(struct spsim_coll_memo *memo, const struct spsim_hardware *hw, enum spsim_coll_op op,
           uint32_t size, uint64_t stride, double bytes, struct spsim_coll_time *out)
{
    return memo_time(memo, hw, op, spsim_group_place(hw, size, stride), bytes, out);
}

/* The finish of a data-parallel transfer of times a + b (alone: `alone`) overlapped with the
 * last micro-batch's backward: it shares links with that backward's TP and CP collectives and
 * the pipeline's backward sends, bandwidth split by max-min fairness. */
static int
shared_finish(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
              const struct spsim_layer_summary *le, const struct shape *x,
              const struct spsim_comm_report *comm, double t_send, double layers,
              const struct spsim_coll_time *a, const struct spsim_coll_time *b, double alone,
              double *finish)
{
    bool on_nvlink = a->tier == SPSIM_TIER_NVLINK;
    /* Links of one GPU: its NVLink port (ring busbw) and its share of the node's NICs. */
    double cap[2] = {hw->nvlink.busbw_Bps[SPSIM_COLL_ALL_GATHER],
                     hw->nic_achievable_Bps * hw->nics_per_node / hw->gpus_per_node};
    struct spsim_flow flows[4];
    uint32_t n = 0;
    double dp_bytes = a->wire_bytes + b->wire_bytes;
    flows[n++] =
        (struct spsim_flow){.bytes = on_nvlink ? dp_bytes : a->network_bytes + b->network_bytes,
                            .max_rate = (a->wire_bytes + b->wire_bytes) /
                                        spsim_max_d(alone - a->latency_s - b->latency_s, 1e-12),
                            .nres = 1,
                            .res = {on_nvlink ? 0u : 1u}};
    double tp_bytes = layers * le->layer.tp_bwd_wire_bytes;
    if (tp_bytes > 0)
        flows[n++] =
            (struct spsim_flow){.bytes = tp_bytes,
                                .max_rate = cap[0],
                                .nres = 1,
                                .res = {le->tp_group.per_domain >= le->tp_group.size ? 0u : 1u}};
    if (x->p > 1 && t_send > 0)
        flows[n++] = (struct spsim_flow){.bytes = (double)comm->pp_message_bytes * x->v,
                                         .max_rate = cap[1],
                                         .nres = 1,
                                         .res = {1u}};
    double cp_bytes = layers * le->layer.cp_bwd_wire_bytes;
    if (cp_bytes > 0) /* the CP group's backward exchanges (dp·cp ranks share the links) */
        flows[n++] = (struct spsim_flow){.bytes = cp_bytes,
                                         .max_rate = cap[le->layer.cp_network ? 1 : 0],
                                         .nres = 1,
                                         .res = {le->layer.cp_network ? 1u : 0u}};
    double first_done = 0;
    int rc = memo_maxmin(memo, cap, flows, n, &first_done);
    *finish = first_done + a->latency_s + b->latency_s;
    return rc;
}

/* The parameter AllGather after the step (distributed optimizer, optim_grads): exposed, or
 * with --overlap-param-gather behind the next iteration's first forward of the stage. */
static double
param_gather_exposed(const struct spsim_parallel *par, const struct stage_time *crit, double ag)
{
    return par->overlap_param_gather ? spsim_max_d(0.0, ag - crit->fwd_wall) : ag;
}

/*
 * Megatron-FSDP's exposed data-parallel time (megatron_fsdp.py), optim_grads (2) and
 * optim_grads_params (3). Every micro-batch's gradients are reduce-scattered beside its
 * backward (shared_finish), m times. Level 2 gathers the updated weights once (see
 * param_gather_exposed). Level 3 gathers each layer's bf16 weights before its forward and again
 * before its backward, prefetched: the next layer's gather runs beside this layer's pass, so
 * it shows by max(0, T_AG − pass) for L/p − 1 layers, and the first layer's gather of each
 * pass (nothing before it to hide behind) in full.
 */
static int
zero_exposed(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
             const struct spsim_parallel *par, const struct spsim_layer_summary *le,
             const struct shape *x, const struct spsim_comm_report *comm,
             const struct stage_time *crit, double t_send, double *exposed, double *busy_nv,
             double *busy_net)
{
    uint32_t D = (uint32_t)x->dc;
    double grads = (double)comm->dp_grad_bytes, mb = (double)x->micro;
    double weights =
        grads / (double)grad_bytes(par) * 2.0 - (double)fp8_gather_saved(par, le, x->lps);
    double unit = 2.0 * (double)le->params_layer - (double)fp8_gather_saved(par, le, 1);
    struct spsim_coll_time a, ag, none = {0};
    int rc = collective(memo, hw, SPSIM_COLL_REDUCE_SCATTER, D, x->t, grads, &a);
    if (rc == SPSIM_OK)
        rc = collective(memo, hw, SPSIM_COLL_ALL_GATHER, D, x->t, par->zero >= 3 ? unit : weights,
                        &ag);
    double finish = 0;
    if (rc == SPSIM_OK)
        rc = shared_finish(memo, hw, le, x, comm, t_send, (double)crit->layers, &a, &none, a.time_s,
                           &finish);
    if (rc != SPSIM_OK)
        return rc;
    double rs = mb * spsim_max_d(0.0, finish - crit->bwd_window), gather, busy;
    if (par->zero >= 3) {
        double fwd = le->layer.fwd_s, bwd = le->layer.bwd_s + le->layer.recompute_s;
        double hidden = spsim_max_d(0.0, ag.time_s - fwd) + spsim_max_d(0.0, ag.time_s - bwd);
        gather = mb * (2.0 * ag.time_s + ((double)crit->layers - 1.0) * hidden);
        busy = mb * 2.0 * (double)crit->layers * ag.time_s;
    } else {
        gather = param_gather_exposed(par, crit, ag.time_s);
        busy = ag.time_s;
    }
    *(a.tier == SPSIM_TIER_NVLINK ? busy_nv : busy_net) += mb * a.time_s + busy;
    *exposed = rs + gather;
    return SPSIM_OK;
}

/* Parameters per bucket: --ddp-bucket-size, else max(40,000,000, 1,000,000·dp) over the data-
 * parallel group without CP (distributed_data_parallel.py). */
static uint64_t
bucket_params(const struct spsim_parallel *par, const struct shape *x)
{
    return par->ddp_bucket_size ? par->ddp_bucket_size
                                : spsim_max_u64(40000000ull, 1000000ull * x->d);
}

/* What the ranks' bucket plans share: the dp·cp group (placed once), the collective, the bytes
 * per parameter, the slowdown beside the backward's traffic, one chunk's pass of one
 * micro-batch, and the whole buffer's collective (an upper bound of any rank's). */
struct dp_plan {
    struct spsim_coll_memo *memo;
    const struct spsim_hardware *hw;
    struct spsim_group g;
    enum spsim_coll_op op;
    double per, share, slot, whole_s;
    double last_params, last_s; /* the latest collective's size and time: ranks repeat chunks */
};

static int
dp_coll_s(struct dp_plan *c, double params, double *s)
{
    struct spsim_coll_time ct;
    *s = 0;
    if (params <= 0)
        return SPSIM_OK;
    if (params == c->last_params) {
        *s = c->last_s;
        return SPSIM_OK;
    }
    int rc = memo_time(c->memo, c->hw, c->op, c->g, params * c->per, &ct);
    *s = ct.time_s * c->share;
    c->last_params = params;
    c->last_s = *s;
    return rc;
}

/* Pipeline rank r's chunks and buckets (rank 0 the only bucketed one, spsim_dp_rank). A rank
 * past the first with one chunk is skipped (*d->v = 0) when even the whole buffer's collective
 * would end before `beat`: its own is no longer (collective times grow with the bytes). */
static int
dp_rank_plan(struct dp_plan *c, const struct spsim_parallel *par,
             const struct spsim_layer_summary *le, const struct shape *x,
             const struct spsim_memory_report *mem, uint32_t r, double beat,
             struct spsim_dp_rank *d)
{
    double total = r == 0          ? (double)mem->parameters_first_stage
                   : r == x->p - 1 ? (double)mem->parameters_last_stage
                                   : (double)rank_built(x, r) * (double)le->params_layer;
    double plain = (double)(rank_built(x, r) / x->v) * (double)le->params_layer;
    double chunk0 = total - (x->v - 1.0) * plain, S = (double)bucket_params(par, x);
    *d = (struct spsim_dp_rank){
        .v = (uint32_t)x->v, .head = r * c->slot, .slot = c->slot, .group = (double)x->p};
    if (r > 0 && x->v == 1 && chunk0 <= (double)mem->parameters_per_gpu &&
        c->whole_s * c->share - d->head <= beat) {
        d->v = 0;
        return SPSIM_OK;
    }
    int rc = x->v > 1 ? dp_coll_s(c, plain, &d->chunk_s) : SPSIM_OK;
    uint64_t n = (uint64_t)ceil(chunk0 / S);
    if (rc != SPSIM_OK || r != 0 || n <= 1)
        return rc ? rc : dp_coll_s(c, chunk0, &d->chunk0_s);
    d->nbuckets = n;
    d->lin_buckets = (chunk0 - (double)le->params_embedding) / S;
    if ((rc = dp_coll_s(c, S, &d->bucket_s)))
        return rc;
    return dp_coll_s(c, chunk0 - (n - 1.0) * S, &d->last_s);
}

/* The bucketed reduction's exposed time (the latest of ranks 0, 1 and p − 1 past rank 0's last
 * backward) and, with --overlap-param-gather, the first forward's wait for its parameters
 * (`whole` holds the whole buffer's reduction and gather). */
static int
dp_buckets_exposed(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                   const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                   const struct shape *x, const struct spsim_memory_report *mem,
                   const struct stage_time *crit, double share, const double whole[2], double *grad,
                   double *param, uint32_t *nbuckets)
{
    const uint32_t ranks[3] = {0, x->p > 1 ? 1u : 0u, (uint32_t)x->p - 1};
    struct spsim_group g = spsim_group_place(hw, (uint32_t)x->dc, x->t);
    enum spsim_coll_op op =
        zero_level(par) >= 1 ? SPSIM_COLL_REDUCE_SCATTER : SPSIM_COLL_ALL_REDUCE;
    /* Gradients in their buffer's dtype; parameters gathered in bf16, 2 bytes each. */
    struct dp_plan rs = {
        memo, hw, g, op, (double)grad_bytes(par), share, crit->bwd_window / x->v, whole[0], -1, 0};
    struct dp_plan ag = {memo,     hw, g, SPSIM_COLL_ALL_GATHER, 2.0, 1.0, crit->fwd_wall / x->v,
                         whole[1], -1, 0};
    double finish = -INFINITY, wait = 0;
    for (uint32_t i = 0; i < 3; i++) {
        if (i > 0 && ranks[i] == ranks[i - 1])
            continue;
        struct spsim_dp_rank d;
        int rc = dp_rank_plan(&rs, par, le, x, mem, ranks[i], finish, &d);
        if (rc != SPSIM_OK)
            return rc;
        if (d.v)
            finish = spsim_max_d(finish, spsim_grad_reduce_finish(&d));
        if (i == 0)
            *nbuckets = d.nbuckets ? (uint32_t)spsim_min_u64(d.nbuckets, UINT32_MAX) : 1;
        if (!par->overlap_param_gather)
            continue;
        if ((rc = dp_rank_plan(&ag, par, le, x, mem, ranks[i], wait, &d)))
            return rc;
        if (d.v)
            wait = spsim_max_d(wait, spsim_param_gather_wait(&d));
    }
    *grad = finish;
    *param = wait;
    return SPSIM_OK;
}

/* Exposed time of the data-parallel reduction over the dp·cp group. Overlapped with the last
 * micro-batch's backward (Megatron --overlap-grad-reduce) bucket by bucket (buckets.c), at the
 * rate the links leave it beside that backward's traffic (shared_finish). */
static int
dp_exposed(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
           const struct spsim_parallel *par, const struct spsim_layer_summary *le,
           const struct shape *x, const struct spsim_comm_report *comm,
           const struct spsim_memory_report *mem, const struct stage_time *crit, double t_send,
           struct spsim_time_report *tr, double *busy_nv, double *busy_net)
{
    double *exposed = &tr->dp_exposed_s;
    *exposed = 0;
    if (x->dc <= 1)
        return SPSIM_OK;
    if (zero_level(par) >= 2)
        return zero_exposed(memo, hw, par, le, x, comm, crit, t_send, exposed, busy_nv, busy_net);
    double grads = (double)comm->dp_grad_bytes;
    double weights =
        (grad_bytes(par) == 4 ? grads / 2 : grads) - (double)fp8_gather_saved(par, le, x->lps);
    uint32_t D = (uint32_t)x->dc;
    struct spsim_coll_time a, b = {0};
    int rc;
    if (zero_level(par) >= 1) {
        if ((rc = collective(memo, hw, SPSIM_COLL_REDUCE_SCATTER, D, x->t, grads, &a)) ||
            (rc = collective(memo, hw, SPSIM_COLL_ALL_GATHER, D, x->t, weights, &b)))
            return rc;
    } else if ((rc = collective(memo, hw, SPSIM_COLL_ALL_REDUCE, D, x->t, grads, &a))) {
        return rc;
    }
    double alone = a.time_s + b.time_s;
    *(a.tier == SPSIM_TIER_NVLINK ? busy_nv : busy_net) += alone;
    tr->dp_buckets = 1;
    tr->param_gather_exposed_s = b.time_s; /* after the step unless --overlap-param-gather */
    if (!par->overlap_grad_reduce) {
        *exposed = alone;
        return SPSIM_OK;
    }
    /* The reduction shares the links with the last backward's traffic: its rate there. */
    double finish = 0, grad = 0, gather = 0;
    struct spsim_coll_time none = {0};
    if ((rc = shared_finish(memo, hw, le, x, comm, t_send, (double)crit->layers, &a, &none,
                            a.time_s, &finish)) ||
        (rc = dp_buckets_exposed(
             memo, hw, par, le, x, mem, crit, spsim_max_d(1.0, finish / a.time_s),
             (const double[2]){a.time_s, b.time_s}, &grad, &gather, &tr->dp_buckets)))
        return rc;
    /* Without --overlap-param-gather the AllGather runs after the step, synchronously
     * (distrib_optimizer.py), whatever the reduction overlapped. */
    tr->param_gather_exposed_s = par->overlap_param_gather ? gather : b.time_s;
    *exposed = spsim_max_d(0.0, grad) + tr->param_gather_exposed_s;
    return SPSIM_OK;
}

/* The experts' gradient reduction over the expert data-parallel group (moe_comm), added to the
 * data-parallel exposed time: whole, or with --overlap-grad-reduce beside the last
 * micro-batch's backward on its own (not sharing links with the dense reduction). */
static int
expert_dp_exposed(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                  const struct spsim_parallel *par, const struct shape *x,
                  const struct spsim_comm_report *comm, const struct stage_time *crit,
                  double *exposed, double *busy_nv, double *busy_net)
{
    if (x->edp <= 1 || comm->expert_dp_grad_bytes == 0)
        return SPSIM_OK;
    double grads = (double)comm->expert_dp_grad_bytes;
    uint64_t stride = (uint64_t)spsim_moe_etp(par) * par->ep;
    struct spsim_coll_time a, b = {0};
    int rc;
    if (zero_level(par) >= 1) {
        if ((rc = collective(memo, hw, SPSIM_COLL_REDUCE_SCATTER, (uint32_t)x->edp, stride, grads,
                             &a)) ||
            (rc = collective(memo, hw, SPSIM_COLL_ALL_GATHER, (uint32_t)x->edp, stride,
                             grads * 2.0 / (double)grad_bytes(par), &b)))
            return rc;
    } else if ((rc = collective(memo, hw, SPSIM_COLL_ALL_REDUCE, (uint32_t)x->edp, stride, grads,
                                &a))) {
        return rc;
    }
    double alone = a.time_s + b.time_s;
    *(a.tier == SPSIM_TIER_NVLINK ? busy_nv : busy_net) += alone;
    *exposed += par->overlap_grad_reduce ? spsim_max_d(0.0, alone - crit->bwd_window) : alone;
    return SPSIM_OK;
}

/* Point-to-point: in 1F1B's steady state every stage sends its output forward and its input
 * gradient backward once per micro-batch and model chunk, blocking (Megatron's
 * p2p_communication). Without SP the receiver re-gathers the [s, b, h] tensor from the t
 * scattered pieces. */
static int
pp_send_s(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
          const struct spsim_parallel *par, const struct spsim_layer_summary *le,
          const struct shape *x, const struct spsim_comm_report *comm, double *t_send)
{
    if (x->p <= 1)
        return SPSIM_OK;
    struct spsim_coll_time ct, ag = {0};
    int rc;
    if ((rc = collective(memo, hw, SPSIM_COLL_SEND_RECV, 2, x->t * x->dc,
                         (double)comm->pp_message_bytes, &ct)))
        return rc;
    if (!par->sp && x->t > 1 &&
        (rc = memo_time(memo, hw, SPSIM_COLL_ALL_GATHER, le->tp_group,
                        (double)le->layer.message_bytes, &ag)))
        return rc;
    *t_send = ct.time_s + ag.time_s;
    return SPSIM_OK;
}

/* The first and last stages all-reduce the shared word embedding's fp32 gradient
 * (Megatron finalize_model_grads: _allreduce_word_embedding_grads, after the DP gradient
 * reduction has finished), on the critical path: its own term, not part of the DP one. */
static int
tied_embedding_sync(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                    const struct spsim_model_shape *m, const struct spsim_layer_summary *le,
                    const struct shape *x, struct spsim_time_report *tr, double *busy_nv,
                    double *busy_net)
{
    if (x->p <= 1 || !(m->tied_embeddings || m->mtp_layers))
        return SPSIM_OK;
    struct spsim_coll_time e;
    double bytes = 4.0 * (double)le->padded_vocab * m->hidden / x->t;
    int rc = collective(memo, hw, SPSIM_COLL_ALL_REDUCE, 2, x->t * x->dc * (x->p - 1), bytes, &e);
    if (rc)
        return rc;
    tr->tied_embedding_allreduce_s = e.time_s;
    *(e.tier == SPSIM_TIER_NVLINK ? busy_nv : busy_net) += e.time_s;
    return SPSIM_OK;
}

/*
 * FP8 delayed scaling (TE DelayedScaling, reduce_amax on). Megatron wraps a model chunk's
 * whole forward in one fp8 autocast for delayed scaling (transformer_block.py, the outer
 * quantization context); when it closes TE all-reduces (MAX) in one buffer the fp32 amaxes of
 * every FP8 tensor the chunk quantized, 3 per GEMM (input, weight, output), and after the
 * chunk's backward (its first module's, reduce_and_update_bwd_fp8_tensors) the 2 per GEMM of
 * the gradients (pytorch/quantization.py reduce_and_update_fp8_tensors, the fused history and
 * scale update after it). The group is Megatron's amax reduction group, TP×DP×CP
 * (parallel_state.get_amax_reduction_group(with_context_parallel=True); contiguous ranks,
 * pipeline outermost). The all-reduce is issued on the compute stream: on the critical path,
 * once per micro-batch and model chunk of the critical stage.
 */
static int
fp8_amax_sync(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
              const struct spsim_layer_summary *le, const struct shape *x,
              const struct stage_time *crit, struct spsim_time_report *tr, double *busy_nv,
              double *busy_net)
{
    uint64_t group = x->t * x->dc; /* dc = dp·cp */
    if (group <= 1 || le->fp8_gemms_layer == 0)
        return SPSIM_OK;
    double gemms = (double)le->fp8_gemms_layer * (double)crit->layers / (double)x->v;
    struct spsim_coll_time f, b;
    int rc = collective(memo, hw, SPSIM_COLL_ALL_REDUCE, (uint32_t)group, 1, 12.0 * gemms, &f);
    if (rc == SPSIM_OK)
        rc = collective(memo, hw, SPSIM_COLL_ALL_REDUCE, (uint32_t)group, 1, 8.0 * gemms, &b);
    if (rc)
        return rc;
    double times = (double)x->micro * (double)x->v;
    tr->fp8_amax_allreduce_s = times * (f.time_s + b.time_s);
    *(f.tier == SPSIM_TIER_NVLINK ? busy_nv : busy_net) += tr->fp8_amax_allreduce_s;
    return SPSIM_OK;
}

/*
 * Aux-loss-free balancing (expert_bias: Megatron moe_router_enable_expert_bias, DeepSeek-V3).
 * After the gradient reduction, finalize_model_grads' _update_router_expert_bias stacks the
 * local_tokens_per_expert of every MoE router the rank holds (fp32 [E] each, router.py; all
 * its model chunks, MoE MTP layers included) and get_updated_expert_bias (moe_utils.py)
 * all-reduces the stack in one call over TP×DP×CP (get_tensor_and_data_parallel_group(
 * with_context_parallel=True): contiguous ranks, pipeline outermost) on the compute stream,
 * before the optimizer step: once per iteration, exposed, on the critical stage.
 */
static int
expert_bias_sync(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                 const struct spsim_layer_summary *le, const struct shape *x,
                 struct spsim_time_report *tr, double *busy_nv, double *busy_net)
{
    uint64_t group = x->t * x->dc, routers = rank_moe_layers(le, x, tr->critical_stage);
    if (group <= 1 || routers == 0)
        return SPSIM_OK;
    double bytes = 4.0 * (double)x->model->shape.experts * (double)routers;
    struct spsim_coll_time e;
    int rc = collective(memo, hw, SPSIM_COLL_ALL_REDUCE, (uint32_t)group, 1, bytes, &e);
    if (rc)
        return rc;
    tr->moe_expert_bias_allreduce_s = e.time_s;
    *(e.tier == SPSIM_TIER_NVLINK ? busy_nv : busy_net) += e.time_s;
    return SPSIM_OK;
}

/* MLA with SP: the duplicated down-projections' and latent norms' gradients (marked
 * sequence_parallel) are summed over TP once per iteration, after the backward, in one
 * coalesced all-reduce (finalize_model_grads._allreduce_non_tensor_model_parallel_grads), on
 * the main gradients (grad_bytes) of the critical stage's layers; with them the routers' of
 * its MoE layers (router.py marks the router weight sequence_parallel: each TP rank's gradient
 * comes from its sequence shard). */
static int
mla_grad_sync(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
              const struct spsim_parallel *par, const struct spsim_layer_summary *le,
              const struct shape *x, const struct stage_time *crit, struct spsim_time_report *tr,
              double *busy_nv, double *busy_net)
{
    struct spsim_coll_time e;
    double moe_layers = x->moe ? (double)(crit->layers - rank_dense(x, tr->critical_stage)) : 0;
    double params = (double)le->params_tp_synced * (double)crit->layers +
                    (double)le->params_router_tp_synced * moe_layers;
    double bytes = (double)grad_bytes(par) * params;
    int rc = collective(memo, hw, SPSIM_COLL_ALL_REDUCE, x->t, 1, bytes, &e);
    if (rc)
        return rc;
    tr->dp_exposed_s += e.time_s;
    *(e.tier == SPSIM_TIER_NVLINK ? busy_nv : busy_net) += e.time_s;
    return SPSIM_OK;
}

/* Optimizer step, memory-bound. Megatron's step (optimizer.py): the gradient norm for clipping
 * reads every fp32 main gradient (4 B); fused Adam (apex/TE) reads the gradient (4), reads and
 * writes the fp32 master weight and both moments (24) and writes the bf16 weight (2);
 * zero_grad_buffer then clears the fp32 gradients (4). The distributed optimizer does the Adam
 * part on 1/D of the parameters (D = dp·cp). */
double
spsim_optimizer_step_s(const struct spsim_hardware *hw, const struct spsim_parallel *par,
                       double params, double D)
{
    double g = (double)grad_bytes(par);
    uint32_t z = zero_level(par);
    /* Sharded gradients (2, 3) are read and cleared as shards; sharded weights (3) written so.
     * 16-bit gradients are first copied to the optimizer's fp32 gradients (read g, write 4),
     * which Adam reads (4). */
    double grads = z >= 2 ? g * params / D : g * params;
    double coef = g == 4 ? 28.0 : g + 32.0;
    double adam = coef * params / (z >= 1 ? D : 1.0) + (z >= 3 ? 2.0 * params / D : 2.0 * params);
    double opt_bytes = grads + adam + grads;
    return opt_bytes / hw->hbm_achievable_Bps;
}

/* The D depths' work per micro-batch on the last stage (mtp_layer); an MoE MTP layer counts
 * among the stage's MoE layers (its token exchanges, ep_exposed_s). */
static void
mtp_time(const struct spsim_layer_summary *le, const struct shape *x, struct stage_time *s)
{
    double D = x->model->shape.mtp_layers;
    add_block(s, &le->embedding, D);
    add_block(s, &le->mtp, D);
    add_block(s, mtp_layer(le, x), D);
    add_block(s, &le->output, D);
    if (mtp_layer(le, x) == &le->layer)
        s->layers += x->model->shape.mtp_layers;
}

/* Per micro-batch work of pipeline rank r: its layers, the embedding on rank 0 and the output
 * layer on rank p − 1. `layers` keeps the last layer block summed, for ranks that build as
 * many layers (every rank of an even split). */
static void
rank_time(const struct spsim_layer_summary *le, const struct shape *x, uint32_t r,
          const double replayed_offload[2], struct stage_time *layers, struct stage_time *s)
{
    uint64_t n = rank_built(x, r);
    if (x->mixed) {
        /* An MoE model's MoE and dense layers (no recompute method, no offload: moe.c). */
        uint64_t dense = rank_dense(x, r);
        *layers = (struct stage_time){.layers = n};
        add_layers(layers, &le->layer, (double)(n - dense), (double)(n - dense));
        add_layers(layers, &le->dense, (double)dense, (double)dense);
    } else if (layers->layers != n || layers->wall == 0) {
        /* The recompute phase on the replayed layers (fewer with the block method; uneven
         * splits have no method, spsim_parallel_check); the offload stall on each. */
        double replayed = x->plan->even ? replayed_offload[0] : (double)n;
        *layers = (struct stage_time){.layers = n};
        add_layers(layers, &le->layer, (double)n, replayed);
        layers->offload = replayed_offload[1];
        layers->wall += layers->offload;
    }
    *s = *layers;
    if (r == 0)
        add_block(s, &le->embedding, 1);
    if (r == x->p - 1)
        add_block(s, &le->output, 1);
    if (r == x->p - 1 && le->params_mtp)
        mtp_time(le, x, s);
}

/* The rank that sets the pace (the first of the slowest, ranks in spsim_stage_candidates'
 * order) and the mean stage time: with a layout every rank's, else rank 0's, rank p − 1's and
 * the p − 2 middle ranks' (which build the same layers). */
static uint32_t
critical_stage(const struct spsim_layer_summary *le, const struct shape *x,
               const double replayed_offload[2], struct stage_time *crit, double *avg)
{
    /* Evenly split, a middle rank's work is rank 0's without the embedding: never slower. */
    uint32_t best = 0, n = candidate_count(
                           x, x->plan->even && x->p > 2 ? 2 : spsim_stage_ncandidates(x->plan));
    double walls[3] = {0};
    struct stage_time layers = {0}, s;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = candidate_rank(x, i);
        rank_time(le, x, r, replayed_offload, &layers, &s);
        if (i < 3)
            walls[i] = s.wall;
        if (i == 0 || s.wall > crit->wall) {
            *crit = s;
            best = r;
        }
    }
    if (n == 2 && x->p > 2)
        walls[2] = layers.wall;
    if (x->p == 1) {
        *avg = walls[0];
    } else if (!x->plan->nlayout && !x->bf16) {
        *avg = (walls[0] + walls[1] + (x->p - 2.0) * (x->p > 2 ? walls[2] : 0)) / x->p;
    } else {
        double sum = 0;
        for (uint32_t r = 0; r < x->p; r++) {
            rank_time(le, x, r, replayed_offload, &layers, &s);
            sum += s.wall;
        }
        *avg = sum / x->p;
    }
    return best;
}

/*
 * Point-to-point sends per micro-batch on the critical stage: 2v blocking sends (1F1B), or with
 * the interleaved schedule's overlap_p2p_comm (Megatron's default with vpp > 1, schedules.py
 * forward_backward_pipelining_with_interleaving) async isend/irecv whose wait comes before the
 * chunk after next: each steady-state transfer runs beside one model chunk's forward or
 * backward. As for every overlapped collective (timing.c overlapped_s), NCCL's kernel holds one
 * SM per channel while it runs, so the chunk computes on the others meanwhile: the pair takes
 * max(T, min(c/(1 − k/S), c + T·k/S)), the send showing by that less the chunk's c. The fill
 * and drain sends lie on the dependency chain from rank to rank and stay whole in the bubble
 * (compose_time).
 */
static double
p2p_exposed_s(const struct spsim_hardware *hw, const struct spsim_parallel *par,
              const struct shape *x, const struct stage_time *crit, double t_send, double *hidden)
{
    double blocking = 2.0 * (double)x->v * t_send;
    *hidden = 0;
    if (x->v == 1 || par->no_overlap_p2p || t_send == 0)
        return blocking;
    double k = (double)hw->nccl_channels / hw->sm_count, exposed = 0;
    const double chunk[2] = {crit->fwd_wall / x->v, crit->bwd_window / x->v};
    for (int i = 0; i < 2; i++)
        exposed += spsim_max_d(t_send, spsim_min_d(chunk[i] / (1.0 - k), chunk[i] + t_send * k)) -
                   chunk[i];
    exposed *= (double)x->v;
    *hidden = blocking - exposed;
    return exposed;
}

/* --overlap-moe-expert-parallel-comm: the critical stage's paired micro-batches leave the MoE
 * layer's pair exposure (ep_overlap.c), the warm-up forwards and cool-down backwards their
 * exchanges whole. The bubble keeps the whole exchanges: fill and drain run alone. */
static void
ep_a2a_overlap(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
               const struct shape *x, double moe_layers, struct spsim_time_report *tr)
{
    double pairs = spsim_ep_overlap_paired(x->micro, x->p, x->v, tr->critical_stage);
    double pair = le->layer.ep_pair_exposed_s[par->delay_wgrad_compute ? 1 : 0];
    double whole = tr->ep_exposed_s;
    tr->ep_exposed_s = moe_layers * ((x->micro - pairs) * le->layer.ep_exposed_s + pairs * pair);
    tr->ep_a2a_hidden_s = whole - tr->ep_exposed_s;
}

/*
 * Host launches (engine/host.c): one layer's launches and, when some block is host-bound, the
 * critical stage's wall beyond its GPU time. A block's phase wall is its computation, its
 * exposed TP, CP and MoE exchanges and its host excess (timing.c fold_step, host.c), so the
 * excess is what the stage's wall holds beyond the other per-micro-batch lines; configurations
 * without a launch figure pay one branch.
 */
static void
host_time(const struct spsim_hardware *hw, const struct spsim_layer_summary *le, double mb,
          const struct stage_time *crit, struct spsim_time_report *tr)
{
    tr->layer_forward_launches = le->layer_forward_launches;
    tr->layer_backward_launches = le->layer_backward_launches;
    tr->kernel_launch_us = hw ? hw->kernel_launch_us : 0;
    if (!le->host_bound)
        return;
    double others = crit->fwd + crit->bwd + crit->rec + crit->exposed + crit->cp_exposed +
                    crit->offload +
                    (tr->ep_exposed_s + tr->ep_a2a_hidden_s + tr->moe_aux_allreduce_s) / mb;
    tr->host_exposed_s = spsim_max_d(0.0, mb * (crit->wall - others));
    tr->iteration_s += tr->host_exposed_s;
}

static int
compose_time(struct spsim_coll_memo *memo, const struct spsim_model *model,
             const struct spsim_hardware *hw, const struct spsim_parallel *par,
             const struct spsim_layer_summary *le, const struct shape *x,
             const struct spsim_memory_report *mem, const struct spsim_comm_report *comm,
             struct spsim_time_report *tr)
{
    const struct spsim_model_shape *m = &model->shape;
    double t_send = 0;
    int rc = pp_send_s(memo, hw, par, le, x, comm, &t_send);
    if (rc)
        return rc;
    double p2p = 2.0 * (double)x->v * t_send, avg = 0;
    struct stage_time critical = {0};
    const struct stage_time *crit = &critical;
    const double replayed_offload[2] = {
        par->recompute == SPSIM_RECOMPUTE_FULL ? mem->recomputed_layers_per_stage : (double)x->lps,
        offload_exposed(hw, par, le, x, tr)};
    tr->critical_stage = critical_stage(le, x, replayed_offload, &critical, &avg);
    double mb = (double)x->micro, hidden = 0;
    double p2p_steady = p2p_exposed_s(hw, par, x, crit, t_send, &hidden);
    tr->pp_p2p_hidden_s = mb * hidden;
    tr->microbatch_s = crit->wall + p2p_steady;
    tr->forward_s = mb * crit->fwd;
    tr->backward_s = mb * crit->bwd;
    tr->recompute_s = mb * crit->rec;
    tr->tp_exposed_s = mb * crit->exposed;
    tr->cp_exposed_s = mb * crit->cp_exposed;
    tr->offload_exposed_s = mb * crit->offload;
    /* Bubble (Narayanan et al. 2021): (p − 1)/v micro-batch slots of fill and drain. */
    tr->pp_bubble_s = (x->p - 1.0) / x->v * (avg + p2p);
    tr->pp_p2p_s = mb * p2p_steady;

    double busy_nv = 0, busy_net = 0;
    double tp_busy = mb * crit->tp_comm + (x->p - 1.0) / x->v * crit->tp_comm;
    *(le->tp_group.per_domain >= le->tp_group.size ? &busy_nv : &busy_net) += tp_busy;
    *(comm->pp_tier == SPSIM_TIER_NVLINK ? &busy_nv : &busy_net) += (mb + x->p - 1.0) * p2p;
    if (x->c > 1)
        *(le->layer.cp_network ? &busy_net : &busy_nv) +=
            mb * crit->cp_comm + (x->p - 1.0) / x->v * crit->cp_comm;
    if (x->moe) {
        /* The MoE layers' token exchanges (in the stage's wall time already). */
        double moe_layers = (double)(crit->layers - rank_dense(x, tr->critical_stage));
        tr->ep_exposed_s = mb * moe_layers * le->layer.ep_exposed_s;
        /* The routers' tokens-per-expert AllReduces (in the stage's wall, not in cp_exposed). */
        tr->moe_aux_allreduce_s = mb * moe_layers * le->layer.moe_aux_exposed_s;
        if (par->moe_a2a_overlap)
            ep_a2a_overlap(par, le, x, moe_layers, tr);
        *(le->layer.ep_network ? &busy_net : &busy_nv) +=
            (mb + (x->p - 1.0) / x->v) * moe_layers * le->layer.ep_comm_s;
    }
    if ((rc = dp_exposed(memo, hw, par, le, x, comm, mem, crit, t_send, tr, &busy_nv, &busy_net)))
        return rc;
    if (x->moe && (rc = expert_dp_exposed(memo, hw, par, x, comm, crit, &tr->dp_exposed_s, &busy_nv,
                                          &busy_net)))
        return rc;
    if ((rc = tied_embedding_sync(memo, hw, m, le, x, tr, &busy_nv, &busy_net)))
        return rc;
    if ((le->params_tp_synced | le->params_router_tp_synced) &&
        (rc = mla_grad_sync(memo, hw, par, le, x, crit, tr, &busy_nv, &busy_net)))
        return rc;
    if (par->dtype == SPSIM_DTYPE_FP8 && par->fp8_recipe == SPSIM_FP8_DELAYED &&
        (rc = fp8_amax_sync(memo, hw, le, x, crit, tr, &busy_nv, &busy_net)))
        return rc;
    if (x->moe && m->expert_bias &&
        (rc = expert_bias_sync(memo, hw, le, x, tr, &busy_nv, &busy_net)))
        return rc;
    tr->optimizer_s =
        spsim_optimizer_step_s(hw, par, (double)mem->parameters_per_gpu, (double)x->dc);
    tr->iteration_s = tr->forward_s + tr->backward_s + tr->recompute_s + tr->tp_exposed_s +
                      tr->cp_exposed_s + tr->pp_bubble_s + tr->pp_p2p_s +
                      (tr->dp_exposed_s + tr->tied_embedding_allreduce_s) + tr->optimizer_s +
                      tr->offload_exposed_s + tr->ep_exposed_s + tr->fp8_amax_allreduce_s +
                      tr->moe_aux_allreduce_s + tr->moe_expert_bias_allreduce_s;
    host_time(hw, le, mb, crit, tr);
    tr->layer_forward_s = le->layer.fwd_s;
    tr->layer_backward_s = le->layer.bwd_s + le->layer.recompute_s;
    tr->nvlink_busy_s = busy_nv;
    tr->network_busy_s = busy_net;
    return SPSIM_OK;
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
    double q = (double)m->heads * m->head_dim, logits = 2.0 * m->hidden * (double)le->padded_vocab;
    tr->model_flops_megatron = 3.0 * tokens * (per_token - x->L * 2.0 * s * q);
    tr->model_flops_narayanan2021 = tokens * (4.0 * (per_token - logits) + 3.0 * logits);
}

/* The three model-FLOPs formulas for a model with MoE, MLA or MTP layers, layer kind by kind. */
static void
sparse_model_flops(const struct spsim_model *model, const struct spsim_layer_summary *le,
                   const struct spsim_parallel *par, struct spsim_time_report *tr)
{
    struct spsim_flops_per_token f;
    double s = (double)le->cfg.s, tokens = (double)par->gbs * s;
    spsim_model_flops_per_token(model, s, (double)le->padded_vocab, &f);
    tr->model_flops = 3.0 * tokens * f.model;
    tr->model_flops_megatron = 3.0 * tokens * f.megatron;
    tr->model_flops_narayanan2021 = tokens * (4.0 * (f.model - f.logits) + 3.0 * f.logits);
}

static void
compose_flops(const struct spsim_model *model, const struct spsim_parallel *par,
              const struct spsim_layer_summary *le, const struct shape *x, uint32_t gpus,
              const double peak[2], uint64_t replayed_layers, struct spsim_time_report *tr)
{
    const struct spsim_model_shape *m = &model->shape;
    double h = m->hidden, d = m->head_dim, q = (double)m->heads * d, kv = (double)m->kv_heads * d;
    double gate = m->mlp == SPSIM_MLP_SWIGLU ? 2 : 1, s = (double)le->cfg.s;
    /* Model FLOPs (paper Appendix A, Eq. 7, generalised): per token and layer, 2 FLOPs per
     * weight of QKV, projection, FC1 (gate and up for SwiGLU) and FC2, plus 4·s·q for QKᵀ and
     * attention·V without causal masking; 2·h·v for the logits; backward twice forward. For
     * the GPT layer: 72·B·L·s·h²·(1 + s/(6h) + v/(12hL)). */
    double per_token = x->L * (2.0 * (h * (q + 2 * kv) + q * h + h * m->ffn_hidden * gate +
                                      (double)m->ffn_hidden * h) +
                               4.0 * s * q) +
                       2.0 * h * (double)le->padded_vocab;
    tr->model_flops = 3.0 * (double)par->gbs * s * per_token;
    model_flops_named(m, le, x, par, per_token, tr);
    if (m->experts | m->kv_lora_rank | m->mtp_layers | m->window)
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
    if (le->params_mtp) { /* the D depths (mtp_time) */
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
    *x = (struct shape){.L = m->layers, .p = par->pp, .v = par->vpp, .d = par->dp, .t = par->tp};
    x->micro = par->gbs / ((uint64_t)par->mbs * par->dp);
    x->c = par->cp;
    x->dc = x->d * x->c;
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
    memset(r, 0, list);
    memset((char *)r + after, 0, sizeof(*r) - after);
    r->config = *par;
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
    if (m->experts) { /* the dense path pays this one branch */
        x.moe = true;
        x.mixed = le->has_dense;
        x.edp = spsim_moe_edp(par);
        x.ep_group = par->moe_dispatcher == SPSIM_MOE_ALLTOALL
                         ? par->ep
                         : (uint64_t)par->ep * spsim_moe_etp(par);
        x.dense_total = m->layers - model->moe_layers;
        r->config.etp = spsim_moe_etp(par);
    } else if (le->has_dense) { /* first_last_layers_bf16 (bf16_layers.c) */
        x.mixed = x.bf16 = true;
        plan.bf16_start = par->bf16_layers_start;
        plan.bf16_end = par->bf16_layers_end;
        x.dense_total = spsim_bf16_layers_total(m->layers, plan.bf16_start, plan.bf16_end);
    }
    if (par->overlap_grad_reduce && x.dc > 1) /* resolved: Megatron's default bucket size */
        r->config.ddp_bucket_size = bucket_params(par, &x);
    bool ok = true;
    rc = compose_memory(m, hw, par, le, &x, &r->memory, &ok);
    if (rc == SPSIM_OK)
        compose_comm(hw, par, le, &x, m->hidden, &r->memory, &r->comm, &ok);
    if (rc == SPSIM_OK && !ok)
        return spsim_fail(err, SPSIM_ERANGE,
                          "parallel config: a byte count of this configuration does not fit in "
                          "64 bits (reduce seq, mbs or gbs)");
    if (rc == SPSIM_OK && hw) {
        rc = compose_time(memo, model, hw, par, le, &x, &r->memory, &r->comm, &r->time);
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
