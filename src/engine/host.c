/*
 * Host-side costs: the kernels the host launches for each block's schedule, CUDA graphs
 * replacing a captured module's launches by one graph replay, and the host-bound wall time
 * when a profile gives the host's time per launch (host.kernel_launch_us) and per framework
 * op in eager mode (host.op_us: Python, PyTorch's dispatcher and autograd, Transformer
 * Engine's module code, once per op of the schedule or graph replay), with the host's waits
 * for the GPU (the MoE dispatchers' device-to-host copies, the loss checks) splitting a phase,
 * and the block's per-micro-batch work outside its schedule (engine/mb_host.c) at
 * host.torch_call_us a torch call.
 */
#include "config.h"

#include <string.h>

#include "eval.h"

#define CONFIG_FAIL(err, ...) spsim_fail((err), SPSIM_ECONFIG, "parallel config: " __VA_ARGS__)

/* The modules a per-layer graph captures when --cuda-graph-scope is not given: "Entire
 * Transformer layer (default)" (Megatron-LM docs/user-guide/features/cuda_graph.md). */
#define WHOLE_LAYER (SPSIM_CGS_ATTN | SPSIM_CGS_MLP | SPSIM_CGS_MOE | SPSIM_CGS_MAMBA)

uint32_t
spsim_cuda_graph_capture(const struct spsim_parallel *par)
{
    switch (par->cuda_graph_impl) {
    case SPSIM_CUDA_GRAPH_FULL_ITERATION:
        return SPSIM_CGS_FULL_ITERATION;
    case SPSIM_CUDA_GRAPH_LOCAL:
    case SPSIM_CUDA_GRAPH_TE:
        if (par->cuda_graph_scope & SPSIM_CGS_FULL_ITERATION)
            return SPSIM_CGS_FULL_ITERATION; /* the legacy spelling of full_iteration */
        return par->cuda_graph_scope ? par->cuda_graph_scope : WHOLE_LAYER;
    default:
        return 0;
    }
}

/* The rules of Megatron-LM's cuda_graph.md (full_iteration takes no modules; the legacy
 * `local` + full_iteration) and of Megatron-Bridge's docs/training/cuda-graphs.md "Feature
 * Interactions" (moe and moe_router exclusive, moe_preprocess needs moe_router, full recompute
 * only with full-iteration graphs). */
int
spsim_cuda_graph_check(const struct spsim_model_shape *m, const struct spsim_parallel *p,
                       struct spsim_error *err)
{
    uint32_t s = p->cuda_graph_scope;
    if ((unsigned)p->cuda_graph_impl >= SPSIM_CUDA_GRAPH_IMPL_COUNT)
        return CONFIG_FAIL(err, "field 'cuda_graph_impl': must be none, local, transformer_engine "
                                "or full_iteration");
    if (s >> SPSIM_CGS_COUNT_)
        return CONFIG_FAIL(err, "field 'cuda_graph_scope': unknown module bits 0x%x", s);
    if (p->cuda_graph_impl == SPSIM_CUDA_GRAPH_NONE && s)
        return CONFIG_FAIL(err, "field 'cuda_graph_scope': needs a cuda_graph_impl (local or "
                                "transformer_engine)");
    if (p->cuda_graph_impl == SPSIM_CUDA_GRAPH_FULL_ITERATION && s)
        return CONFIG_FAIL(err, "field 'cuda_graph_scope': full_iteration captures the whole "
                                "iteration and takes no modules");
    if ((s & SPSIM_CGS_FULL_ITERATION) &&
        (s != SPSIM_CGS_FULL_ITERATION || p->cuda_graph_impl != SPSIM_CUDA_GRAPH_LOCAL))
        return CONFIG_FAIL(err, "field 'cuda_graph_scope': full_iteration goes alone, with "
                                "cuda_graph_impl local (or use cuda_graph_impl full_iteration)");
    if ((s & SPSIM_CGS_MOE) && (s & SPSIM_CGS_MOE_ROUTER))
        return CONFIG_FAIL(err, "field 'cuda_graph_scope': moe and moe_router are mutually "
                                "exclusive");
    if ((s & SPSIM_CGS_MOE_PREPROCESS) && !(s & SPSIM_CGS_MOE_ROUTER))
        return CONFIG_FAIL(err, "field 'cuda_graph_scope': moe_preprocess requires moe_router");
    uint32_t capture = spsim_cuda_graph_capture(p);
    /* cuda_graph.md: the whole MoE layer is captured for drop-and-pad routing only (static
     * shapes); spsim's MoE layers are dropless. */
    if (m->experts && (capture & SPSIM_CGS_MOE))
        return CONFIG_FAIL(err, "field 'cuda_graph_scope': capturing the MoE layer whole needs "
                                "drop-and-pad routing (static shapes); spsim's MoE layers are "
                                "dropless: name the modules (attn, moe_router, moe_preprocess)");
    if (p->recompute == SPSIM_RECOMPUTE_FULL && capture && capture != SPSIM_CGS_FULL_ITERATION)
        return CONFIG_FAIL(err, "field 'cuda_graph_impl': per-layer CUDA graphs do not support "
                                "full recomputation (only full_iteration graphs do)");
    return SPSIM_OK;
}

