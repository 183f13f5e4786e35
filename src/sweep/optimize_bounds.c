/*
 * The optimizer's bounds and the canonical form of a configuration (doc/sweep.md "How optimize
 * searches"). Each bound is a consequence of how spsim_compose_into composes a result from its
 * layer summary (src/engine/evaluate.c and the files it composes with), never a guess: if one were
 * not a bound the search would return another answer than the exhaustive evaluation of its space,
 * which tests/test_optimize.c compares.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "engine/collective_model.h"
#include "engine/eval.h"
#include "engine/moe.h"
#include "engine/stages.h"
#include "optimize_internal.h"

/*
 * The floor of a summary. compose_time's critical rank sets the steady state, mb times its wall
 * (rank_time: its decoder layers' forward, backward and recompute walls, the embedding on rank
 * 0, the output layer on rank p − 1, offload stalls, MTP, all >= 0), and the bubble is
 * (p − 1)/v times the mean rank wall `avg`. Both are at least the mean over the ranks of their
 * walls: every decoder layer is built by one rank, so the walls sum to at least
 * L · w_min + w_embedding + w_output with w_min the least wall of a layer kind (an MoE model's
 * MoE and dense layers). The critical rank is the slowest of ranks 0, p − 1 and 1 (the others
 * build what rank 1 builds, or rank 0's layers without the embedding), and with equal middle
 * ranks the slowest of those is at least the mean; critical_stage's avg is the same mean.
 * The block recompute method replays fewer layers than it builds: without their recompute
 * walls, `sum_no_replay`. The EP all-to-all overlap (ep_a2a_overlap) takes from the iteration
 * at most the MoE layers' exposed token exchanges of every micro-batch, a fraction ρ = e / w of
 * an MoE layer's wall w, so at most ρ of the critical rank's: the steady state keeps 1 − ρ.
 */
/* rank_time's backward window (bwd_s and recompute_s of its blocks): at most its layers at the
 * slower kind's, plus every block a rank can add (the MTP depths: mtp_time). */
static void
backward_ceiling(const struct spsim_model *model, const struct spsim_layer_summary *le,
                 struct spsim_opt_floor *f)
{
    const struct spsim_block_totals *L = &le->layer, *E = &le->embedding, *O = &le->output;
    f->layer_backward = L->bwd_s + L->recompute_s;
    if (le->has_dense)
        f->layer_backward = spsim_max_d(f->layer_backward, le->dense.bwd_s + le->dense.recompute_s);
    f->ends_backward = E->bwd_s + E->recompute_s + O->bwd_s + O->recompute_s;
    if (le->params_mtp)
        f->ends_backward +=
            model->shape.mtp_layers *
            (E->bwd_s + le->mtp.bwd_s + f->layer_backward + O->bwd_s + le->mtp.recompute_s);
}

/* A block's wall per micro-batch, or with `compute` its computation alone (fold_step: a step's
 * wall is its computation and its exposed communication, both >= 0, host_excess >= 0). */
static double
block_wall(const struct spsim_block_totals *b, bool compute, bool replay)
{
    if (compute)
        return b->fwd_compute_s + b->bwd_compute_s + (replay ? b->recompute_compute_s : 0);
    return b->fwd_s + b->bwd_s + (replay ? b->recompute_s : 0);
}

void
spsim_opt_floor_of(const struct spsim_model *model, const struct spsim_layer_summary *le,
                   bool compute, struct spsim_opt_floor *f)
{
    const struct spsim_block_totals *L = &le->layer, *E = &le->embedding, *O = &le->output;
    const struct spsim_block_totals *D = le->has_dense ? &le->dense : &le->layer;
    for (int r = 0; r < 2; r++) {
        f->kind[0][r] = block_wall(L, compute, r);
        f->kind[1][r] = block_wall(D, compute, r);
    }
    double layer = spsim_min_d(f->kind[0][0], f->kind[1][0]);
    double layer_replay = spsim_min_d(f->kind[0][1], f->kind[1][1]);
    f->embedding = block_wall(E, compute, true);
    f->output = block_wall(O, compute, true);
    f->layer = layer_replay;
    f->layer_no_replay = layer;
    f->layers = model->shape.layers;
    /* mtp_time: each depth runs the embedding, its own rows, a layer of the last decoder
     * layer's kind and the output layer. */
    bool dense_last = le->has_dense && !spsim_model_layer_is_moe(model, model->shape.layers - 1);
    double mtp = model->shape.mtp_layers * (f->embedding + block_wall(&le->mtp, compute, true) +
                                            f->kind[dense_last][0] + f->output);
    f->last = f->output + (le->params_mtp ? mtp : 0);
    f->mtp = le->params_mtp ? model->shape.mtp_layers : 0;
    f->sum = f->layers * layer_replay + f->embedding + f->last;
    f->sum_no_replay = f->layers * layer + f->embedding + f->last;
    backward_ceiling(model, le, f);
    double moe = L->fwd_s + L->bwd_s + L->recompute_s;
    f->keep = 1.0;
    f->keep_a2a = moe > 0 && !compute ? spsim_max_d(0.0, 1.0 - L->ep_exposed_s / moe) : 0.0;
}

