/*
 * The replay plan of `spsim validate`: the layer's schedule (the one `spsim explain` prints)
 * turned into what runs on the GPU, step by step, with the prediction beside each step.
 * Host-only, so that the plan and its tests need no GPU.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/eval.h"
#include "gpu_plan.h"

/*
 * Flash attention has no cuBLAS equivalent; it is stood in for by batched GEMMs with its FLOPs.
 * Causal attention computes half of the s×s scores (the layer's flash_fwd_flops =
 * 2·b·(a/t)·s²·d): forward two matmuls (QKᵀ and P·V) of (s, s/2, d) per head, 2·s·(s/2)·d
 * FLOPs each; FlashAttention-2's backward five (recomputed QKᵀ, dV, dP, dQ, dK), which is the
 * schedule's 2.5 × forward.
 */
static void
plan_flash(struct spsim_gpu_validate_step *o, const struct spsim_model_shape *m,
           const struct spsim_layer_config *cfg, bool backward)
{
    o->kind = SPSIM_REPLAY_ATTENTION_PROXY;
    o->m = cfg->s;
    o->n = cfg->s / 2 > 0 ? cfg->s / 2 : 1;
    o->k = m->head_dim;
    o->batch = cfg->b * (m->heads / cfg->t);
    o->gemms = backward ? 5 : 2;
}

/* Attention's matmuls stay in 16-bit even in an FP8 run (Transformer Engine runs FP8 only in
 * its linear layers; core attention is BF16). */
static enum spsim_dtype
bmm_dtype(enum spsim_dtype d)
{
    return d == SPSIM_DTYPE_FP16 ? SPSIM_DTYPE_FP16 : SPSIM_DTYPE_BF16;
}

static void
plan_compute(struct spsim_gpu_validate_step *o, const struct spsim_step *st,
             const struct spsim_model_shape *m, const struct spsim_layer_config *cfg)
{
    o->kind = SPSIM_REPLAY_NONE;
    o->dtype = bmm_dtype(cfg->dtype);
    switch (st->op->kind) {
    case SPSIM_OPK_GEMM:
        o->kind = SPSIM_REPLAY_GEMM;
        o->dtype = cfg->dtype;
        /* Megatron's gradient-accumulation fusion adds the weight gradient into the fp32
         * main_grad (fused_weight_gradient_mlp_cuda wgrad_gemm_accum_fp32). The FP8 replay
         * writes BF16: cuBLASLt's FP8 kernels are only certain with a 16-bit output. */
        o->fp32_output = st->pass == SPSIM_PASS_WGRAD && cfg->dtype != SPSIM_DTYPE_FP8;
        /* Transformer Engine's FP8 recipes: fprop with fast accumulation, dgrad and wgrad with
         * the split accumulator (pytorch/module/base.py _2X_ACC_*; recompute is fprop). */
        o->fp8_fast_accum = cfg->dtype == SPSIM_DTYPE_FP8 && st->pass == SPSIM_PASS_FWD;
        o->copy_bytes = (uint64_t)st->bytes; /* the bias gradient's reduction, a copy too */
        break;
    case SPSIM_OPK_BMM:
        o->kind = SPSIM_REPLAY_BATCHED_GEMM;
        break;
    case SPSIM_OPK_FLASH:
        plan_flash(o, m, cfg, st->phase == SPSIM_PHASE_BACKWARD);
        break;
    case SPSIM_OPK_MEMORY:
        o->kind = SPSIM_REPLAY_COPY;
        o->copy_bytes = (uint64_t)st->bytes;
        break;
    case SPSIM_OPK_COMM:
    case SPSIM_OPK_CP:
    case SPSIM_OPK_EP:
        break;
    }
    if (o->kind == SPSIM_REPLAY_GEMM || o->kind == SPSIM_REPLAY_BATCHED_GEMM) {
        o->m = st->gm;
        o->n = st->gn;
        o->k = st->gk;
        o->batch = st->gbatch;
        o->gemms = 1;
    }
    o->flops =
        2.0 * (double)o->gemms * (double)o->batch * (double)o->m * (double)o->n * (double)o->k;
}