bool
spsim_cuda_graph_captures(uint32_t capture, uint32_t module)
{
    if (capture & SPSIM_CGS_FULL_ITERATION)
        return true;
    if (module == SPSIM_CGS_MOE_ROUTER)
        return (capture & (SPSIM_CGS_MOE_ROUTER | SPSIM_CGS_MOE)) != 0;
    return (capture & module) != 0;
}

/*
 * The kernels TE's split_quantize launches for a grouped GEMM's FP8 input or output gradient
 * over `splits` local experts (TransformerEngine d0067d0, pytorch/module/grouped_linear.py
 * _GroupedLinear.forward:820 and backward:1315 call _split_quantize; the default module path,
 * NVTE_GROUPED_LINEAR_USE_FUSED_GROUPED_GEMM unset: grouped_linear.py:1656-1668).
 * csrc/extensions/cast.cpp split_quantize:1895 hands the splits to multi_tensor_quantize_impl
 * (cast.cpp:894), which launches one fused nvte_multi_cast_transpose for all of them only with
 * delayed-scaling quantizers (IsFloat8Quantizers, both usages allocated: the forward's input
 * and the backward's gradient, rowwise and columnwise), else one quantizer->quantize per split:
 * MXFP8 and block scaling one nvte_quantize_v2 each (csrc/quantizer.cpp:1848, 1437), current
 * scaling three (Float8CurrentScalingQuantizer::quantize_impl, quantizer.cpp:1011-1028: the
 * amax, the scale from it, the cast). NVFP4's split quantize (a group amax, then RHT or a
 * per-split cast, cast.cpp split_quantize_nvfp4_impl) is left at one kernel.
 */
static uint32_t
split_quantize_kernels(const struct spsim_layer_config *cfg, uint32_t splits)
{
    if (cfg->dtype != SPSIM_DTYPE_FP8 || cfg->fp8_recipe == SPSIM_FP8_DELAYED)
        return 1;
    return (cfg->fp8_recipe == SPSIM_FP8_CURRENT ? 3 : 1) * splits;
}

/*
 * Kernels one step launches, at least: a GEMM pass is one cuBLASLt matmul (TE general_gemm;
 * the experts' grouped GEMM one per local expert),
 * with FP8 its input's or output gradient's cast one more (TE quantize/cast_transpose; the
 * wgrad's bytes are its bias gradient, in the epilogue; a grouped GEMM's split_quantize above);
 * a flash pass one fused attention
 * kernel; a memory-bound row one fused TE/Apex kernel per pass; a collective one NCCL kernel
 * (enqueue.cc launches one kernel per plan). Ops TE runs as several kernels (a norm backward's
 * finalize, FlashAttention-2 backward's preprocessing) count once.
 */
static uint32_t
step_kernels(const struct spsim_layer_config *cfg, const struct spsim_step *st)
{
    if (st->op->mb_host_launched) /* mb_host.c's calls and launches */
        return 0;
    uint32_t k = st->coll != SPSIM_COLL_NONE;
    /* TE's grouped GEMM is one cuBLASLt GEMM per local expert (timing.c grouped_gemm_time). */
    uint32_t gemms = st->op->kind == SPSIM_OPK_GEMM && st->gbatch > 1 ? (uint32_t)st->gbatch : 1;
    bool cast = st->op->kind == SPSIM_OPK_GEMM && st->pass != SPSIM_PASS_WGRAD && st->bytes > 0;
    if (st->flops > 0)
        k += gemms + (cast ? (gemms > 1 ? split_quantize_kernels(cfg, gemms) : 1) : 0);
    else if (st->bytes > 0)
        k += 1;
    return k;
}