/* iteration_s >= mb · keep · wall + (p − 1)/v · mean, wall the critical rank's, at least the
 * mean and at least each of ranks 0, 1 and p − 1 (their layers at the least layer wall, the
 * embedding on rank 0, the output layer on rank p − 1): every other line of the iteration
 * (point-to-point, data parallelism, optimizer, ...) is >= 0. */
void
spsim_opt_shape_layers(const struct spsim_model *model, const struct spsim_stage_plan *plan,
                       struct spsim_opt_shape *x)
{
    /* One pass over the virtual stages in their c·p + r order, the offset of each the sum of
     * the layers before it (spsim_stage_chunk_offset's, without its loop per chunk). */
    const uint32_t ranks[3] = {0, plan->p > 2 ? 1 : 0, plan->p - 1};
    for (int i = 0; i < 3; i++)
        x->built[i] = x->main[i] = 0;
    uint32_t off = 0;
    for (uint32_t c = 0; c < plan->v; c++)
        for (uint32_t r = 0; r < plan->p; r++) {
            uint32_t n = spsim_stage_chunk_layers(plan, r, c);
            for (int i = 0; i < 3; i++) {
                if (ranks[i] != r || (i == 1 && plan->p <= 2))
                    continue;
                x->built[i] += n;
                if (!model->shape.experts) /* every layer of the main kind: the same sum */
                    x->main[i] += n;
                for (uint32_t l = off; l < off + n && model->shape.experts; l++)
                    x->main[i] += spsim_model_layer_is_moe(model, l);
            }
            off += n;
        }
}

/* A rank's layers at their kinds' walls. */
static double
rank_layers(const struct spsim_opt_floor *f, const struct spsim_opt_shape *x, int i, bool replay)
{
    return x->main[i] * f->kind[0][replay] + (x->built[i] - x->main[i]) * f->kind[1][replay];
}

double
spsim_opt_iteration_lb(const struct spsim_opt_floor *f, const struct spsim_opt_shape *x,
                       bool replay, bool a2a)
{
    double mean = (replay ? f->sum : f->sum_no_replay) / x->p, wall = mean;
    if (x->p == 1)
        wall = spsim_max_d(wall, rank_layers(f, x, 0, replay) + f->embedding + f->last);
    else {
        wall = spsim_max_d(wall, rank_layers(f, x, 0, replay) + f->embedding);
        wall = spsim_max_d(wall, rank_layers(f, x, 2, replay) + f->last);
        wall = spsim_max_d(wall, x->p > 2 ? rank_layers(f, x, 1, replay) : 0);
    }
    return x->micro * (a2a ? f->keep_a2a : f->keep) * wall + (x->p - 1.0) / x->v * mean;
}

/* A collective's time over the dp·cp group (strided by tp) as dp_time.c collective() times
 * it, remembered in the pipeline's table. */
static double
dp_collective_s(const struct spsim_sweep_point *pt, struct spsim_opt_pipeline *pl, int which,
                int g16, int rank, enum spsim_coll_op op, double bytes)
{
    double *t = &pl->coll[which][g16][rank];
    struct spsim_coll_time ct;
    if (*t >= 0)
        return *t;
    *t = 0;
    if (spsim_collective_time(pt->hw, op,
                              spsim_group_place(pt->hw, pt->par.dp * pt->par.cp, pt->par.tp), bytes,
                              1.0, &ct) != SPSIM_OK)
        return 0;
    *t = ct.time_s;
    if (which == 4) { /* the ReduceScatter beside a backward (dp_time.c shared_finish) */
        const struct spsim_hardware *hw = pt->hw;
        bool nvlink = ct.tier == SPSIM_TIER_NVLINK;
        double bytes0 = nvlink ? ct.wire_bytes : ct.network_bytes;
        double most = ct.wire_bytes / spsim_max_d(ct.time_s - ct.latency_s, 1e-12);
        double cap = nvlink ? hw->nvlink.busbw_Bps[SPSIM_COLL_ALL_GATHER]
                            : hw->nic_achievable_Bps * hw->nics_per_node / hw->gpus_per_node;
        *t = bytes0 / spsim_min_d(most, cap) + ct.latency_s;
    }
    return *t;
}

/*
 * dp_exposed_s for rank `r` (parameters P on one GPU), what no overlap hides (dp_time.c
 * dp_exposed, zero_exposed): without --overlap-grad-reduce the AllReduce (zero 0) or the
 * ReduceScatter and AllGather (1) whole; with it the AllGather after the step (1 without
 * --overlap-param-gather); optim_grads (2) reduce-scatters every micro-batch beside its
 * backward and gathers once after the step without --overlap-param-gather, optim_grads_params
 * (3) gathers every layer before each pass, the first layer of each pass exposed:
 * 2 · mb · T_AG(layer). A dense model's gradients are P·g bytes (g = 4 fp32, 2 in the parameter
 * dtype), its weights 2P.
 */
