/* The order of one layer's work on one TP rank: forward, recompute and backward steps. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "layer.h"

/*
 * The order of one layer's work on one TP rank.
 *
 * Forward: the op list in order; every TP collective is on the critical path.
 *
 * Backward (Megatron-LM LinearWithGradAccumulationAndAsyncCommunication, layers.py): for a
 * column-parallel linear (QKV, FC1)
 *   with SP:    async AllGather of the saved input shard ‖ dgrad GEMM, then
 *               async ReduceScatter of dgrad (g's backward) ‖ wgrad GEMM;
 *   without SP: dgrad GEMM, then async AllReduce of dgrad (f's backward) ‖ wgrad GEMM.
 * For a row-parallel linear (projection, FC2) with SP, ḡ's backward AllGather of the output
 * gradient precedes the GEMMs on the critical path; without SP f̄'s backward is the identity.
 *
 * Recompute: full recomputation replays the whole forward (collectives included) before the
 * layer's backward; selective replays each recomputed module (replay_runs below).
 */

struct sched_builder {
    struct spsim_schedule *s;
    bool ub;     /* TE userbuffers: the TP boundaries' collectives pipelined with their GEMMs */
    bool frozen; /* LoRA: the base linears' weights frozen */
};

/*
 * With --tp-comm-overlap (TE userbuffers, transformer_engine/pytorch/module/base.py
 * initialize_ub, default methods) the collectives that were on the critical path run inside
 * their GEMM: the AllGather before a column-parallel GEMM (qkv_fprop, fc1_fprop) and the
 * output-gradient AllGather before a row-parallel dgrad (proj_dgrad, fc2_dgrad) by ring
 * exchange with the GEMM after it; the ReduceScatter after a row-parallel GEMM (proj_fprop,
 * fc2_fprop) pipelined with the GEMM before it. The backward bulk overlaps (qkv/fc1 dgrad and
 * wgrad) keep their DGRAD/WGRAD pairing. timing.c costs them.
 */
static enum spsim_overlap
boundary_overlap(const struct sched_builder *b, enum spsim_coll_op coll)
{
    if (!b->ub)
        return SPSIM_OVERLAP_NONE;
    if (coll == SPSIM_COLL_ALL_GATHER)
        return SPSIM_OVERLAP_RING_EXCHANGE;
    return coll == SPSIM_COLL_REDUCE_SCATTER ? SPSIM_OVERLAP_PIPELINE : SPSIM_OVERLAP_NONE;
}

static struct spsim_step *
push(struct sched_builder *b, enum spsim_phase phase, const struct spsim_op *op,
     enum spsim_pass pass)
{
    struct spsim_step *st = &b->s->steps[b->s->nsteps++];
    memset(st, 0, sizeof(*st));
    st->phase = phase;
    st->op = op;
    st->pass = pass;
    st->coll = SPSIM_COLL_NONE;
    st->gbatch = 1;
    return st;
}

static void
set_gemm(struct spsim_step *st, uint64_t m, uint64_t n, uint64_t k, uint64_t batch)
{
    st->gm = m;
    st->gn = n;
    st->gk = k;
    st->gbatch = batch;
    st->flops = 2.0 * (double)batch * (double)m * (double)n * (double)k;
}

static void
set_coll(struct spsim_step *st, enum spsim_coll_op coll, uint64_t message, const char *site,
         const char *opname, enum spsim_overlap overlap)
{
    st->coll = coll;
    st->message_bytes = coll == SPSIM_COLL_NONE ? 0 : message;
    st->coll_site = site;
    st->coll_operator = opname;
    st->overlap = overlap;
}

/* A context-parallel or MoE exchange: the p2p ring runs beside the attention steps it feeds
 * (TE's two alternating streams), the other exchanges on the critical path. */
static void
cp_step(struct sched_builder *b, const struct spsim_op *op, enum spsim_phase phase,
        enum spsim_coll_op coll, uint64_t message)
{
    if (coll == SPSIM_COLL_NONE)
        return;
    struct spsim_step *st = push(b, phase, op, SPSIM_PASS_COMM);
    set_coll(st, coll, message, op->name, op->operator_name,
             coll == SPSIM_COLL_SEND_RECV ? SPSIM_OVERLAP_ATTENTION : SPSIM_OVERLAP_NONE);
}

/* A boundary's message for a collective: FP8 AllGathers carry half of M, NVFP4 ones
 * (1/2 + 1/16)/2 of it (engine/fp8.c). */