static void
plan_step(struct spsim_gpu_validate_step *o, const struct spsim_step *st,
          const struct spsim_step_cost *c, const struct spsim_model_shape *m,
          const struct spsim_layer_config *cfg)
{
    memset(o, 0, sizeof(*o));
    o->phase = st->phase;
    o->op = st->op->name;
    o->pass = spsim_pass_name(st->pass);
    plan_compute(o, st, m, cfg);
    o->coll = st->coll;
    o->coll_bytes = st->coll == SPSIM_COLL_NONE ? 0 : st->message_bytes;
    o->coll_site = st->coll_site ? st->coll_site : "";
    o->overlap = st->overlap;
    o->predicted_compute_s = c->compute_s;
    o->predicted_comm_s = c->comm_s;
    o->predicted_s = c->compute_s + c->exposed_comm_s;
}

static uint64_t
ring_align(uint64_t bytes)
{
    return (bytes + SPSIM_GPU_RING_ALIGN - 1) / SPSIM_GPU_RING_ALIGN * SPSIM_GPU_RING_ALIGN;
}

void
spsim_gpu_ring_init(struct spsim_gpu_ring *r, uint64_t largest, uint64_t l2_bytes)
{
    r->size = 3 * ring_align(largest) + SPSIM_GPU_RING_L2_MULTIPLE * ring_align(l2_bytes);
    r->next = 0;
}

uint64_t
spsim_gpu_ring_take(struct spsim_gpu_ring *r, uint64_t bytes)
{
    uint64_t b = ring_align(bytes);
    if (r->next + b > r->size)
        r->next = 0;
    uint64_t at = r->next;
    r->next += b;
    return at;
}

uint64_t
spsim_gpu_step_copy(const struct spsim_gpu_validate_step *s)
{
    return s->copy_bytes / 2;
}

int
spsim_gpu_validate_plan(const struct spsim_model *model, const struct spsim_hardware *hw,
                        const struct spsim_parallel *par, struct spsim_gpu_validate_report *out,
                        struct spsim_error *err)
{
    if (!model || !hw || !par || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_gpu_validate_plan: NULL argument");
    /* The replay runs one TP group; a CP group's exchanges would need cp·tp GPUs. */
    if (par->cp > 1)
        return spsim_fail(err, SPSIM_ECONFIG,
                          "parallel config: field 'cp': validate replays one tensor-parallel "
                          "group; context parallelism (cp = %u) is not replayed",
                          par->cp);
    /* The replay's collectives are NCCL's on their own stream, not TE's userbuffers. */
    if (par->tp_comm_overlap)
        return spsim_fail(err, SPSIM_ECONFIG,
                          "parallel config: field 'tp_comm_overlap': validate replays NCCL "
                          "collectives; TE's userbuffers overlap is not replayed");
    const struct spsim_model_shape *m = spsim_model_get_shape(model);
    /* Its token exchanges span ep·etp GPUs and its grouped GEMMs have no replay kernel. */
    if (m->experts)
        return spsim_fail(err, SPSIM_ECONFIG,
                          "parallel config: field 'model': validate does not replay "
                          "mixture-of-experts layers");
    struct spsim_layer_eval *le = spsim_calloc(1, sizeof(*le));
    if (!le)
        return spsim_fail(err, SPSIM_ENOMEM, "validate: out of memory");
    int rc = spsim_layer_evaluate_checked(model, hw, par, le, err);
    const struct spsim_layer_config cfg = le->cfg;
    if (rc == SPSIM_OK) {
        memset(out, 0, sizeof(*out));
        const struct spsim_block_eval *L = &le->layer;
        out->nsteps = L->sched.nsteps;
        for (uint32_t i = 0; i < L->sched.nsteps; i++)
            plan_step(&out->steps[i], &L->sched.steps[i], &L->cost[i], m, &cfg);
        out->gpus = cfg.t;
        out->predicted_forward_s = L->fwd_s;
        out->predicted_backward_s = L->bwd_s + L->recompute_s;
    }
    free(le);
    return rc;
}
