/* Memory per GPU: the weights, gradients, optimizer state and activations of every pipeline
 * rank that can be the most loaded, the first stage's totals in the six activation modes, and
 * what the GPU leaves to tensors. */
#include "config.h"

#include <string.h>

#include "compose.h"
#include "pp_schedule.h"
#include "optimizer.h"

/*
 * Model chunks whose activations pipeline rank r holds at peak. 1F1B (PipeDream-Flush): rank r
 * runs p − r forward passes before its first backward, so min(p − r, micro-batches) are in
 * flight, each of L/p layers. Interleaved (Megatron-LM schedules.py): rank r warms up with
 * 2(p − r − 1) + (v − 1)g chunk forwards (g = p micro-batches per group by default) and holds
 * one more in steady state, each of L/(p·v) layers; for r = 0 and g = p that is
 * L(1 + (p − 1)/(p·v)) layers, the paper's factor.
 */
static uint64_t
inflight_chunks(const struct shape *x, uint64_t rank)
{
    if (x->schedule != SPSIM_PP_SCHEDULE_MEGATRON) /* zero-bubble, DualPipe: pp_schedule.c */
        return spsim_pp_schedule_inflight(x->schedule, x->p, rank, x->micro);
    if (x->v == 1)
        return spsim_min_u64(x->p - rank, x->micro);
    return spsim_min_u64(spsim_stage_warmup(x->plan, (uint32_t)rank, x->micro) + 1,
                         x->micro * x->v);
}

/*
 * Micro-batches whose embedding dropout mask rank 0 holds at peak: those whose forward has run
 * through its first model chunk (where the embedding is) and whose backward has not. 1F1B: the
 * p in flight (paper §4.3, sbhp/t). Interleaved (schedules.py get_schedule_table: forwards run
 * chunk by chunk in groups of g micro-batches, g = p by default, backwards in reverse chunk
 * order): the first chunk-0 backward is rank 0's backward (v − 1)g, so it follows
 * F = 2(p − 1) + (v − 1)g warm-up forwards and (v − 1)g + 1 steady ones; of those F, each
 * period of gv forwards runs chunk 0 g times, the rest min(F mod gv, g) times. From then on
 * each chunk-0 backward is matched by a chunk-0 forward. With g = p that is chunk 0 of the
 * first two groups, 2p. Megatron's estimate (theoretical_memory_usage.py) scales the p by its
 * interleaving penalty 1 + (p − 1)/(pv) instead, which is the mean over chunks, not chunk 0's
 * count.
 */
static uint64_t
embedding_inflight(const struct shape *x)
{
    /* The other schedules: rank 0's first chunk holds half its in-flight chunks (V shapes, and
     * DualPipe's forward direction, whose stage 0 is rank 0's), ZB-H1 all of them. */
    if (x->schedule != SPSIM_PP_SCHEDULE_MEGATRON)
        return x->schedule == SPSIM_PP_SCHEDULE_ZB_H1 ? inflight_chunks(x, 0)
                                                      : (inflight_chunks(x, 0) + 1) / 2;
    if (x->v == 1)
        return spsim_min_u64(x->p, x->micro);
    uint64_t g = x->plan->g, period = g * x->v, f = 2 * (x->p - 1) + 2 * (x->v - 1) * g + 1;
    return spsim_min_u64(f / period * g + spsim_min_u64(f % period, g), x->micro);
}

struct stage_memory {
    uint64_t params, trainable, weights, grads, optimizer, activations, total;
};

/* What a rank holds of its parameters: all of them, the routed experts' among them, one
 * transformer layer (an FSDP unit), and the root unit (rank_root_embedding/_output). */
struct stage_params {
    uint64_t all, expert, unit, root;
    struct spsim_muon_totals muon; /* Muon: the rank's 2-D weights and their work (rank_muon) */
};

/* `bytes` per parameter of p parameters, x of them the routed experts', sharded: the others
 * over the dp·cp ranks of the replica (all D, or D/R with HSDP: Megatron-FSDP's DP-Shard
 * buffers, hfsdp_helper_wbuf/gbuf with the outer sharding), the experts' over the expert
 * data-parallel ranks (the expert_dp mesh Megatron-FSDP shards them on, mcore_fsdp_adapter.py). */
static uint64_t
sharded_bytes(const struct stage_params *sp, uint64_t bytes, const struct shape *x, bool *ok)
{
    uint64_t D = x->di, E = x->moe ? x->edi : D;
    return spsim_add(ceil_div(spsim_mul(sp->all - sp->expert, bytes, ok), D),
                     ceil_div(spsim_mul(sp->expert, bytes, ok), E), ok);
}

