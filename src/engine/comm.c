/* Communication volumes per rank and iteration: tensor, context and expert parallelism's
 * per-layer exchanges, the data-parallel gradients and parameters (sharded or not), the
 * pipeline's sends, and the tier each group runs on. */
#include "config.h"

#include "compose.h"

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
uint64_t
spsim_fp8_gather_saved(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                       uint64_t layers)
{
    /* LoRA gathers only its BF16 adapters; the frozen FP8 base is in no DDP buffer. */
    if (!par->fp8_param_gather || le->params_lora_layer)
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
    uint64_t D = x->di, unit = spsim_mul(le->params_layer - le->params_layer_experts, 2, ok) -
                               spsim_fp8_gather_saved(par, le, 1);
    uint64_t fp8_layers = x->lps - (x->bf16 ? rank_dense(x, peak) : 0);
    uint64_t weights = spsim_mul(comm->dp_grad_bytes / grad_bytes(par), 2, ok) -
                       spsim_fp8_gather_saved(par, le, fp8_layers);
    uint32_t z = zero_level(par);
    comm->dp_rs_wire_bytes_per_rank = z >= 2 ? spsim_mul(grad_frac, x->micro, ok) : grad_frac;
    if (z == 1 && grad_bytes(par) == 4 && !par->fp8_param_gather) {
        comm->dp_ag_wire_bytes_per_rank = grad_frac / 2; /* bf16 weights: half the fp32 grads */
    } else if (z >= 3) {
        /* Each layer's gathers, every micro-batch, and once per iteration the root unit's
         * bf16 weights, kept from then on (memory.c fsdp_static). */
        uint64_t unit_frac = (unit / D) * (D - 1) + (unit % D) * (D - 1) / D;
        uint64_t root = spsim_mul(rank_root_embedding(le, peak) +
                                      rank_root_output(&x->model->shape, le, x, peak, ok),
                                  2, ok);
        comm->dp_ag_wire_bytes_per_rank =
            spsim_add(spsim_mul4(unit_frac, 2, x->lps, x->micro, ok),
                      (root / D) * (D - 1) + (root % D) * (D - 1) / D, ok);
    } else {
        comm->dp_ag_wire_bytes_per_rank = (weights / D) * (D - 1) + (weights % D) * (D - 1) / D;
    }
    comm->dp_wire_bytes_per_rank =
        spsim_add(comm->dp_rs_wire_bytes_per_rank, comm->dp_ag_wire_bytes_per_rank, ok);
}

/* (R−1)/R of `bytes`, exactly as the inner group's fractions. */
static uint64_t
outer_frac(uint64_t bytes, uint64_t R)
{
    return (bytes / R) * (R - 1) + (bytes % R) * (R - 1) / R;
}

/*
 * HSDP across the R replicas (Megatron-Core @d98e8a64): each rank holds the gradient shard of
 * its replica, S = G / (D/R) of its G gradient bytes, after the inner ReduceScatter, and
 * reduces it over the outer group (R ranks, D/R·t apart: parallel_state.py builds the intra
 * groups as consecutive slices of the dp-cp ranks) once an iteration: an AllReduce of S
 * (param_and_grad_buffer.py start_grad_sync, the inter-instance all_reduce after the intra
 * reduce-scatter; Megatron-FSDP's HSDP all_reduce on the last micro-batch), or with the outer
 * sharding (HFSDP) a ReduceScatter of S and, at the next iteration's first micro-batch, the
 * AllGather of the bf16 weight shards 2·P/(D/R) (megatron_fsdp/param_and_grad_buffer.py
 * _bucket_group_gradient_reduce and all_gather_params' outer_fsdp_group_param_gather).
 */
static void
outer_comm(const struct spsim_hardware *hw, const struct spsim_parallel *par, const struct shape *x,
           struct spsim_comm_report *comm, bool *ok)
{
    uint64_t S = ceil_div(comm->dp_grad_bytes, x->di), R = x->R;
    uint64_t W = ceil_div(spsim_mul(comm->dp_grad_bytes / grad_bytes(par), 2, ok), x->di);
    bool shard = par->outer_dp_shard;
    comm->dp_outer_reduce_wire_bytes_per_rank = shard ? outer_frac(S, R) : 2 * outer_frac(S, R);
    comm->dp_outer_ag_wire_bytes_per_rank = shard ? outer_frac(W, R) : 0;
    comm->dp_outer_tier =
        hw ? spsim_group_tier(hw, spsim_group_place(hw, (uint32_t)R, x->t * x->di))
           : SPSIM_TIER_NETWORK;
}