static double
dp_floor_s(const struct spsim_sweep_point *pt, const struct spsim_opt_shape *x,
           struct spsim_opt_pipeline *pl, int r)
{
    const struct spsim_parallel *p = &pt->par;
    uint32_t D = p->dp * p->cp, z = p->zero ? p->zero : p->distributed_optimizer;
    bool fp32 = p->grad_reduce_in_fp32 < 0 ? p->dtype != SPSIM_DTYPE_FP16 : p->grad_reduce_in_fp32;
    double P = pl->params[r], grads = P * (fp32 ? 4.0 : 2.0);
    int g = fp32 ? 0 : 1;
    if (D <= 1 || pl->moe)
        return 0; /* an MoE model's experts reduce over their own group: not bounded here */
    if (z == 0)
        return p->overlap_grad_reduce
                   ? 0
                   : dp_collective_s(pt, pl, 0, g, r, SPSIM_COLL_ALL_REDUCE, grads);
    double ag = dp_collective_s(pt, pl, 2, 0, r, SPSIM_COLL_ALL_GATHER, 2.0 * P);
    if (z == 1 && !p->overlap_grad_reduce)
        return dp_collective_s(pt, pl, 1, g, r, SPSIM_COLL_REDUCE_SCATTER, grads) + ag;
    if (z == 1)
        return p->overlap_param_gather ? 0 : ag;
    /* optim_grads and optim_grads_params: every micro-batch's ReduceScatter, at no more than
     * its own rate or its link's (the max-min share of shared_finish gives no more), beside the
     * micro-batch's backward (at most its whole wall). */
    double rs = x->micro * spsim_max_d(0.0, dp_collective_s(pt, pl, 4, g, r,
                                                            SPSIM_COLL_REDUCE_SCATTER, grads) -
                                                x->backward_s);
    if (z == 2)
        return rs + (p->overlap_param_gather ? 0 : ag);
    return rs + 2.0 * x->micro *
                    dp_collective_s(pt, pl, 3, 0, 0, SPSIM_COLL_ALL_GATHER, 2.0 * pl->layer_params);
}

/* The GPU holding the memory peak is one of ranks 0, p − 1 and 1 (memory.c peak_stage): the
 * least of their bounds. The optimizer's time grows with the parameters; a collective's need
 * not, so each candidate is timed. */
double
spsim_opt_sharding_lb(const struct spsim_sweep_point *pt, const struct spsim_opt_shape *x,
                      struct spsim_opt_pipeline *pl)
{
    double least = -1, D = (double)pt->par.dp * pt->par.cp;
    /* LoRA: only the adapters are reduced and stepped; the CPU offload's step overlaps its
     * copies; HSDP's inner collectives span D/R ranks (maybe one node's NVLink where D spans
     * the network) and its outer ones are not timed here: no bound */
    if (pt->par.lora_rank || pt->par.optimizer_cpu_offload || pt->par.dist_opt_instances > 1)
        return 0;
    for (int r = 0; r < 3; r++) {
        double P = pl->params[r];
        if (P <= 0)
            continue;
        double t = dp_floor_s(pt, x, pl, r) + spsim_optimizer_step_params_s(pt->hw, &pt->par, P, D);
        least = least < 0 || t < least ? t : least;
    }
    return least > 0 ? least : 0;
}

uint64_t
spsim_opt_key_lb(enum spsim_sweep_by by, double iteration_lb, double tokens, double per_token_mfu)
{
    /* The bound stays 1e-9 below what it proves (rounding of the figures it is compared with;
     * its slack is several per cent). A key of 0 bounds nothing. */
    double t = iteration_lb * (1.0 - 1e-9), v;
    uint64_t bits;
    if (!(t > 0))
        return 0;
    switch (by) {
    case SPSIM_BY_ITERATION_S:
        memcpy(&bits, &t, sizeof(bits));
        return bits;
    case SPSIM_BY_TOKENS_PER_S:
    case SPSIM_BY_MFU:
        v = tokens / t * (by == SPSIM_BY_MFU ? per_token_mfu : 1.0);
        if (!(v > 0))
            return 0;
        memcpy(&bits, &v, sizeof(bits));
        return ~bits;
    default:
        return 0;
    }
}

static int64_t
val(const struct spsim_sweep *sw, const uint32_t *d, int axis)
{
    return sw->v[axis][d[axis]];
}

/* A value of an axis as the configuration resolves it at this point: equal resolutions
 * evaluate alike. */
typedef int64_t (*resolve_fn)(const struct spsim_sweep_point *pt, int64_t v);