/*
 * Megatron theoretical_memory_usage.py: 18 bytes per parameter (bf16 weight 2, fp32 main
 * gradient 4, fp32 master weight and Adam moments 12), or 6 + 12/D with the distributed
 * optimizer, which shards the 12 over the D = dp·cp ranks. Megatron-FSDP (megatron_fsdp.py):
 * optim_grads (2) also shards the gradient buffer, optim_grads_params (3) the bf16 weights;
 * a sharded buffer keeps the FSDP units (transformer layers) in flight unsharded: for
 * weights the unit computing and the one prefetched, for gradients the unit being produced and
 * the one in the reduce-scatter queue (2 units each). The root unit's parameters, outside every
 * FSDP unit, are gathered by their first forward and kept (param_and_grad_buffer.py: the
 * all-gather pipeline preserves non-unit buckets), whole in bf16 beside their shard.
 */
static void
fsdp_static(const struct stage_params *sp, const struct spsim_parallel *par, const struct shape *x,
            struct stage_memory *s, bool *ok)
{
    uint64_t g = grad_bytes(par);
    if (par->zero >= 3)
        s->weights =
            spsim_add(spsim_add(sharded_bytes(sp, 2, x, ok), spsim_mul3(sp->unit, 2, 2, ok), ok),
                      spsim_mul(sp->root, 2, ok), ok);
    s->grads = spsim_add(sharded_bytes(sp, g, x, ok), spsim_mul3(sp->unit, 2, g, ok), ok);
}

/* LoRA (finetune.c): the frozen base keeps its BF16 weights only; the adapters, BF16 weights
 * beside them, are what has gradients and optimizer state (peft/base.py freeze_model). */
static void
lora_static(uint64_t params, uint64_t lora, const struct spsim_parallel *par, const struct shape *x,
            struct stage_memory *s, bool *ok)
{
    bool fp32 = grad_bytes(par) == 4;
    s->params = params;
    s->trainable = lora;
    s->weights = spsim_mul(spsim_add(params, lora, ok), 2, ok);
    s->grads = spsim_mul(lora, fp32 ? 4 : 2, ok);
    uint64_t opt = spsim_mul(lora, spsim_optimizer_state_bytes(par, fp32 ? 4 : 2), ok);
    uint64_t D = opt_ranks(par, x);
    s->optimizer = par->zero || par->distributed_optimizer ? (opt + D - 1) / D : opt;
}

/* Muon's optimizer state (engine/optimizer.c): `muon` bytes per parameter of the 2-D weights it
 * steps, Adam's `adam` for the others (the embedding, output layer, norms, biases); the
 * layer-wise distributed optimizer shards whole weights over D = dp·cp, the routed experts'
 * over the expert data-parallel group (layer_wise_optimizer.py shard_params: bin-packed by
 * Newton-Schulz cost to even shards, taken here as exactly even). */
static uint64_t
muon_static(const struct stage_params *sp, const struct spsim_parallel *par, const struct shape *x,
            uint64_t adam, uint64_t muon, bool *ok)
{
    uint64_t ne = sp->all - sp->expert, mne = spsim_min_u64(sp->muon.params, ne);
    uint64_t me = spsim_min_u64(sp->muon.expert_params, sp->expert);
    uint64_t b_ne = spsim_add(spsim_mul(ne - mne, adam, ok), spsim_mul(mne, muon, ok), ok);
    uint64_t b_e = spsim_add(spsim_mul(sp->expert - me, adam, ok), spsim_mul(me, muon, ok), ok);
    if (!par->zero && !par->distributed_optimizer)
        return spsim_add(b_ne, b_e, ok);
    uint64_t D = opt_ranks(par, x), E = x->moe ? x->edi : D;
    return spsim_add((b_ne + D - 1) / D, (b_e + E - 1) / E, ok);
}

/*
 * The optimizer's CPU offload (Megatron-Core optimizer/cpu_offloading/hybrid_optimizer.py
 * @d98e8a64, built by optimizer/__init__.py with param_update_in_fp32=True over the
 * distributed optimizer's shard of bf16 parameters): of the shard, the first parameters up to
 * offload_fraction of its elements (_get_sub_optimizer_param_groups) are cloned to pinned host
 * memory as fp32 (.cpu().pin_memory(), .float()), stepped by torch's AdamW there (its exp_avg
 * and exp_avg_sq fp32) from an fp32 pinned gradient buffer (cpu_copy_map_grad: 4 + 8 + 4 =
 * 16 B on the host); the others keep an fp32 copy on the GPU (param_to_fp32_param) and TE's
 * FusedAdam's fp32 moments (12 B). The shard is over D = dp·cp, the routed experts' over their
 * data-parallel group, as the distributed optimizer's.
 */