/*
 * HSDP of an MoE model (Megatron-Core @d98e8a64): the experts' buffers are built over the
 * intra-partial expert data-parallel group, edp / R consecutive ranks of the expert data-parallel
 * group (parallel_state.py:1474-1496, create_hierarchical_groups [edp / R, R];
 * distributed_data_parallel.py:285-286), and each expert bucket group is given the same
 * inter-instance group as the dense ones (distributed_data_parallel.py:352-360): after the
 * intra ReduceScatter, its shard S = G / (edp / R) is all-reduced across the R replicas, whose
 * members are etp·ep·edp / R ranks apart.
 */
static void
expert_outer_comm(const struct spsim_hardware *hw, const struct spsim_parallel *par,
                  const struct shape *x, uint64_t shard, struct spsim_comm_report *comm)
{
    comm->expert_dp_outer_wire_bytes_per_rank = 2 * outer_frac(shard, x->R);
    uint64_t stride = (uint64_t)spsim_moe_etp(par) * par->ep * x->edi;
    comm->expert_dp_outer_tier =
        hw ? spsim_group_tier(hw, spsim_group_place(hw, (uint32_t)x->R, stride))
           : SPSIM_TIER_NETWORK;
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
    comm->expert_dp_ranks = (uint32_t)x->edi;
    uint64_t D = x->edi, grads = spsim_mul(mem->expert_parameters_per_gpu, grad_bytes(par), ok);
    if (x->edp <= 1)
        return;
    comm->expert_dp_grad_bytes = grads;
    if (x->R > 1 && grads) /* HSDP: the intra group's shard across the replicas */
        expert_outer_comm(hw, par, x, ceil_div(grads, D), comm);
    if (D <= 1)
        return;
    uint64_t frac = (grads / D) * (D - 1) + (grads % D) * (D - 1) / D;
    uint32_t z = zero_level(par);
    /* Sharded: the bf16 weights gathered are half the fp32 gradients (2/g of them). With
     * Megatron-FSDP (2, 3) the experts are sharded over the expert data-parallel group as the
     * rest over dp·cp (zero_comm): a reduce-scatter every micro-batch; level 3 gathers each
     * MoE layer's experts before its forward and its backward. */
    uint64_t ag = frac * 2 / grad_bytes(par);
    if (z >= 3) {
        uint64_t unit = spsim_mul(le->params_layer_experts, 2, ok);
        uint64_t unit_frac = (unit / D) * (D - 1) + (unit % D) * (D - 1) / D;
        ag = spsim_mul4(unit_frac, 2, rank_moe_layers(le, x, mem->peak_stage), x->micro, ok);
    }
    comm->expert_dp_wire_bytes_per_rank =
        z == 0 ? 2 * frac : spsim_add(z >= 2 ? spsim_mul(frac, x->micro, ok) : frac, ag, ok);
    comm->expert_dp_tier =
        hw ? spsim_group_tier(
                 hw, spsim_group_place(hw, (uint32_t)D, (uint64_t)spsim_moe_etp(par) * par->ep))
           : SPSIM_TIER_NETWORK;
}

void
spsim_compose_comm(const struct spsim_hardware *hw, const struct spsim_parallel *par,
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
    uint64_t grads = spsim_mul(mem->trainable_parameters_per_gpu - mem->expert_parameters_per_gpu,
                               grad_bytes(par), ok);
    comm->dp_grad_bytes = x->dc > 1 ? grads : 0;
    if (x->moe)
        moe_comm(hw, par, le, x, mem, comm, ok);
    comm->dp_inner_ranks = (uint32_t)x->di;
    comm->dp_outer_ranks = (uint32_t)x->R;
    comm->dp_outer_tier = SPSIM_TIER_LOCAL;
    if (x->dc > 1) {
        uint64_t D = x->di; /* the replica's ranks (all dp·cp without HSDP) */
        uint64_t frac = (grads / D) * (D - 1) + (grads % D) * (D - 1) / D;
        /* AllReduce moves 2(D−1)/D; RS of the gradients + AG of bf16 parameters with the
         * distributed optimizer moves (D−1)/D of each. */
        comm->dp_wire_bytes_per_rank = 2 * frac;
        comm->dp_tier = hw ? spsim_group_tier(hw, spsim_group_place(hw, (uint32_t)D, x->t))
                           : SPSIM_TIER_NETWORK;
        if (zero_level(par) >= 1)
            zero_comm(par, le, x, frac, mem->peak_stage, comm, ok);
        if (x->R > 1)
            outer_comm(hw, par, x, comm, ok);
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