/* Whether an earlier value of `axis` resolves as this point's does. */
static bool
earlier_equal(const struct spsim_sweep *sw, const uint32_t *d, int axis, resolve_fn resolve,
              const struct spsim_sweep_point *pt)
{
    int64_t mine = resolve(pt, val(sw, d, axis));
    for (uint32_t i = 0; i < d[axis]; i++)
        if (resolve(pt, sw->v[axis][i]) == mine)
            return true;
    return false;
}

static int64_t
resolve_flash(const struct spsim_sweep_point *pt, int64_t v)
{
    return v < 0 ? pt->model->shape.attention == SPSIM_ATTENTION_FLASH : v == 1;
}

/* spsim_layer_config_from: selective's modules 0 are Megatron's default, core_attn. */
static int64_t
resolve_modules(const struct spsim_sweep_point *pt, int64_t v)
{
    return pt->par.recompute == SPSIM_RECOMPUTE_SELECTIVE && v == 0 ? SPSIM_RMOD_CORE_ATTN : v;
}

/* compose.h grad_bytes: -1 is fp32 except for fp16. */
static int64_t
resolve_grad(const struct spsim_sweep_point *pt, int64_t v)
{
    return v < 0 ? pt->par.dtype != SPSIM_DTYPE_FP16 : v;
}

/* spsim_moe_etp: 0 is tp; a dense model ignores etp 0, 1 and tp alike (moe.c check_dense). */
static int64_t
resolve_etp(const struct spsim_sweep_point *pt, int64_t v)
{
    if (pt->model->shape.experts)
        return v ? v : pt->par.tp;
    return v == 0 || v == 1 || v == pt->par.tp ? -1 : v;
}

/* A dense model ignores the dispatcher (check_dense refuses nothing of it). */
static int64_t
resolve_dispatcher(const struct spsim_sweep_point *pt, int64_t v)
{
    return pt->model->shape.experts ? v : -1;
}

/* cp 1: spsim_layer_config_from and check_context ignore the type, except a2a+p2p (refused). */
static int64_t
resolve_cp_comm(const struct spsim_sweep_point *pt, int64_t v)
{
    return pt->par.cp == 1 && v != SPSIM_CP_A2A_P2P ? -1 : v;
}

static int64_t
resolve_seq(const struct spsim_sweep_point *pt, int64_t v)
{
    return v ? v : pt->model->shape.seq_len;
}

/* Without interleaving the sends block whatever the switch (p2p_exposed_s). */
static int64_t
resolve_p2p(const struct spsim_sweep_point *pt, int64_t v)
{
    return pt->par.vpp == 1 ? -1 : v;
}

/* Megatron-FSDP forces the overlapped reduction for optim_grads and optim_grads_params
 * (megatron_fsdp.py; dp_time.c zero_exposed reads neither switch's reduction path) and
 * optim_grads_params gathers each layer's weights before its passes whatever
 * --overlap-param-gather says (zero_exposed). */
static int64_t
resolve_overlap_grad(const struct spsim_sweep_point *pt, int64_t v)
{
    return pt->par.zero >= 2 ? -1 : v;
}

static int64_t
resolve_param_gather(const struct spsim_sweep_point *pt, int64_t v)
{
    return pt->par.zero >= 3 ? -1 : v;
}

/* max_gbs: the batch it derives (sweep.c derived_axes). */
static int64_t
resolve_max_gbs(const struct spsim_sweep_point *pt, int64_t v)
{
    const struct spsim_parallel *p = &pt->par;
    uint64_t step = (uint64_t)p->dp * p->mbs * (p->vpp > 1 ? p->pp : 1);
    return step ? (int64_t)((uint64_t)v / step * step) : v;
}

bool
spsim_opt_layer_alias(const struct spsim_sweep *sw, const uint32_t *d,
                      const struct spsim_sweep_point *pt)
{
    static const struct {
        int axis;
        resolve_fn resolve;
    } axes[] = {{SPSIM_AXIS_FLASH_ATTN, resolve_flash},
                {SPSIM_AXIS_RECOMPUTE_MODULES, resolve_modules},
                {SPSIM_AXIS_ETP, resolve_etp},
                {SPSIM_AXIS_MOE_DISPATCHER, resolve_dispatcher},
                {SPSIM_AXIS_CP_COMM_TYPE, resolve_cp_comm},
                {SPSIM_AXIS_SEQ, resolve_seq}};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(axes); i++)
        if (d[axes[i].axis] && earlier_equal(sw, d, axes[i].axis, axes[i].resolve, pt))
            return true;
    return false;
}

/* The sharding level of a (distributed optimizer, zero) pair (compose.h zero_level). */
static int64_t
level(int64_t distopt, int64_t zero)
{
    return zero ? zero : distopt;
}

/* dp·cp > 1: (distributed optimizer, zero) pairs of one level evaluate alike; the first of them
 * in the point order is the representative (they are valid alike: check_sharding and the MoE
 * rules read the level, fp8_param_gather is no axis). */