static uint64_t
offload_sharded(const struct stage_params *sp, const struct shape *x, double fraction, double bytes,
                bool *ok)
{
    uint64_t D = x->di, E = x->moe ? x->edi : D; /* HSDP: the replica's shard */
    double ne = (double)(sp->all - sp->expert) * bytes * fraction;
    double e = (double)sp->expert * bytes * fraction;
    if (!(ne < 1.8e19 && e < 1.8e19))
        *ok = false;
    return spsim_add(((uint64_t)ne + D - 1) / D, ((uint64_t)e + E - 1) / E, ok);
}

static void
stage_static(const struct stage_params *sp, const struct spsim_parallel *par, const struct shape *x,
             struct stage_memory *s, bool *ok)
{
    /* D: the optimizer's shard (opt_ranks: the replica's D/R with HSDP, or all D with the
     * outer sharding); the FSDP buffers' test below is on the replica's ranks. */
    uint64_t D = opt_ranks(par, x), params = sp->all, expert = sp->expert;
    s->params = params;
    s->trainable = params;
    s->weights = spsim_mul(params, 2, ok);
    bool fp32 = grad_bytes(par) == 4;
    s->grads = fp32 ? spsim_mul(params, 4, ok) : spsim_mul(params, 2, ok);
    if (par->zero >= 2 && (x->di > 1 || (expert && x->edi > 1)))
        fsdp_static(sp, par, x, s, ok);
    /* 16-bit gradients: the optimizer keeps an fp32 copy of its gradients (Megatron's
     * dist_optimizer.md: fp16 parameters and gradients, 20 = 4 + 16 B per parameter), unless
     * TE's precision-aware FusedAdam reads them as they are (engine/optimizer.c). */
    uint64_t per = spsim_optimizer_state_bytes(par, fp32 ? 4 : 2);
    if (par->optimizer == SPSIM_OPTIMIZER_MUON) {
        s->optimizer = muon_static(sp, par, x, per, spsim_muon_state_bytes(fp32 ? 4 : 2), ok);
        return;
    }
    if (par->optimizer_cpu_offload) {
        s->optimizer =
            offload_sharded(sp, x, 1.0 - par->optimizer_offload_fraction, SPSIM_HDO_GPU_BYTES, ok);
        return;
    }
    uint64_t opt = spsim_mul(params, per, ok);
    s->optimizer = par->zero || par->distributed_optimizer ? (opt + D - 1) / D : opt;
    /* MoE: the experts' state is sharded over the expert data-parallel group instead
     * (distrib_optimizer.py builds their buffers over the expert-DP group). */
    if (expert && s->optimizer != opt) {
        uint64_t e = spsim_mul(expert, per, ok), E = x->edi;
        s->optimizer = (opt - e + D - 1) / D + (e + E - 1) / E;
    }
}

/* Per hybrid kind, a quantity of its totals (kept bytes) as compose.h's kinds index them. */
static void
hybrid_kept(const struct spsim_layer_summary *le, uint64_t kept[SPSIM_LAYER_KIND_COUNT])
{
    for (int k = 0; k < SPSIM_LAYER_KIND_COUNT; k++)
        kept[k] = k >= SPSIM_LAYER_MAMBA && le->hybrid_kinds >> k & 1
                      ? spsim_hybrid_totals(le, (enum spsim_layer_kind)k)->saved_bytes
                      : 0;
}

/* One MTP depth's layers' kept bytes: a hybrid model's MTP pattern, else the one layer. */
static uint64_t
mtp_layers_saved(const struct spsim_layer_summary *le, const struct shape *x, bool *ok)
{
    if (!x->hybrid)
        return mtp_layer(le, x)->saved_bytes;
    uint64_t kept[SPSIM_LAYER_KIND_COUNT], sum = 0;
    hybrid_kept(le, kept);
    for (int k = SPSIM_LAYER_MAMBA; k < SPSIM_LAYER_KIND_COUNT; k++)
        sum = spsim_add(sum, spsim_mul(mtp_kind(x, (enum spsim_layer_kind)k), kept[k], ok), ok);
    return sum;
}

/* The activations the D depths keep for backward (one micro-batch in flight on the last
 * stage, as the output block's). */