static uint64_t
coll_message(const struct spsim_op *op, enum spsim_coll_op coll)
{
    if (!(op->fp8_gather && coll == SPSIM_COLL_ALL_GATHER))
        return op->message_bytes;
    if (op->gather_fraction == 0.5)
        return op->message_bytes / 2;
    return (uint64_t)ceil((double)op->message_bytes * op->gather_fraction);
}

/* Current scaling and NVFP4: the amax all-reduce before a quantized AllGather (fp8.c). */
static void
amax_step(struct sched_builder *b, const struct spsim_op *op, enum spsim_phase phase,
          enum spsim_coll_op coll)
{
    if (op->amax_bytes == 0 || coll != SPSIM_COLL_ALL_GATHER)
        return;
    struct spsim_step *st = push(b, phase, op, SPSIM_PASS_COMM);
    set_coll(st, SPSIM_COLL_ALL_REDUCE, op->amax_bytes,
             phase == SPSIM_PHASE_BACKWARD ? "amax of the output gradient before the AllGather"
                                           : "amax of the input before the AllGather",
             "amax", SPSIM_OVERLAP_NONE);
}

static void
forward_step(struct sched_builder *b, const struct spsim_op *op, enum spsim_phase phase)
{
    struct spsim_step *st;
    switch (op->kind) {
    case SPSIM_OPK_MEMORY:
        st = push(b, phase, op, SPSIM_PASS_FWD);
        st->bytes = op->fwd_bytes;
        break;
    case SPSIM_OPK_GEMM:
    case SPSIM_OPK_BMM:
        st = push(b, phase, op, SPSIM_PASS_FWD);
        set_gemm(st, op->m, op->n, op->k, op->batch);
        st->bytes = op->cast_fwd_bytes;
        break;
    case SPSIM_OPK_FLASH:
        st = push(b, phase, op, SPSIM_PASS_FWD);
        st->flops = op->flash_fwd_flops;
        break;
    case SPSIM_OPK_COMM:
        amax_step(b, op, phase, op->fwd_coll);
        st = push(b, phase, op, SPSIM_PASS_COMM);
        set_coll(st, op->fwd_coll, coll_message(op, op->fwd_coll), op->name, op->operator_name,
                 boundary_overlap(b, op->fwd_coll));
        break;
    case SPSIM_OPK_CP:
    case SPSIM_OPK_EP:
        cp_step(b, op, phase, op->fwd_coll, op->message_bytes);
        break;
    }
}

/* out[m,n] = A[m,k]·B[k,n]: dA = dOut·Bᵀ is (M=m, N=k, K=n); dB = Aᵀ·dOut is (M=k, N=n, K=m). */
static void
backward_matmul(struct sched_builder *b, const struct spsim_op *op, const struct spsim_op *boundary)
{
    bool sp = false, tp = boundary != NULL;
    if (boundary)
        sp = boundary->fwd_coll == SPSIM_COLL_ALL_GATHER;
    enum spsim_pass first = op->kind == SPSIM_OPK_GEMM ? SPSIM_PASS_DGRAD : SPSIM_PASS_BWD;
    enum spsim_pass second = op->kind == SPSIM_OPK_GEMM ? SPSIM_PASS_WGRAD : SPSIM_PASS_BWD;
    /* A frozen base linear (LoRA, finetune.c) runs no weight gradient: no re-gather of its
     * input, no wgrad GEMM; its input gradient's collective is then alone in the step. */
    bool frozen = b->frozen && op->kind == SPSIM_OPK_GEMM && !op->adapter;
    struct spsim_step *dgrad = push(b, SPSIM_PHASE_BACKWARD, op, first);
    set_gemm(dgrad, op->m, op->k, op->n, op->batch);
    dgrad->bytes = op->cast_bwd_bytes;
    if (tp && sp && !frozen)
        set_coll(dgrad, SPSIM_COLL_ALL_GATHER, coll_message(boundary, SPSIM_COLL_ALL_GATHER),
                 op->regather_site, "wgrad AG", SPSIM_OVERLAP_DGRAD);
    struct spsim_step *wgrad = push(b, SPSIM_PHASE_BACKWARD, op, second);
    if (!frozen)
        set_gemm(wgrad, op->k, op->n, op->m, op->batch);
    wgrad->bytes = frozen ? 0 : op->bias_grad_bytes;
    if (tp)
        set_coll(wgrad, boundary->bwd_coll, boundary->message_bytes, boundary->bwd_name,
                 boundary->operator_name, SPSIM_OVERLAP_WGRAD);
}