static bool
sharding_alias(const struct spsim_sweep *sw, const uint32_t *d)
{
    const int64_t *dov = sw->v[SPSIM_AXIS_DISTRIBUTED_OPTIMIZER], *zv = sw->v[SPSIM_AXIS_ZERO];
    uint32_t di = d[SPSIM_AXIS_DISTRIBUTED_OPTIMIZER], zi = d[SPSIM_AXIS_ZERO];
    int64_t mine = level(dov[di], zv[zi]);
    for (uint32_t a = 0; a <= di; a++)
        for (uint32_t b = 0; b < (a == di ? zi : sw->n[SPSIM_AXIS_ZERO]); b++)
            if (level(dov[a], zv[b]) == mine)
                return true;
    return false;
}

/* The four sharding axes in the point order. */
static const int sharding_axes[4] = {SPSIM_AXIS_DISTRIBUTED_OPTIMIZER,
                                     SPSIM_AXIS_OVERLAP_GRAD_REDUCE, SPSIM_AXIS_ZERO,
                                     SPSIM_AXIS_OVERLAP_PARAM_GATHER};

/* Set tuple `t` (a mixed-radix number over the four axes) into a configuration; false when
 * past the last. */
static bool
sharding_tuple(const struct spsim_sweep *sw, uint64_t t, uint32_t *digits)
{
    for (int k = 3; k >= 0; k--) {
        digits[k] = (uint32_t)(t % sw->n[sharding_axes[k]]);
        t /= sw->n[sharding_axes[k]];
    }
    return t == 0;
}

/*
 * dp·cp = 1 and no expert data parallelism (edp <= 1): nothing is sharded or reduced, so the
 * distributed optimizer, zero, the overlapped reduction and the parameter gather change no
 * figure (memory.c stage_static shards over one rank, dp_time.c dp_exposed and comm.c zero_comm
 * need dp·cp > 1, optimizer_step_s divides by 1). The representative is the first of those tuples
 * in the point order that spsim_parallel_check admits.
 */
static bool
inert_sharding_alias(const struct spsim_sweep *sw, const uint32_t *d,
                     const struct spsim_sweep_point *pt)
{
    uint32_t mine[4], digits[4];
    for (int k = 0; k < 4; k++)
        mine[k] = d[sharding_axes[k]];
    for (uint64_t t = 0; sharding_tuple(sw, t, digits); t++) {
        if (memcmp(digits, mine, sizeof(mine)) == 0)
            return false;
        struct spsim_parallel p = pt->par;
        p.distributed_optimizer = sw->v[sharding_axes[0]][digits[0]] != 0;
        p.overlap_grad_reduce = sw->v[sharding_axes[1]][digits[1]] != 0;
        p.zero = (uint32_t)sw->v[sharding_axes[2]][digits[2]];
        p.overlap_param_gather = sw->v[sharding_axes[3]][digits[3]] != 0;
        if (spsim_parallel_check(pt->model, pt->hw, &p, NULL, NULL) == SPSIM_OK)
            return true;
    }
    return false;
}

/* Full recomputation's (method, layers) as they evaluate (memory.c chunk_activations,
 * compose_comm): n = min(N, layers per chunk); uniform with n = 1 and block with n = all the
 * chunk's layers are the default method; uniform ones of equal n alike. -1: not a valid
 * pair. */
static int64_t
method_class(int64_t method, int64_t layers, uint64_t per_chunk, uint64_t per_rank)
{
    if (method == SPSIM_RECOMPUTE_METHOD_DEFAULT)
        return layers == 0 ? 0 : -1;
    if (layers < 1 || (uint64_t)layers > per_rank)
        return -1;
    uint64_t n = (uint64_t)layers < per_chunk ? (uint64_t)layers : per_chunk;
    if ((method == SPSIM_RECOMPUTE_METHOD_UNIFORM && n == 1) ||
        (method == SPSIM_RECOMPUTE_METHOD_BLOCK && n == per_chunk))
        return 0;
    return (int64_t)(method * 65536 + n);
}

static bool
method_alias(const struct spsim_sweep *sw, const uint32_t *d, const struct spsim_sweep_point *pt)
{
    const struct spsim_parallel *p = &pt->par;
    uint32_t mi = d[SPSIM_AXIS_RECOMPUTE_METHOD], li = d[SPSIM_AXIS_RECOMPUTE_LAYERS];
    if (p->recompute != SPSIM_RECOMPUTE_FULL || (mi == 0 && li == 0) || p->pp == 0 || p->vpp == 0)
        return false;
    uint64_t per_rank = pt->model->shape.layers / p->pp, per_chunk = per_rank / p->vpp;
    const int64_t *mv = sw->v[SPSIM_AXIS_RECOMPUTE_METHOD],
                  *lv = sw->v[SPSIM_AXIS_RECOMPUTE_LAYERS];
    int64_t mine = method_class(mv[mi], lv[li], per_chunk, per_rank);
    if (mine < 0)
        return false;
    for (uint32_t a = 0; a <= mi; a++)
        for (uint32_t b = 0; b < (a == mi ? li : sw->n[SPSIM_AXIS_RECOMPUTE_LAYERS]); b++)
            if (method_class(mv[a], lv[b], per_chunk, per_rank) == mine)
                return true;
    return false;
}