static uint64_t
mtp_saved(const struct spsim_layer_summary *le, const struct shape *x, bool *ok)
{
    uint64_t one = spsim_add(le->embedding.saved_bytes, le->mtp.saved_bytes, ok);
    one = spsim_add(one, mtp_layers_saved(le, x, ok), ok);
    one = spsim_add(one, le->output.saved_bytes, ok);
    return spsim_mul(x->model->shape.mtp_layers, one, ok);
}

/* TE's FP8 weight copies of rank r's quantized layers (not its BF16 ones, bf16_layers.c)
 * beside their BF16 weights; none with FP8 parameters (--fp8-param-gather: the FP8 tensors are
 * the weights). */
static void
add_fp8_weight_copies(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                      const struct shape *x, uint64_t r, struct stage_memory *s, bool *ok)
{
    uint64_t layers = rank_built(x, r) - (x->bf16 ? rank_dense(x, r) : 0);
    if (le->params_lora_layer && par->fp8_param_gather && le->fp8_weight_bytes_layer) {
        /* LoRA's frozen base under FP8 parameters: its quantized weights are built FP8
         * (Megatron-LM d98e8a64 fp8_utils.py:848,881 fp8_model_init; TE d0067d0da
         * module/base.py:1884 keeps the high-precision init value on the CPU), stored as TE's
         * copies are and never gathered: lora_static's 2 B of each become those bytes. */
        uint64_t bf16 = spsim_mul3(layers, le->fp8_weights_layer, 2, ok);
        s->weights =
            spsim_add(s->weights - bf16, spsim_mul(layers, le->fp8_weight_bytes_layer, ok), ok);
        return;
    }
    if (le->fp8_weight_bytes_layer == 0 || par->fp8_param_gather) /* the one test: not FP8 */
        return;
    if (x->hybrid) {
        for (int k = SPSIM_LAYER_MAMBA; k < SPSIM_LAYER_KIND_COUNT; k++)
            s->weights = spsim_add(s->weights,
                                   spsim_mul(rank_kind(x, r, (enum spsim_layer_kind)k),
                                             le->fp8_weight_bytes_hybrid[k], ok),
                                   ok);
        return;
    }
    s->weights = spsim_add(s->weights, spsim_mul(layers, le->fp8_weight_bytes_layer, ok), ok);
}

/* The activations rank r's decoder layers hold at its peak when its layers differ: an MoE
 * model's MoE and dense layers, or a hybrid model's kinds (moe.c). */
static uint64_t
mixed_held(const struct spsim_layer_summary *le, const struct shape *x, uint64_t r, bool *ok)
{
    uint64_t kept[SPSIM_LAYER_KIND_COUNT] = {le->layer.saved_bytes, le->dense.saved_bytes};
    if (x->hybrid)
        hybrid_kept(le, kept);
    if (x->schedule != SPSIM_PP_SCHEDULE_MEGATRON) /* its chunks, of the rank's mean chunk */
        return spsim_mul(spsim_moe_rank_held_bytes(x->model, x->plan, (uint32_t)r, 1, kept, ok),
                         inflight_chunks(x, r), ok) /
               x->v;
    return spsim_moe_rank_held_bytes(x->model, x->plan, (uint32_t)r, x->micro, kept, ok);
}

/* Rank r's activations: the layers it holds in flight, plus the embedding's dropout masks on
 * rank 0 and the output layer on rank p − 1. */