static void
backward_step(struct sched_builder *b, const struct spsim_layer *L, uint32_t i)
{
    const struct spsim_op *op = &L->ops[i];
    struct spsim_step *st;
    switch (op->kind) {
    case SPSIM_OPK_MEMORY:
        st = push(b, SPSIM_PHASE_BACKWARD, op, SPSIM_PASS_BWD);
        st->bytes = op->bwd_bytes;
        break;
    case SPSIM_OPK_FLASH:
        /* FlashAttention-2 backward recomputes the scores: 5 matmuls against 2 forward. */
        st = push(b, SPSIM_PHASE_BACKWARD, op, SPSIM_PASS_BWD);
        st->flops = 2.5 * op->flash_fwd_flops;
        break;
    case SPSIM_OPK_BMM:
        backward_matmul(b, op, NULL);
        break;
    case SPSIM_OPK_GEMM: {
        const struct spsim_op *boundary = NULL;
        if (op->role == SPSIM_GEMM_COLUMN && i > 0 && L->ops[i - 1].kind == SPSIM_OPK_COMM)
            boundary = &L->ops[i - 1];
        backward_matmul(b, op, boundary);
        break;
    }
    case SPSIM_OPK_CP:
    case SPSIM_OPK_EP:
        cp_step(b, op, SPSIM_PHASE_BACKWARD, op->bwd_coll, op->cp_bwd_message_bytes);
        break;
    case SPSIM_OPK_COMM:
        /* g/f: their backward collective is issued with the column-parallel wgrad above. */
        if (op->into_tp)
            break;
        amax_step(b, op, SPSIM_PHASE_BACKWARD, op->bwd_coll);
        st = push(b, SPSIM_PHASE_BACKWARD, op, SPSIM_PASS_COMM);
        set_coll(st, op->bwd_coll, coll_message(op, op->bwd_coll), op->bwd_name, op->operator_name,
                 boundary_overlap(b, op->bwd_coll));
        break;
    }
}

/* A run of ops that selective recomputation replays, and the op before whose backward it is
 * replayed. */
struct replay {
    uint32_t first, last, anchor;
};

/*
 * The replayed runs of a layer, in op order. core_attn and mlp are checkpoints
 * (tensor_parallel.checkpoint): their forward is re-run when the backward reaches them, just
 * before their own backward. layernorm is output-discarding (CheckpointWithoutOutput): the
 * norm is re-run from a hook on the gradient of the attention or MLP output it feeds
 * (transformer_layer.py discard_output_and_register_recompute), i.e. before the backward of
 * the op that precedes the block's bias-dropout-add.
 */
static uint32_t
replay_runs(const struct spsim_layer *L, struct replay *out, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < L->nops && n < cap;) {
        uint32_t g = L->ops[i].group, j = i;
        while (j + 1 < L->nops && L->ops[j + 1].group == g)
            j++;
        if (g & L->cfg.rmods) {
            uint32_t anchor = j;
            if (g == SPSIM_RG_NORM) {
                uint32_t k = j + 1;
                while (k < L->nops && (L->ops[k].region != SPSIM_REGION_SEQ || L->ops[k].post_norm))
                    k++;
                anchor = k - 1;
            }
            out[n++] = (struct replay){i, j, anchor};
        }
        i = j + 1;
    }
    return n;
}

void
spsim_schedule_build(const struct spsim_layer *L, struct spsim_schedule *sched)
{
    struct sched_builder b = {sched, L->cfg.tp_comm_overlap, L->cfg.frozen};
    sched->nsteps = 0;
    for (uint32_t i = 0; i < L->nops; i++)
        forward_step(&b, &L->ops[i], SPSIM_PHASE_FORWARD);

    if (L->cfg.recompute == SPSIM_RECOMPUTE_FULL)
        for (uint32_t i = 0; i < L->nops; i++)
            forward_step(&b, &L->ops[i], SPSIM_PHASE_RECOMPUTE);

    struct replay runs[SPSIM_LAYER_MAX_OPS];
    uint32_t nruns = replay_runs(L, runs, SPSIM_LAYER_MAX_OPS);
    for (int i = (int)L->nops - 1; i >= 0; i--) {
        for (uint32_t r = 0; r < nruns; r++)
            if (runs[r].anchor == (uint32_t)i)
                for (uint32_t j = runs[r].first; j <= runs[r].last; j++)
                    forward_step(&b, &L->ops[j], SPSIM_PHASE_RECOMPUTE);
        backward_step(&b, L, (uint32_t)i);
    }
}