bool
spsim_opt_sharding_alias(const struct spsim_sweep *sw, const uint32_t *d,
                         const struct spsim_sweep_point *pt)
{
    const struct spsim_parallel *p = &pt->par;
    if ((d[SPSIM_AXIS_GRAD_REDUCE_IN_FP32] &&
         earlier_equal(sw, d, SPSIM_AXIS_GRAD_REDUCE_IN_FP32, resolve_grad, pt)) ||
        (d[SPSIM_AXIS_OVERLAP_GRAD_REDUCE] &&
         earlier_equal(sw, d, SPSIM_AXIS_OVERLAP_GRAD_REDUCE, resolve_overlap_grad, pt)) ||
        (d[SPSIM_AXIS_OVERLAP_PARAM_GATHER] &&
         earlier_equal(sw, d, SPSIM_AXIS_OVERLAP_PARAM_GATHER, resolve_param_gather, pt)))
        return true;
    uint64_t dc = (uint64_t)p->dp * p->cp;
    bool inert = dc == 1 && (!pt->model->shape.experts || spsim_moe_edp(p) <= 1);
    return inert ? inert_sharding_alias(sw, d, pt) : sharding_alias(sw, d);
}

bool
spsim_opt_alias(const struct spsim_sweep *sw, const uint32_t *d, const struct spsim_sweep_point *pt)
{
    return spsim_opt_layer_alias(sw, d, pt) ||
           (d[SPSIM_AXIS_OVERLAP_P2P] &&
            earlier_equal(sw, d, SPSIM_AXIS_OVERLAP_P2P, resolve_p2p, pt)) ||
           (d[SPSIM_AXIS_MAX_GBS] &&
            earlier_equal(sw, d, SPSIM_AXIS_MAX_GBS, resolve_max_gbs, pt)) ||
           method_alias(sw, d, pt) || spsim_opt_sharding_alias(sw, d, pt);
}

bool
spsim_opt_layer_invalid(const struct spsim_sweep *sw, const uint32_t *d, bool recompute_none,
                        struct spsim_sweep_point *probe)
{
    spsim_sweep_point_of(sw, d, probe);
    struct spsim_parallel *p = &probe->par;
    uint64_t tc = (uint64_t)p->tp * p->cp;
    if (sw->use_gpus) {
        if (probe->gpus % tc != 0)
            return true; /* no pp gives an integer dp */
        p->dp = (uint32_t)(probe->gpus / tc);
    }
    p->pp = p->vpp = 1;
    p->gbs = (uint64_t)p->mbs * p->dp;
    p->account_embedding = p->account_loss = false;
    p->first_stage_layers = p->last_stage_layers = 0;
    p->distributed_optimizer = p->overlap_grad_reduce = p->overlap_param_gather = false;
    p->zero = 0;
    p->dist_opt_instances = 1; /* HSDP needs a sharding level: a composition axis too */
    p->recompute_method = SPSIM_RECOMPUTE_METHOD_DEFAULT;
    p->recompute_layers = p->offload_layers = 0;
    p->moe_a2a_overlap = p->delay_wgrad_compute = false;
    if (recompute_none) {
        p->recompute = SPSIM_RECOMPUTE_NONE;
        p->recompute_modules = 0;
    }
    /* The probe is the most permissive composition: pp 1 gives the largest dp (the expert
     * grid's divisibility by tp·cp·dp holds at some pp only if it holds there), the batch
     * divides, nothing else of the composition is asked. Without a GPU count dp is an axis and
     * the probe proves nothing. */
    return sw->use_gpus && spsim_parallel_check(probe->model, probe->hw, p, NULL, NULL) != SPSIM_OK;
}

int
spsim_opt_comp_only(const struct spsim_sweep *sw, const uint32_t *d, int axis)
{
    if (axis != SPSIM_AXIS_RECOMPUTE_LAYERS && axis != SPSIM_AXIS_OFFLOAD_LAYERS)
        return -1;
    uint32_t zero = 0;
    while (zero < sw->n[axis] && sw->v[axis][zero] != 0)
        zero++;
    if (zero == sw->n[axis])
        return -1;
    /* Digit 1 of a value other than 0 stands for every such value: comp_skip's rule for one
     * reads nothing of the value but that it is not 0, except the layer count's range. */
    uint32_t other = zero == 0 ? 1 : 0;
    if (sw->n[axis] < 2)
        return (int)zero;
    uint32_t probe[SPSIM_AXIS_COUNT];
    memcpy(probe, d, sizeof(probe));
    if (axis == SPSIM_AXIS_RECOMPUTE_LAYERS) {
        int64_t rec = val(sw, d, SPSIM_AXIS_RECOMPUTE);
        int64_t method = val(sw, d, SPSIM_AXIS_RECOMPUTE_METHOD);
        return rec != SPSIM_RECOMPUTE_FULL || method == SPSIM_RECOMPUTE_METHOD_DEFAULT ? (int)zero
                                                                                       : -1;
    }
    return spsim_opt_comp_skip(sw, probe, axis, other) ? (int)zero : -1;
}