static uint64_t
rank_activations(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                 const struct shape *x, uint64_t r, bool *ok)
{
    uint64_t act = spsim_mul(rank_held(x, r), le->layer.saved_bytes, ok);
    if (x->mixed)
        act = mixed_held(le, x, r, ok);
    /* The embedding dropout masks of the micro-batches in flight (embedding_inflight). */
    if (r == 0)
        act = spsim_add(act, spsim_mul(le->embedding.saved_bytes, embedding_inflight(x), ok), ok);
    /* Paper §4.3: the last stage's final norm, output-layer input and fp32 logits,
     * 4sbh/t·(1 + v/h). */
    if (r == x->p - 1)
        act = spsim_add(act, spsim_add(le->output.saved_bytes, le->logits_working_bytes, ok), ok);
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

/*
 * --defer-embedding-wgrad-compute (Megatron-LM d98e8a64): the output layer appends its input
 * (input_parallel: [s/c, b, h], [s/(c·t), b, h] with SP) to embedding_activation_buffer in
 * forward (tensor_parallel/layers.py:1228-1232) and, in backward, the logits' gradient in the
 * input's 16-bit dtype ([s/c, b, v/t], :644 and :661-663) to grad_output_buffer, instead of
 * computing the weight gradient, for the first wgrad_deferral_limit micro-batches (0: all);
 * both lists are drained only after the last backward (schedules.py
 * finish_embedding_wgrad_compute, utils.py drain_embedding_wgrad_compute). The last stage's
 * peak is a micro-batch's loss (its 2 + 4 B a logit beside the 2 B a kept gradient holds), with
 * the gradients of the micro-batches before it kept: min(limit, m - 1) of them.
 */
static uint64_t
deferred_wgrad_bytes(const struct spsim_model_shape *m, const struct spsim_parallel *par,
                     const struct spsim_layer_summary *le, const struct shape *x, bool *ok)
{
    if (!par->defer_embedding_wgrad_compute || x->micro == 0)
        return 0;
    uint64_t limit = par->wgrad_deferral_limit ? par->wgrad_deferral_limit : x->micro;
    uint64_t kept = spsim_min_u64(limit, x->micro - 1);
    uint64_t t = le->cfg.t ? le->cfg.t : 1, c = le->cfg.cp > 1 ? le->cfg.cp : 1;
    uint64_t rows = le->cfg.sp && t > 1 ? le->cfg.s / (c * t) : le->cfg.s / c;
    uint64_t input = spsim_mul3(spsim_mul(rows, le->cfg.b, ok), m->hidden, 2, ok);
    /* the gradient's bytes are the 16-bit logits' (summary.c logits_working_bytes) */
    return spsim_mul(kept, spsim_add(le->logits_working_bytes, input, ok), ok);
}

/* The first and last stages' activations: in-flight chunks of the schedule, plus the extras
 * of the first (embedding) and last (output layer) stages. */
static void
activation_memory(const struct spsim_model_shape *m, const struct spsim_parallel *par,
                  const struct spsim_layer_summary *le, const struct shape *x,
                  struct spsim_memory_report *mem, bool *ok)
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
        if (x->mixed)
            mem->activation_layers_bytes = mixed_held(le, x, 0, ok);
    }
    /* The embedding dropout masks of the micro-batches in flight (embedding_inflight). */
    mem->activation_embedding_bytes =
        spsim_mul(le->embedding.saved_bytes, embedding_inflight(x), ok);
    mem->activation_output_bytes = x->p == 1 ? le->output.saved_bytes : 0;
    /* The cross-entropy's 16-bit logits beside their fp32 copy (summary.c), on the last stage. */
    mem->activation_logits_working_bytes = le->logits_working_bytes;
    mem->activation_deferred_wgrad_bytes = x->p > 1 ? deferred_wgrad_bytes(m, par, le, x, ok) : 0;
    if (!x->plan->even || x->mixed) {
        mem->activation_cp_working_bytes = le->cp_working_bytes;
        mem->activation_first_stage_bytes = rank_activations(par, le, x, 0, ok);
        mem->activation_last_stage_bytes = spsim_add(rank_activations(par, le, x, x->p - 1, ok),
                                                     mem->activation_deferred_wgrad_bytes, ok);
        return;
    }
    /* Full recomputation rebuilds a group's activations before its backward: that group's
     * whole inventory is live on top of the checkpoints (chunk_activations). */
    mem->activation_cp_working_bytes = le->cp_working_bytes;
    uint64_t first = spsim_add(mem->activation_layers_bytes, mem->activation_embedding_bytes, ok);
    first = spsim_add(first, mem->activation_output_bytes, ok);
    first = spsim_add(first, mem->activation_recompute_working_bytes, ok);
    first = spsim_add(first, mem->activation_cp_working_bytes, ok);
    if (x->p == 1)
        first = spsim_add(first, le->logits_working_bytes, ok);
    if (x->p == 1 && le->params_mtp)
        first = spsim_add(first, mtp_saved(le, x, ok), ok);
    mem->activation_first_stage_bytes = first;
    uint64_t last = first;
    if (x->p > 1) {
        last = spsim_mul(inflight_chunks(x, x->p - 1), chunk, ok);
        last = spsim_add(last, le->output.saved_bytes, ok);
        last = spsim_add(last, le->logits_working_bytes, ok);
        last = spsim_add(last, mem->activation_recompute_working_bytes, ok);
        last = spsim_add(last, mem->activation_cp_working_bytes, ok);
        if (le->params_mtp)
            last = spsim_add(last, mtp_saved(le, x, ok), ok);
    }
    mem->activation_last_stage_bytes = spsim_add(last, mem->activation_deferred_wgrad_bytes, ok);
}

/* DualPipe's rank r holds stages r and p − 1 − r (two copies of the parameters,
 * examples/example_dualpipe.py:138): the pipeline rank whose stage it also holds. */