/* One phase's host time against its GPU time, in segments split where the host waits for the
 * GPU (op->d2h_sync, forward and recompute only: the backward's splits are the forward's). In
 * a segment the host issues while the GPU runs what it issued: max(host, GPU); at a wait the
 * GPU's queue drains, so neither runs ahead of the other across it. */
struct host_phase {
    double host, gpu, wall;
};

static void
host_segment_close(struct host_phase *hp)
{
    hp->wall += spsim_max_d(hp->host, hp->gpu);
    hp->host = hp->gpu = 0;
}

/* The block's per-micro-batch host work outside its schedule (engine/mb_host.c), priced at
 * host.torch_call_us a call: before the forward's steps (`head`), or after them: the tail, a
 * wait for the GPU when there is one (the loss checks' device-to-host copy) and what follows
 * it, with the backward's DDP hooks. A full-iteration graph replays all of it (none eager). */
static void
mb_host_add(const struct spsim_hardware *hw, struct spsim_block_eval *be, struct host_phase *hp,
            bool head)
{
    const struct spsim_mb_host *h = &be->mb_host;
    if (be->block.cfg.graph_capture & SPSIM_CGS_FULL_ITERATION)
        return;
    double call_s = hw ? hw->host_torch_call_s : 0, launch_s = hw ? hw->kernel_launch_s : 0;
    struct host_phase *fwd = &hp[SPSIM_PHASE_FORWARD], *bwd = &hp[SPSIM_PHASE_BACKWARD];
    if (head) {
        fwd->host += h->fwd_head_calls * call_s + h->fwd_head_launches * launch_s;
        be->launches[SPSIM_PHASE_FORWARD] +=
            (uint32_t)(h->fwd_head_launches + h->fwd_tail_launches + h->after_launches);
        be->launches[SPSIM_PHASE_BACKWARD] += (uint32_t)h->bwd_launches;
        return;
    }
    fwd->host += h->fwd_tail_calls * call_s + h->fwd_tail_launches * launch_s;
    if (h->wait)
        host_segment_close(fwd);
    fwd->host += h->after_calls * call_s + h->after_launches * launch_s;
    bwd->host += h->bwd_calls * call_s + h->bwd_launches * launch_s;
}

void
spsim_block_host(const struct spsim_hardware *hw, struct spsim_block_eval *be)
{
    uint32_t capture = be->block.cfg.graph_capture;
    bool in_graph[2] = {false, false};
    struct host_phase hp[3] = {{0, 0, 0}};
    double gpu[3] = {0, 0, 0};
    double launch_s = hw ? hw->kernel_launch_s : 0, op_s = hw ? hw->host_op_s : 0;
    memset(be->launches, 0, sizeof(be->launches));
    mb_host_add(hw, be, hp, true);
    for (uint32_t i = 0; i < be->sched.nsteps; i++) {
        const struct spsim_step *st = &be->sched.steps[i];
        /* Backward and its recompute are one issue stream (one graph with per-layer capture). */
        uint32_t k = step_kernels(&be->block.cfg, st), ph = st->phase,
                 run = ph != SPSIM_PHASE_FORWARD;
        double g = hw ? be->cost[i].compute_s + be->cost[i].exposed_comm_s : 0;
        gpu[ph] += g;
        if (st->op->d2h_sync && ph != SPSIM_PHASE_BACKWARD)
            host_segment_close(&hp[ph]);
        hp[ph].gpu += g;
        if (k == 0)
            continue;
        if (spsim_cuda_graph_captures(capture, st->op->graph_module)) {
            /* A run of captured steps is one graph replay, one framework call; the full
             * iteration's single replay belongs to no block. */
            if (!in_graph[run] && !(capture & SPSIM_CGS_FULL_ITERATION)) {
                be->launches[ph]++;
                hp[ph].host += launch_s + op_s;
            }
            in_graph[run] = true;
            continue;
        }
        in_graph[run] = false;
        be->launches[ph] += k;
        hp[ph].host += k * launch_s + op_s;
    }
    mb_host_add(hw, be, hp, false);
    if (!hw || hw->kernel_launch_s <= 0)
        return;
    double *wall[3] = {[SPSIM_PHASE_FORWARD] = &be->fwd_s,
                       [SPSIM_PHASE_BACKWARD] = &be->bwd_s,
                       [SPSIM_PHASE_RECOMPUTE] = &be->recompute_s};
    for (int ph = 0; ph < 3; ph++) {
        host_segment_close(&hp[ph]);
        double excess = spsim_max_d(0.0, hp[ph].wall - gpu[ph]);
        *wall[ph] += excess;
        be->host_exposed_s += excess;
    }
}