/* What recomputing more could take from a block's wall: the backward's TE userbuffers
 * collectives exposed longer than they last (see spsim_opt_ub_slack). */
static double
ub_block_slack(const struct spsim_block_eval *be)
{
    double slack = 0;
    for (uint32_t i = 0; i < be->sched.nsteps; i++) {
        const struct spsim_step *st = &be->sched.steps[i];
        bool ub =
            st->overlap == SPSIM_OVERLAP_RING_EXCHANGE || st->overlap == SPSIM_OVERLAP_PIPELINE;
        if (ub && st->phase == SPSIM_PHASE_BACKWARD)
            slack += spsim_max_d(0.0, be->cost[i].exposed_comm_s - be->cost[i].comm_s);
    }
    return slack;
}

double
spsim_opt_ub_slack(const struct spsim_sweep_point *pt, struct spsim_layer_eval *le)
{
    struct spsim_layer_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    spsim_layer_config_from(&pt->model->shape, &pt->par, &cfg);
    if (!cfg.tp_comm_overlap)
        return 0;
    if (spsim_layer_evaluate(&pt->model->shape, pt->hw, &cfg,
                             spsim_model_padded_vocab(pt->model, pt->par.tp), le, NULL) != SPSIM_OK)
        return INFINITY;
    double slack = ub_block_slack(&le->layer);
    return le->has_dense ? spsim_max_d(slack, ub_block_slack(&le->dense)) : slack;
}

void
spsim_opt_floor_less(struct spsim_opt_floor *f, double slack)
{
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < 2; r++)
            f->kind[k][r] = spsim_max_d(0.0, f->kind[k][r] - slack);
    f->layer = spsim_max_d(0.0, f->layer - slack);
    f->layer_no_replay = spsim_max_d(0.0, f->layer_no_replay - slack);
    f->last = spsim_max_d(f->output, f->last - f->mtp * slack);
    f->sum = f->layers * f->layer + f->embedding + f->last;
    f->sum_no_replay = f->layers * f->layer_no_replay + f->embedding + f->last;
}

double
spsim_opt_static_bytes(double params, double experts, double unit, int level, bool fp32, double D,
                       double edp)
{
    /* memory.c stage_static and fsdp_static without their roundings up: bf16 weights (2 B),
     * main gradients (4 B fp32, 2 B in the parameter dtype), Adam's fp32 master and moments
     * (12 B; 16 B with 16-bit gradients, an fp32 copy of them), sharded over D = dp·cp (the
     * experts' over their data-parallel group) from level 1, the gradients from level 2 and the
     * weights at level 3, where two FSDP units of each stay whole. */
    double g = fp32 ? 4.0 : 2.0, o = fp32 ? 12.0 : 16.0;
    double weights = level >= 3 && D > 1 ? 2.0 * params / D + 4.0 * unit : 2.0 * params;
    double grads = level >= 2 && D > 1 ? g * params / D + 2.0 * g * unit : g * params;
    double opt = level >= 1 ? o * ((params - experts) / D + experts / edp) : o * params;
    return weights + grads + opt;
}

/* The sharding levels and gradient dtypes the space holds (bit per level; bit 0 fp32, 1 16-bit
 * gradients, for dtype `dtype`). */
static void
sharding_kinds(const struct spsim_sweep *sw, enum spsim_dtype dtype, uint32_t *levels,
               uint32_t *grads)
{
    *levels = *grads = 0;
    for (uint32_t a = 0; a < sw->n[SPSIM_AXIS_DISTRIBUTED_OPTIMIZER]; a++)
        for (uint32_t b = 0; b < sw->n[SPSIM_AXIS_ZERO]; b++) {
            int64_t z = sw->v[SPSIM_AXIS_ZERO][b];
            *levels |= 1u << (z ? z : sw->v[SPSIM_AXIS_DISTRIBUTED_OPTIMIZER][a] != 0);
        }
    for (uint32_t i = 0; i < sw->n[SPSIM_AXIS_GRAD_REDUCE_IN_FP32]; i++) {
        int64_t g = sw->v[SPSIM_AXIS_GRAD_REDUCE_IN_FP32][i];
        *grads |= (g < 0 ? dtype != SPSIM_DTYPE_FP16 : g != 0) ? 1u : 2u;
    }
}