static uint64_t
mirror_rank(const struct shape *x, uint64_t r)
{
    return x->p - 1 - r;
}

/* The routed experts' parameters on one rank of pipeline rank r. */
static uint64_t
rank_expert_parameters(const struct spsim_layer_summary *le, const struct shape *x, uint64_t r,
                       bool *ok)
{
    if (!x->moe)
        return 0; /* the dense path: no rank_built/rank_dense per candidate rank */
    uint64_t n = spsim_mul(rank_moe_layers(le, x, r), le->params_layer_experts, ok);
    if (x->schedule == SPSIM_PP_SCHEDULE_DUALPIPE)
        n = spsim_add(
            n, spsim_mul(rank_moe_layers(le, x, mirror_rank(x, r)), le->params_layer_experts, ok),
            ok);
    return n;
}

/* The D depths' transformer layers on the last stage (each of the last decoder layer's kind);
 * their own rows (enorm, hnorm, eh_proj, final_layernorm) are rank_root_output's. With pp > 1
 * the last stage also holds a copy of the word embedding for the shifted tokens (its gradient
 * is all-reduced with the first stage's, tied_embedding_sync). */
static uint64_t
mtp_layers_parameters(const struct spsim_layer_summary *le, const struct shape *x, bool *ok)
{
    if (x->hybrid) { /* the MTP pattern's layers, once when the depths share them */
        uint64_t one = le->params_mtp;
        for (int k = SPSIM_LAYER_MAMBA; k < SPSIM_LAYER_KIND_COUNT; k++)
            one = spsim_add(
                one, spsim_mul(mtp_kind(x, (enum spsim_layer_kind)k), le->params_hybrid[k], ok),
                ok);
        return spsim_mul(mtp_weight_depths(x), one, ok);
    }
    uint64_t layer = mtp_layer(le, x) == &le->layer ? le->params_layer : le->params_dense_layer;
    return spsim_mul(x->model->shape.mtp_layers, layer, ok);
}

/* Parameters of one TP rank of pipeline rank r: its layers, the embedding on rank 0, the
 * output layer on rank p − 1 (and there a tied embedding's copy, which Megatron keeps in sync
 * by an all-reduce of its gradient). */
static uint64_t
own_parameters(const struct spsim_model_shape *m, const struct spsim_layer_summary *le,
               const struct shape *x, uint64_t r, bool *ok)
{
    uint64_t n = spsim_mul(rank_built(x, r), le->params_layer, ok);
    if (x->hybrid) {
        n = 0;
        for (int k = SPSIM_LAYER_MAMBA; k < SPSIM_LAYER_KIND_COUNT; k++)
            n = spsim_add(
                n, spsim_mul(rank_kind(x, r, (enum spsim_layer_kind)k), le->params_hybrid[k], ok),
                ok);
    } else if (x->mixed) {
        uint64_t dense = rank_dense(x, r);
        n = spsim_add(spsim_mul(rank_built(x, r) - dense, le->params_layer, ok),
                      spsim_mul(dense, le->params_dense_layer, ok), ok);
    }
    n = spsim_add(n, rank_root_embedding(le, r), ok);
    n = spsim_add(n, rank_root_output(m, le, x, r, ok), ok);
    if (r == x->p - 1 && le->params_mtp) /* the depths' transformer layers */
        n = spsim_add(n, mtp_layers_parameters(le, x, ok), ok);
    return n;
}

static void
muon_add(struct spsim_muon_totals *o, const struct spsim_muon_totals *a, double n)
{
    o->params += (uint64_t)n * a->params;
    o->expert_params += (uint64_t)n * a->expert_params;
    o->ns_flops += n * a->ns_flops;
    o->expert_ns_flops += n * a->expert_ns_flops;
    o->gather_bytes += n * a->gather_bytes;
    o->gathers += n * a->gathers;
}

/* Muon's totals of rank r (Newton-Schulz FLOPs of all its steps): its decoder layers, and on
 * the last rank the MTP depths' layers and own rows (eh_proj). Hybrid models are refused
 * (parallel.c). */
static void
rank_muon(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
          const struct shape *x, uint64_t r, struct spsim_muon_totals *o)
{
    int split = par->muon_no_split_qkv, mode = par->muon_tp_mode;
    uint64_t dense = rank_dense(x, r);
    memset(o, 0, sizeof(*o));
    muon_add(o, &le->muon_layer[split][mode], (double)(rank_built(x, r) - dense));
    if (dense)
        muon_add(o, &le->muon_dense[split][mode], (double)dense);
    if (r == x->p - 1 && le->params_mtp) {
        double d = x->model->shape.mtp_layers;
        muon_add(o,
                 mtp_layer(le, x) == &le->layer ? &le->muon_layer[split][mode]
                                                : &le->muon_dense[split][mode],
                 d);
        muon_add(o, &le->muon_mtp[split][mode], d);
    }
    double steps = spsim_muon_ns_steps(par);
    o->ns_flops *= steps;
    o->expert_ns_flops *= steps;
}