/* A rank's weights, gradients and optimizer state at the space's least sharding. */
static double
rank_static(const struct spsim_sweep *sw, const struct spsim_sweep_point *probe,
            const struct spsim_layer_summary *le, double P, double E, double D, double edp)
{
    uint32_t levels, grads;
    /* Muon holds 8 B of state for most weights, the CPU offload part of it on the host, less
     * than the Adam bytes below: no bound */
    if (probe->par.optimizer == SPSIM_OPTIMIZER_MUON || probe->par.optimizer_cpu_offload)
        return 0;
    sharding_kinds(sw, probe->par.dtype, &levels, &grads);
    double least = -1;
    for (int z = 0; z < 4; z++)
        for (int g = 0; g < 2; g++)
            if ((levels >> z & 1) && (grads >> g & 1)) {
                double b =
                    spsim_opt_static_bytes(P, E, (double)le->params_layer, z, g == 0, D, edp);
                least = least < 0 || b < least ? b : least;
            }
    return least > 0 ? least : 0;
}

/*
 * The least memory a configuration of summary `le` (its probe `probe`) on p ranks can need when
 * rank 0 holds `m0` layers of the main kind of `b0` and rank p − 1 `ml` of `bl`: the peak rank
 * is the most loaded of spsim_stage_candidate's, which are ranks 0 and p − 1 among them
 * (memory.c peak_stage), each holding at least its weights, gradients and optimizer state
 * (spsim_opt_static_bytes, the parameters as memory.c rank_parameters counts them) at the
 * least sharding the space holds; activations and FP8 weight copies only add to them.
 */
double
spsim_opt_ranks_static(const struct spsim_sweep *sw, const struct spsim_layer_summary *le,
                       const struct spsim_sweep_point *probe, double p, double m0, double b0,
                       double ml, double bl)
{
    const struct spsim_model *m = probe->model;
    double pl = (double)le->params_layer, pd = le->has_dense ? (double)le->params_dense_layer : pl;
    double ple = (double)le->params_layer_experts, tc = (double)probe->par.tp * probe->par.cp;
    double dp = (double)probe->gpus / (tc * p), D = dp * probe->par.cp;
    double edp =
        m->shape.experts ? tc * dp / ((double)probe->par.ep * spsim_moe_etp(&probe->par)) : D;
    /* the MTP depths on rank p − 1: their own rows and a layer of either kind each */
    double mtp =
        le->params_mtp ? m->shape.mtp_layers * ((double)le->params_mtp + spsim_min_d(pl, pd)) : 0;
    double copy = p > 1 && (m->shape.tied_embeddings || m->shape.mtp_layers)
                      ? (double)le->padded_vocab * m->shape.hidden / probe->par.tp
                      : 0;
    double P0 = m0 * pl + (b0 - m0) * pd + (double)le->params_embedding;
    double Pl = ml * pl + (bl - ml) * pd + (double)le->params_output + mtp + copy;
    double E0 = m->shape.experts ? m0 * ple : 0, El = m->shape.experts ? ml * ple : 0;
    if (p == 1) /* one rank holds both ends */
        return rank_static(sw, probe, le, P0 + Pl - ml * pl - (bl - ml) * pd, E0, D, edp);
    return spsim_max_d(rank_static(sw, probe, le, P0, E0, D, edp),
                       rank_static(sw, probe, le, Pl, El, D, edp));
}

bool
spsim_opt_comp_skip(const struct spsim_sweep *sw, const uint32_t *d, int axis, uint32_t i)
{
    int64_t v = sw->v[axis][i], rec = val(sw, d, SPSIM_AXIS_RECOMPUTE),
            pp = val(sw, d, SPSIM_AXIS_PP);
    const struct spsim_model *m = sw->models[d[SPSIM_AXIS_MODEL]];
    bool plain = val(sw, d, SPSIM_AXIS_PP_SPLIT) == 0, moe = m->shape.experts > 0;
    if (pp == SPSIM_AXIS_AUTO)
        return false;
    /* spsim_parallel_check: check_recompute_method, check_pipeline's uneven rule, moe.c. */
    if (axis == SPSIM_AXIS_RECOMPUTE_METHOD)
        return v != SPSIM_RECOMPUTE_METHOD_DEFAULT &&
               (rec != SPSIM_RECOMPUTE_FULL || !plain || moe);
    if (axis == SPSIM_AXIS_RECOMPUTE_LAYERS) {
        int64_t method = val(sw, d, SPSIM_AXIS_RECOMPUTE_METHOD);
        if (rec != SPSIM_RECOMPUTE_FULL || method == SPSIM_RECOMPUTE_METHOD_DEFAULT)
            return v != 0;
        return v < 1 || v > (int64_t)(m->shape.layers / (uint64_t)pp);
    }
    /* check_offload, check_pipeline, moe.c. */
    if (axis == SPSIM_AXIS_OFFLOAD_LAYERS && v > 0)
        return pp != 1 || rec != SPSIM_RECOMPUTE_NONE || (uint64_t)v >= m->shape.layers || !plain ||
               moe || sw->hws[d[SPSIM_AXIS_HW]]->host_d2h_Bps <= 0;
    return false;
}