/* Pipeline rank r's parameters, DualPipe's two stages. */
static uint64_t
rank_parameters(const struct spsim_model_shape *m, const struct spsim_layer_summary *le,
                const struct shape *x, uint64_t r, bool *ok)
{
    uint64_t n = own_parameters(m, le, x, r, ok);
    if (x->schedule == SPSIM_PP_SCHEDULE_DUALPIPE)
        n = spsim_add(n, own_parameters(m, le, x, mirror_rank(x, r), ok), ok);
    return n;
}

/* Rank r's parameters as stage_static reads them. */
static struct stage_params
rank_stage_params(const struct spsim_model_shape *m, const struct spsim_parallel *par,
                  const struct spsim_layer_summary *le, const struct shape *x, uint64_t r,
                  uint64_t all, bool *ok)
{
    struct stage_params sp = {
        .all = all,
        .expert = rank_expert_parameters(le, x, r, ok),
        .unit = le->params_layer,
        .root =
            spsim_add(spsim_add(rank_root_embedding(le, r), rank_root_output(m, le, x, r, ok), ok),
                      x->schedule != SPSIM_PP_SCHEDULE_DUALPIPE
                          ? 0
                          : spsim_add(rank_root_embedding(le, mirror_rank(x, r)),
                                      rank_root_output(m, le, x, mirror_rank(x, r), ok), ok),
                      ok)};
    if (par->optimizer == SPSIM_OPTIMIZER_MUON)
        rank_muon(par, le, x, r, &sp.muon);
    return sp;
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

/* Muon's work on the peak rank, its share under the layer-wise distributed optimizer (each
 * rank orthogonalizes the whole weights it was given: D = dp·cp of them, the routed experts'
 * over the expert data-parallel group). */
static void
muon_report(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
            const struct shape *x, struct spsim_memory_report *mem)
{
    struct spsim_muon_totals o;
    rank_muon(par, le, x, mem->peak_stage, &o);
    bool shard = par->zero || par->distributed_optimizer;
    double D = shard ? (double)opt_ranks(par, x) : 1.0, E = shard && x->moe ? (double)x->edi : D;
    mem->muon_parameters_per_gpu = o.params + o.expert_params;
    mem->muon_ns_flops_per_gpu = o.ns_flops / D + o.expert_ns_flops / E;
    mem->muon_tp_gather_bytes_per_gpu = o.gather_bytes / D;
    mem->muon_tp_gathers_per_gpu = o.gathers / D;
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
        uint64_t params = first  ? mem->parameters_first_stage
                          : last ? mem->parameters_last_stage
                                 : rank_parameters(m, le, x, r, ok);
        if (le->params_lora_layer) {
            lora_static(params, spsim_mul(rank_built(x, r), le->params_lora_layer, ok), par, x, &s,
                        ok);
        } else {
            struct stage_params sp = rank_stage_params(m, par, le, x, r, params, ok);
            stage_static(&sp, par, x, &s, ok);
        }
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
    mem->trainable_parameters_per_gpu = best.trainable;
    mem->weights_bytes = best.weights;
    mem->gradients_bytes = best.grads;
    mem->optimizer_bytes = best.optimizer;
    mem->total_bytes = best.total;
    mem->activation_peak_stage_bytes = best.activations;
    mem->layers_peak_stage = (uint32_t)rank_built(x, mem->peak_stage);
    if (par->optimizer == SPSIM_OPTIMIZER_MUON)
        muon_report(par, le, x, mem);
    if (par->optimizer_cpu_offload) {
        struct stage_params sp =
            rank_stage_params(m, par, le, x, mem->peak_stage, mem->parameters_per_gpu, ok);
        mem->optimizer_host_bytes =
            offload_sharded(&sp, x, par->optimizer_offload_fraction, SPSIM_HDO_HOST_BYTES, ok);
    }
}

/* What the GPU reports less what tensors cannot use: the CUDA context and cuBLAS workspace,
 * the NCCL buffers of each communicator this configuration runs collectives on (TP, CP, DP·CP,
 * the tied embedding's pair, HSDP's replica and cross-replica groups), then the allocator's
 * fragmentation as a fraction of the rest. */
static void
memory_limit(const struct spsim_hardware *hw, const struct shape *x, bool tied,
             struct spsim_memory_report *mem)
{
    uint64_t comms = (x->t > 1) + (x->c > 1) + (x->dc > 1) + (x->p > 1 && tied);
    comms += (x->R > 1) + (x->R > 1 && x->di > 1); /* HSDP: the inter and intra groups */
    if (x->moe) /* the dispatch group, the expert data-parallel group (HSDP: its intra and
                 * inter partial groups) */
        comms += (x->ep_group > 1) + (x->edi > 1) + (x->R > 1);
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
    if (le->params_lora_layer) {
        lora_static(mem->parameters_first_stage,
                    spsim_mul(rank_built(x, 0), le->params_lora_layer, ok), par, x, &s0, ok);
    } else {
        struct stage_params sp0 =
            rank_stage_params(m, par, le, x, 0, mem->parameters_first_stage, ok);
        stage_static(&sp0, par, x, &s0, ok);
    }
    add_fp8_weight_copies(par, le, x, 0, &s0, ok);
    peak_stage(m, par, le, x, mem, ok);
    if (hw)
        memory_limit(hw, x, m->tied_embeddings, mem);
    uint64_t extras = spsim_add(mem->activation_embedding_bytes, mem->activation_output_bytes, ok);
    if (x->p == 1)
        extras = spsim_add(extras, mem->activation_logits_working_bytes, ok);
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
    activation_memory(m, par, le, x, mem, ok);
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

/*
 * compose_memory() through the memo, for an even split of one kind of layer. Beside the summary
 * (and through it the model and hardware) and the shape, the memory reads the whole
 * configuration but its batch, and the batch only as the micro-batches in flight (x->held,
 * inflight_chunks, embedding_inflight: a use of x->micro elsewhere in this file joins the key),
 * which stop growing once the pipeline is full, so that larger batches share one report.
 */
int
spsim_compose_memory(struct spsim_coll_memo *memo, const struct spsim_model_shape *m,
                     const struct spsim_hardware *hw, const struct spsim_parallel *par,
                     const struct spsim_layer_summary *le, const struct shape *x,
                     struct spsim_memory_report *mem, bool *ok)
{
    /* Without hardware (the optimizer's memory-only compositions) the report lacks the limit
     * and the fit: it must not stand for a full composition's in the memo. */
    /* The deferred gradients depend on the micro-batches, which the key leaves out (gbs). */
    if (!memo || !hw || !le->id || !x->plan->even || x->mixed || x->bf16 ||
        par->defer_embedding_wgrad_compute)
        return compose_memory(m, hw, par, le, x, mem, ok);
    /* The settings that vary inside a sweep's innermost axes come first: the slot is chosen
     * by the first words. */
    const uint64_t key[SPSIM_MEM_MEMO_KEY] = {
        le->id,
        (uint64_t)par->zero | (uint64_t)par->distributed_optimizer << 8 |
            (uint64_t)par->overlap_grad_reduce << 9 | (uint64_t)par->overlap_param_gather << 10 |
            (uint64_t)(par->grad_reduce_in_fp32 + 1) << 12 | (uint64_t)par->dtype << 16 |
            (uint64_t)par->recompute << 24 | (uint64_t)par->recompute_method << 28 |
            (uint64_t)par->offload_layers << 32,
        x->p | x->v << 32,
        x->held[0],
        x->held[2],
        inflight_chunks(x, 0) | inflight_chunks(x, x->p - 1) << 32,
        embedding_inflight(x),
        x->dc,
        x->lps | x->lpc << 32,
        x->held[1],
        x->edi,
        x->t | x->c << 32,
        x->ep_group,
        x->L | (uint64_t)x->moe << 32};
    struct spsim_mem_memo_slot *s =
        &memo->mem[memo_hash(key, SPSIM_MEM_MEMO_HASHED, SPSIM_MEM_MEMO_BITS)];
    if (s->used && memcmp(s->key, key, sizeof(key)) == 0 && memo_par_equal(&s->par, par)) {
        spsim_copy(mem, &s->mem, sizeof(*mem));
        return SPSIM_OK;
    }
    bool fits64 = true;
    int rc = compose_memory(m, hw, par, le, x, mem, &fits64);
    *ok = *ok && fits64;
    if (rc != SPSIM_OK || !fits64)
        return rc; /* an overflow is not remembered: it fails the point */
    memcpy(s->key, key, sizeof(key));
    spsim_copy(&s->par, par, sizeof(*par));
    spsim_copy(&s->mem, mem, sizeof(*mem));
    s->used = true;
    return SPSIM_OK;
}
