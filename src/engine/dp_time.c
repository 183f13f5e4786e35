/* Time of data parallelism: the gradient reduction and parameter gather (bucketed and
 * overlapped, or sharded by Megatron-FSDP), the experts' reduction, the gradient and statistics
 * synchronisations of an iteration (tied embedding, FP8 amax, expert bias, MLA/router TP
 * gradients) and the optimizer step. */
#include "config.h"

#include <math.h>

#include "buckets.h"
#include "compose.h"
#include "optimizer.h"

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
    int rc = spsim_memo_maxmin(memo, cap, flows, n, &first_done);
    *finish = first_done + a->latency_s + b->latency_s;
    return rc;
}

/* HSDP's collectives across the R replicas, R ranks `stride` apart, alone: the shard of
 * `grads` gradient bytes over the replica's `inner` ranks all-reduced, or with the outer
 * sharding reduce-scattered (`red`), and its bf16 weight shard gathered (`ag`). */
static int
replica_colls(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
              const struct spsim_parallel *par, const struct shape *x, uint64_t stride,
              double inner, double grads, struct spsim_coll_time *red, struct spsim_coll_time *ag)
{
    *red = *ag = (struct spsim_coll_time){0};
    if (x->R <= 1 || grads <= 0)
        return SPSIM_OK;
    int rc = spsim_memo_collective(
        memo, hw, par->outer_dp_shard ? SPSIM_COLL_REDUCE_SCATTER : SPSIM_COLL_ALL_REDUCE,
        (uint32_t)x->R, stride, ceil(grads / inner), red);
    if (rc == SPSIM_OK && par->outer_dp_shard)
        rc = spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_GATHER, (uint32_t)x->R, stride,
                                   ceil(2.0 * grads / (double)grad_bytes(par) / inner), ag);
    return rc;
}

/* The dense ones (comm.c outer_comm): the replica's D/R ranks, R ranks t·D/R apart. Zero
 * without HSDP. */
static int
outer_colls(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
            const struct spsim_parallel *par, const struct shape *x,
            const struct spsim_comm_report *comm, struct spsim_coll_time *red,
            struct spsim_coll_time *ag)
{
    return replica_colls(memo, hw, par, x, x->t * x->di, (double)x->di, (double)comm->dp_grad_bytes,
                         red, ag);
}

/* HSDP of an MoE model (comm.c expert_outer_comm): the experts' shard of the intra group
 * (edp / R ranks), etp·ep·edp / R ranks apart, all-reduced across the R replicas on the bucket
 * groups' communication stream after their intra ReduceScatter (param_and_grad_buffer.py
 * start_grad_sync; Megatron-FSDP's on the last micro-batch), or with the outer sharding
 * reduce-scattered (`o`) and its bf16 weight shard gathered (`og`); zero without HSDP. */
static int
expert_outer_colls(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                   const struct spsim_parallel *par, const struct shape *x, double grads,
                   struct spsim_coll_time *o, struct spsim_coll_time *og)
{
    return replica_colls(memo, hw, par, x, (uint64_t)spsim_moe_etp(par) * par->ep * x->edi,
                         (double)x->edi, grads, o, og);
}

/*
 * Megatron-FSDP's HSDP on the last micro-batch (megatron_fsdp.py: outer_fsdp_group_grad_reduce
 * only then): each unit's outer reduction waits for its inner ReduceScatter on its own stream
 * (param_and_grad_buffer.py _bucket_group_gradient_reduce), so the units run through three
 * stages, backward tb, inner ReduceScatter ti, outer to per unit (n = L/p units, the stage's
 * times in n equal parts). The outer stream ends at max(E_i + to, tb + ti + n·to), E_i =
 * max(backward, inner finish) the inner one's end; what passes the backward shows.
 */
static double
outer_last_exposed(double bwd, double inner, double outer, double n)
{
    double tb = bwd / n, ti = inner / n, to = outer / n;
    double end = spsim_max_d(spsim_max_d(bwd, inner) + to, tb + ti + n * to);
    return spsim_max_d(0.0, end - bwd);
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
/* An AllGather of `bytes` over the dp·cp group (0 bytes: none). */
static int
dp_gather(struct spsim_coll_memo *memo, const struct spsim_hardware *hw, const struct shape *x,
          double bytes, struct spsim_coll_time *ag)
{
    *ag = (struct spsim_coll_time){0};
    return bytes > 0 ? spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_GATHER, (uint32_t)x->di, x->t,
                                             bytes, ag)
                     : SPSIM_OK;
}

/*
 * Level 3's root unit (memory.c fsdp_static): gathered once an iteration and kept. The
 * embedding's gather comes first in the forward, with nothing to hide behind; the output
 * layer's is prefetched behind the stage's last layer's forward.
 */
static int
root_gather_exposed(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                    const struct spsim_layer_summary *le, const struct shape *x, uint32_t r,
                    double *exposed, double *busy)
{
    bool ok = true;
    struct spsim_coll_time emb, out;
    int rc = dp_gather(memo, hw, x, 2.0 * (double)rank_root_embedding(le, r), &emb);
    if (rc == SPSIM_OK)
        rc = dp_gather(memo, hw, x, 2.0 * (double)rank_root_output(&x->model->shape, le, x, r, &ok),
                       &out);
    *exposed = emb.time_s + spsim_max_d(0.0, out.time_s - le->layer.fwd_s);
    *busy = emb.time_s + out.time_s;
    return rc;
}

/* Level 3: the unit's gather before each layer's forward and backward, the experts' part over
 * the expert data-parallel group after the rest (mcore_fsdp_adapter.py shards the experts on
 * the expert_dp mesh); prefetched, so the next layer's shows by max(0, T_AG − pass) for L/p − 1
 * layers and the first layer's of each pass in full; and the root unit's. */
static int
unit_gathers_exposed(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                     const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                     const struct shape *x, const struct stage_time *crit, uint32_t r, double tog,
                     double *gather, double *busy)
{
    double unit = 2.0 * (double)(le->params_layer - le->params_layer_experts) -
                  (double)spsim_fp8_gather_saved(par, le, 1);
    struct spsim_coll_time ag, ag_e = {0};
    int rc = dp_gather(memo, hw, x, unit, &ag);
    if (rc == SPSIM_OK && x->moe && le->params_layer_experts && x->edi > 1)
        rc = spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_GATHER, (uint32_t)x->edi,
                                   (uint64_t)spsim_moe_etp(par) * par->ep,
                                   2.0 * (double)le->params_layer_experts, &ag_e);
    double root = 0, root_busy = 0;
    if (rc == SPSIM_OK)
        rc = root_gather_exposed(memo, hw, le, x, r, &root, &root_busy);
    double t = ag.time_s + ag_e.time_s, mb = (double)x->micro;
    double fwd = le->layer.fwd_s, bwd = le->layer.bwd_s + le->layer.recompute_s;
    double hidden = spsim_max_d(0.0, t - fwd) + spsim_max_d(0.0, t - bwd);
    *gather = mb * (2.0 * t + ((double)crit->layers - 1.0) * hidden) + root;
    *busy = mb * 2.0 * (double)crit->layers * t + root_busy;
    /* HFSDP: at the first micro-batch each unit's outer AllGather (tog, the stage's in L/p
     * equal parts) runs before its inner one, synchronously (all_gather_params), so the
     * first forward's gathers take tog longer each. */
    *gather += tog + ((double)crit->layers - 1.0) *
                         (spsim_max_d(0.0, t + tog - fwd) - spsim_max_d(0.0, t - fwd));
    return rc;
}

static int
zero_exposed(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
             const struct spsim_parallel *par, const struct spsim_layer_summary *le,
             const struct shape *x, const struct spsim_comm_report *comm,
             const struct stage_time *crit, uint32_t r, double t_send, double *exposed,
             double *outer_s, struct busy *busy)
{
    uint32_t D = (uint32_t)x->di; /* the replica's ranks */
    double grads = (double)comm->dp_grad_bytes, mb = (double)x->micro;
    double weights =
        grads / (double)grad_bytes(par) * 2.0 - (double)spsim_fp8_gather_saved(par, le, x->lps);
    struct spsim_coll_time a, ag, none = {0}, o, og;
    int rc = spsim_memo_collective(memo, hw, SPSIM_COLL_REDUCE_SCATTER, D, x->t, grads, &a);
    if (rc == SPSIM_OK)
        rc = outer_colls(memo, hw, par, x, comm, &o, &og);
    struct spsim_coll_time eo = {0}, eog = {0}; /* the experts' (eo: spsim_expert_dp_exposed's) */
    if (rc == SPSIM_OK && x->moe)
        rc = expert_outer_colls(memo, hw, par, x, (double)comm->expert_dp_grad_bytes, &eo, &eog);
    if (x->moe) /* their weight shards' gather joins the units' first one (unit_gathers_exposed) */
        og.time_s += eog.time_s;
    double finish = 0, gather = 0, gathering = 0;
    if (rc == SPSIM_OK)
        rc = shared_finish(memo, hw, le, x, comm, t_send, (double)crit->layers, &a, &none, a.time_s,
                           &finish);
    if (rc == SPSIM_OK && par->zero >= 3) {
        rc = unit_gathers_exposed(memo, hw, par, le, x, crit, r, og.time_s / (double)crit->layers,
                                  &gather, &gathering);
    } else if (rc == SPSIM_OK && (rc = dp_gather(memo, hw, x, weights, &ag)) == SPSIM_OK) {
        gather = param_gather_exposed(par, crit, ag.time_s);
        gathering = ag.time_s;
    }
    if (rc != SPSIM_OK)
        return rc;
    double rs = mb * spsim_max_d(0.0, finish - crit->bwd_window);
    busy_add(busy, a.tier == SPSIM_TIER_NVLINK, mb * a.time_s + gathering);
    if (x->R > 1) { /* the last micro-batch's exposure includes the outer reduction's */
        rs += outer_last_exposed(crit->bwd_window, finish, o.time_s, (double)crit->layers) -
              spsim_max_d(0.0, finish - crit->bwd_window);
        busy_add(busy, o.tier == SPSIM_TIER_NVLINK, o.time_s + og.time_s);
        *outer_s = o.time_s + og.time_s;
    }
    *exposed = rs + gather;
    return SPSIM_OK;
}

/* Parameters per bucket: --ddp-bucket-size, else max(40,000,000, 1,000,000·dp) over the data-
 * parallel group without CP (distributed_data_parallel.py). */
uint64_t
spsim_bucket_params(const struct spsim_parallel *par, const struct shape *x)
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
    /* HSDP (gradients only): each bucket's shard, 1/(D/R) of it, all-reduced across the
     * replicas after its ReduceScatter on the same communication stream
     * (param_and_grad_buffer.py start_grad_sync): `outer` ranks, else 0. */
    struct spsim_group og;
    uint32_t outer;
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
    int rc = spsim_memo_time(c->memo, c->hw, c->op, c->g, params * c->per, &ct);
    *s = ct.time_s * c->share;
    if (rc == SPSIM_OK && c->outer > 1) {
        rc = spsim_memo_time(c->memo, c->hw, SPSIM_COLL_ALL_REDUCE, c->og,
                             ceil(params * c->per / (double)c->g.size), &ct);
        *s += ct.time_s;
    }
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
    double chunk0 = total - (x->v - 1.0) * plain, S = (double)spsim_bucket_params(par, x);
    *d = (struct spsim_dp_rank){
        .v = (uint32_t)x->v, .head = r * c->slot, .slot = c->slot, .group = (double)x->plan->g};
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
    struct spsim_group g = spsim_group_place(hw, (uint32_t)x->di, x->t);
    struct spsim_group og = spsim_group_place(hw, (uint32_t)x->R, x->t * x->di);
    enum spsim_coll_op op =
        zero_level(par) >= 1 ? SPSIM_COLL_REDUCE_SCATTER : SPSIM_COLL_ALL_REDUCE;
    /* Gradients in their buffer's dtype; parameters gathered in bf16, 2 bytes each. */
    struct dp_plan rs = {memo,
                         hw,
                         g,
                         op,
                         og,
                         (uint32_t)x->R,
                         (double)grad_bytes(par),
                         share,
                         crit->bwd_window / x->v,
                         whole[0],
                         -1,
                         0};
    struct dp_plan ag = {memo, hw,  g,   SPSIM_COLL_ALL_GATHER, og,
                         0,    2.0, 1.0, crit->fwd_wall / x->v, whole[1],
                         -1,   0};
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
int
spsim_dp_exposed(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                 const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                 const struct shape *x, const struct spsim_comm_report *comm,
                 const struct spsim_memory_report *mem, const struct stage_time *crit,
                 double t_send, struct spsim_time_report *tr, struct busy *busy)
{
    double *exposed = &tr->dp_exposed_s;
    *exposed = 0;
    if (x->dc <= 1)
        return SPSIM_OK;
    if (zero_level(par) >= 2)
        return zero_exposed(memo, hw, par, le, x, comm, crit, tr->critical_stage, t_send, exposed,
                            &tr->dp_outer_s, busy);
    double grads = (double)comm->dp_grad_bytes;
    /* LoRA: only the BF16 adapters are updated and gathered (finetune.c). */
    double weights = (grad_bytes(par) == 4 ? grads / 2 : grads) -
                     (le->params_lora_layer ? 0 : (double)spsim_fp8_gather_saved(par, le, x->lps));
    uint32_t D = (uint32_t)x->di; /* the replica's ranks */
    struct spsim_coll_time a, b = {0}, o, og;
    int rc = outer_colls(memo, hw, par, x, comm, &o, &og);
    if (rc != SPSIM_OK)
        return rc;
    if (zero_level(par) >= 1) {
        if ((rc = spsim_memo_collective(memo, hw, SPSIM_COLL_REDUCE_SCATTER, D, x->t, grads, &a)) ||
            (rc = spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_GATHER, D, x->t, weights, &b)))
            return rc;
    } else if ((rc = spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_REDUCE, D, x->t, grads, &a))) {
        return rc;
    }
    double alone = a.time_s + b.time_s + o.time_s;
    busy_add(busy, a.tier == SPSIM_TIER_NVLINK, a.time_s + b.time_s);
    busy_add(busy, o.tier == SPSIM_TIER_NVLINK, o.time_s);
    tr->dp_outer_s = o.time_s;
    tr->dp_buckets = 1;
    tr->param_gather_exposed_s = b.time_s; /* after the step unless --overlap-param-gather */
    /* LoRA: the adapters' gradients, a few tens of MB, fill less than one DDP bucket per model
     * chunk, reduced once that chunk's last backward has run: taken as exposed whole. */
    if (!par->overlap_grad_reduce || le->params_lora_layer) {
        /* Megatron-Bridge's DDP may overlap the AllGather alone (bridge_ddp): the reduction
         * after the backward whole, the gather behind the next first forward. */
        if (par->overlap_param_gather && !le->params_lora_layer && zero_level(par) == 1) {
            tr->param_gather_exposed_s = param_gather_exposed(par, crit, b.time_s);
            alone += tr->param_gather_exposed_s - b.time_s;
        }
        *exposed = alone;
        return SPSIM_OK;
    }
    /* The reduction shares the links with the last backward's traffic: its rate there. */
    double finish = 0, grad = 0, gather = 0;
    struct spsim_coll_time none = {0};
    if ((rc = shared_finish(memo, hw, le, x, comm, t_send, (double)crit->layers, &a, &none,
                            a.time_s, &finish)) ||
        (rc = dp_buckets_exposed(memo, hw, par, le, x, mem, crit,
                                 a.time_s > 0 ? spsim_max_d(1.0, finish / a.time_s) : 1.0,
                                 (const double[2]){a.time_s + o.time_s, b.time_s}, &grad, &gather,
                                 &tr->dp_buckets)))
        return rc;
    /* Without --overlap-param-gather the AllGather runs after the step, synchronously
     * (distrib_optimizer.py), whatever the reduction overlapped. */
    tr->param_gather_exposed_s = par->overlap_param_gather ? gather : b.time_s;
    *exposed = spsim_max_d(0.0, grad) + tr->param_gather_exposed_s;
    return SPSIM_OK;
}

/*
 * The data-parallel collectives' time beside the computation: of `busy` seconds of them
 * (their time alone), what `exposed` does not show ran beside the backward or forward. NCCL's
 * kernel holds one SM per channel for its whole duration (nvlink.nccl_channels, as for the TP,
 * pipeline and EP overlaps: timing.c overlapped_s), so the computation runs on the other SMs
 * meanwhile and lasts k = channels / SMs of the hidden time longer (overlapped_s's c + T·k,
 * its bound while T < c/(1 − k)).
 */
double
spsim_dp_beside_compute_s(const struct spsim_hardware *hw, double busy, double exposed)
{
    double hidden = busy - exposed;
    return hidden > 0 ? (double)hw->nccl_channels / hw->sm_count * hidden : 0;
}

/* Megatron-FSDP's experts (2, 3): their gradients reduce-scattered over the expert
 * data-parallel group after every micro-batch's backward, beside it (grad_reduce_every_bprop);
 * level 2 gathers their updated bf16 weights once after the step, level 3 with each unit
 * (unit_gathers_exposed). HSDP: on the last micro-batch each unit's shard goes on across the
 * replicas after its RS (`outer` seconds in all, outer_last_exposed as the dense units'). */
static int
expert_fsdp_exposed(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                    const struct spsim_parallel *par, const struct shape *x,
                    const struct stage_time *crit, double grads, double outer, double *exposed,
                    struct busy *busy)
{
    uint64_t stride = (uint64_t)spsim_moe_etp(par) * par->ep;
    struct spsim_coll_time a, b = {0};
    int rc = spsim_memo_collective(memo, hw, SPSIM_COLL_REDUCE_SCATTER, (uint32_t)x->edi, stride,
                                   grads, &a);
    if (rc == SPSIM_OK && par->zero == 2)
        rc = spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_GATHER, (uint32_t)x->edi, stride,
                                   grads * 2.0 / (double)grad_bytes(par), &b);
    if (rc != SPSIM_OK)
        return rc;
    double mb = (double)x->micro;
    busy_add(busy, a.tier == SPSIM_TIER_NVLINK, mb * a.time_s + b.time_s);
    double inner = spsim_max_d(0.0, a.time_s - crit->bwd_window);
    *exposed += mb * inner + param_gather_exposed(par, crit, b.time_s);
    if (x->R > 1)
        *exposed +=
            outer_last_exposed(crit->bwd_window, a.time_s, outer, (double)crit->layers) - inner;
    return SPSIM_OK;
}

/* The experts' gradient reduction over the expert data-parallel group (moe_comm), added to the
 * data-parallel exposed time: whole, or with --overlap-grad-reduce beside the last
 * micro-batch's backward on its own (not sharing links with the dense reduction); with HSDP
 * the intra group's, then across the replicas (added to *outer_s). */
int
spsim_expert_dp_exposed(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                        const struct spsim_parallel *par, const struct shape *x,
                        const struct spsim_comm_report *comm, const struct stage_time *crit,
                        double *exposed, double *outer_s, struct busy *busy)
{
    if (x->edp <= 1 || comm->expert_dp_grad_bytes == 0)
        return SPSIM_OK;
    double grads = (double)comm->expert_dp_grad_bytes;
    uint64_t stride = (uint64_t)spsim_moe_etp(par) * par->ep;
    struct spsim_coll_time a = {0}, b = {0}, o, og; /* og: zero_exposed's, with the units' */
    int rc = expert_outer_colls(memo, hw, par, x, grads, &o, &og);
    if (rc != SPSIM_OK)
        return rc;
    if (x->R > 1) {
        busy_add(busy, o.tier == SPSIM_TIER_NVLINK, o.time_s);
        *outer_s += o.time_s;
    }
    if (x->edi <= 1) { /* one rank a replica: only the reduction across them */
        *exposed +=
            par->overlap_grad_reduce ? spsim_max_d(0.0, o.time_s - crit->bwd_window) : o.time_s;
        return SPSIM_OK;
    }
    if (zero_level(par) >= 2)
        return expert_fsdp_exposed(memo, hw, par, x, crit, grads, o.time_s, exposed, busy);
    if (zero_level(par) >= 1) {
        if ((rc = spsim_memo_collective(memo, hw, SPSIM_COLL_REDUCE_SCATTER, (uint32_t)x->edi,
                                        stride, grads, &a)) ||
            (rc = spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_GATHER, (uint32_t)x->edi, stride,
                                        grads * 2.0 / (double)grad_bytes(par), &b)))
            return rc;
    } else if ((rc = spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_REDUCE, (uint32_t)x->edi,
                                           stride, grads, &a))) {
        return rc;
    }
    busy_add(busy, a.tier == SPSIM_TIER_NVLINK, a.time_s + b.time_s);
    double alone = o.time_s + a.time_s + b.time_s; /* the outer AllReduce after each RS */
    *exposed += par->overlap_grad_reduce ? spsim_max_d(0.0, alone - crit->bwd_window) : alone;
    return SPSIM_OK;
}

/* The first and last stages all-reduce the shared word embedding's fp32 gradient
 * (Megatron finalize_model_grads: _allreduce_word_embedding_grads, after the DP gradient
 * reduction has finished), on the critical path: its own term, not part of the DP one. */
int
spsim_tied_embedding_sync(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                          const struct spsim_model_shape *m, const struct spsim_layer_summary *le,
                          const struct shape *x, struct spsim_time_report *tr, struct busy *busy)
{
    if (x->p <= 1 || !(m->tied_embeddings || m->mtp_layers) || le->params_lora_layer)
        return SPSIM_OK; /* LoRA: the embedding is frozen, no gradient to sum */
    struct spsim_coll_time e;
    double bytes = 4.0 * (double)le->padded_vocab * m->hidden / x->t;
    int rc = spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_REDUCE, 2, x->t * x->dc * (x->p - 1),
                                   bytes, &e);
    if (rc)
        return rc;
    tr->tied_embedding_allreduce_s = e.time_s;
    busy_add(busy, e.tier == SPSIM_TIER_NVLINK, e.time_s);
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
int
spsim_fp8_amax_sync(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                    const struct spsim_layer_summary *le, const struct shape *x,
                    const struct stage_time *crit, struct spsim_time_report *tr, struct busy *busy)
{
    uint64_t group = x->t * x->dc; /* dc = dp·cp */
    if (group <= 1 || le->fp8_gemms_layer == 0)
        return SPSIM_OK;
    double gemms = (double)le->fp8_gemms_layer * (double)crit->layers / (double)x->v;
    struct spsim_coll_time f, b;
    int rc = spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_REDUCE, (uint32_t)group, 1,
                                   12.0 * gemms, &f);
    if (rc == SPSIM_OK)
        rc = spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_REDUCE, (uint32_t)group, 1, 8.0 * gemms,
                                   &b);
    if (rc)
        return rc;
    double times = (double)x->micro * (double)x->v;
    tr->fp8_amax_allreduce_s = times * (f.time_s + b.time_s);
    busy_add(busy, f.tier == SPSIM_TIER_NVLINK, tr->fp8_amax_allreduce_s);
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
int
spsim_expert_bias_sync(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                       const struct spsim_layer_summary *le, const struct shape *x,
                       struct spsim_time_report *tr, struct busy *busy)
{
    uint64_t group = x->t * x->dc, routers = rank_moe_layers(le, x, tr->critical_stage);
    if (group <= 1 || routers == 0)
        return SPSIM_OK;
    double bytes = 4.0 * (double)x->model->shape.experts * (double)routers;
    struct spsim_coll_time e;
    int rc = spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_REDUCE, (uint32_t)group, 1, bytes, &e);
    if (rc)
        return rc;
    tr->moe_expert_bias_allreduce_s = e.time_s;
    busy_add(busy, e.tier == SPSIM_TIER_NVLINK, e.time_s);
    return SPSIM_OK;
}

/* MLA with SP: the duplicated down-projections' and latent norms' gradients (marked
 * sequence_parallel) are summed over TP once per iteration, after the backward, in one
 * coalesced all-reduce (finalize_model_grads._allreduce_non_tensor_model_parallel_grads), on
 * the main gradients (grad_bytes) of the critical stage's layers; with them the routers' of
 * its MoE layers (router.py marks the router weight sequence_parallel: each TP rank's gradient
 * comes from its sequence shard). */
int
spsim_mla_grad_sync(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                    const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                    const struct shape *x, const struct stage_time *crit,
                    struct spsim_time_report *tr, struct busy *busy)
{
    struct spsim_coll_time e;
    double moe_layers = x->moe ? (double)(crit->layers - rank_dense(x, tr->critical_stage)) : 0;
    double params = (double)le->params_tp_synced * (double)crit->layers +
                    (double)le->params_router_tp_synced * moe_layers;
    double bytes = (double)grad_bytes(par) * params;
    int rc = spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_REDUCE, x->t, 1, bytes, &e);
    if (rc)
        return rc;
    tr->dp_exposed_s += e.time_s;
    busy_add(busy, e.tier == SPSIM_TIER_NVLINK, e.time_s);
    return SPSIM_OK;
}

/* Optimizer step, memory-bound. Megatron's step (optimizer.py): the gradient norm for clipping
 * reads every fp32 main gradient (4 B); fused Adam (apex/TE) reads the gradient (4), reads and
 * writes the fp32 master weight and both moments (24) and writes the bf16 weight (2), or what
 * the precision-aware optimizer's dtypes make of these (engine/optimizer.c);
 * zero_grad_buffer then clears the fp32 gradients (4). The distributed optimizer does the Adam
 * part on 1/D of the parameters (D = dp·cp). */
double
spsim_optimizer_step_params_s(const struct spsim_hardware *hw, const struct spsim_parallel *par,
                              double params, double D)
{
    double g = (double)grad_bytes(par);
    uint32_t z = zero_level(par);
    /* Sharded gradients (2, 3) are read and cleared as shards; sharded weights (3) written so.
     * 16-bit gradients are first copied to the optimizer's fp32 gradients (read g, write 4),
     * which Adam reads (4). */
    double grads = z >= 2 ? g * params / D : g * params;
    double coef = 0, full = 0; /* plain Adam: 28 (g + 32 with 16-bit g) and 2 (optimizer.c) */
    spsim_optimizer_step_bytes(par, (uint32_t)g, &coef, &full);
    double adam = coef * params / (z >= 1 ? D : 1.0) + (z >= 3 ? full * params / D : full * params);
    double opt_bytes = grads + adam + grads;
    return opt_bytes / hw->hbm_achievable_Bps;
}

double
spsim_optimizer_step_s(const struct spsim_hardware *hw, const struct spsim_parallel *par,
                       const struct shape *x, const struct spsim_memory_report *mem)
{
    /* LoRA: only the adapters are stepped (trainable_parameters_per_gpu). */
    /* HSDP: the replica's shard, or all D ranks' with the outer sharding (opt_ranks). */
    return spsim_optimizer_step_params_s(hw, par, (double)mem->trainable_parameters_per_gpu,
                                         (double)opt_ranks(par, x));
}

/*
 * Muon's step (engine/optimizer.c): the gradient norm and zero_grad as Adam's (2·g·P), Adam's
 * step on the parameters Muon leaves to it (the embedding, output layer, norms, biases), Muon's
 * elementwise work on its 2-D weights (both on the rank's 1/D shard with the layer-wise
 * distributed optimizer), the main-to-model copy (2·P), then the Newton-Schulz GEMMs at the
 * profile's achievable BF16 GEMM rate (newton_schulz casts to BF16 under fp32_matmul_prec
 * "medium", Megatron's default) and, with --muon-tp-mode duplicated, one TP all-gather of the
 * fp32 momentum per TP-sharded weight (newton_schulz_tp: torch.distributed.all_gather), taken as
 * gathers of equal size.
 */
int
spsim_muon_step_s(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                  const struct spsim_parallel *par, const struct shape *x,
                  const struct spsim_memory_report *mem, struct spsim_time_report *tr)
{
    double g = (double)grad_bytes(par), P = (double)mem->trainable_parameters_per_gpu;
    double M = (double)mem->muon_parameters_per_gpu;
    double D = par->zero || par->distributed_optimizer ? (double)opt_ranks(par, x) : 1.0;
    double coef = 0, full = 0;
    spsim_optimizer_step_bytes(par, (uint32_t)g, &coef, &full);
    double muon = spsim_muon_step_bytes(par, (uint32_t)g);
    double bytes = 2.0 * g * P + (coef * (P - M) + muon * M) / D + full * P;
    double rate = hw->gemm_achievable_flops[SPSIM_DTYPE_BF16] > 0
                      ? hw->gemm_achievable_flops[SPSIM_DTYPE_BF16]
                      : hw->peak_flops[SPSIM_DTYPE_BF16];
    tr->optimizer_muon_ns_s = mem->muon_ns_flops_per_gpu / rate;
    tr->optimizer_muon_gather_s = 0;
    double n = mem->muon_tp_gathers_per_gpu;
    if (n > 0 && x->t > 1) {
        struct spsim_coll_time e;
        int rc = spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_GATHER, x->t, 1,
                                       mem->muon_tp_gather_bytes_per_gpu / n, &e);
        if (rc)
            return rc;
        tr->optimizer_muon_gather_s = n * e.time_s;
    }
    tr->optimizer_s =
        bytes / hw->hbm_achievable_Bps + tr->optimizer_muon_ns_s + tr->optimizer_muon_gather_s;
    return SPSIM_OK;
}

/*
 * The hybrid device optimizer's step (hybrid_optimizer.py step, engine/memory.c
 * offload_sharded), on the rank's shard of P_s = P/D parameters, f of them offloaded:
 * - the gradient norm and zero_grad as Adam's (2·g·P of HBM, before and after the step);
 * - GPU: _set_sub_optimizer_grads casts each kept gradient to fp32 (grad.to: read g, write 4;
 *   none for fp32 gradients), FusedAdam on the fp32 copy (grad 4, copy, m, v read and written:
 *   28), fp32_param_copy_back_gpu_hook writes the bf16 parameter (read 4, write 2): (1 − f)·P_s;
 * - D2H: each offloaded gradient copy_(non_blocking=True) into its pinned host buffer of the
 *   host copy's dtype (hybrid_optimizer.py:108-114), fp32 (param_update_in_fp32=True,
 *   optimizer/__init__.py:542; hybrid_optimizer.py:277-278); the gradient is the grad buffer's
 *   shard (distrib_optimizer.py:2790, decoupled_grad with the precision-aware optimizer that
 *   offload needs), fp32: 4 B each over host_link at d2h_GBps, no conversion. 16-bit gradients
 *   are refused (parallel.c check_cpu_offload: where PyTorch's copy_ converts them is not
 *   read here);
 * - CPU: torch AdamW (fused=True) on the fp32 copy: grad 4, param, exp_avg, exp_avg_sq read
 *   and written 24: 28 B each at host_link.cpu_memory_GBps;
 * - H2D: param_copy_back_gpu_hook's gpu_param.copy_(param) into the bf16 parameter, converted
 *   on the host first: 2 B each at h2d_GBps.
 * Without --overlap-cpu-optimizer-d2h-h2d all run on the current stream: the copies to the host,
 * then the GPU step beside the CPU's (which waits for them), then the copies back. With it each
 * offloaded parameter has its own CPU optimizer and the copies their own streams: the four
 * pipeline over the parameters, the slowest setting the time (fill and drain not counted).
 */
void
spsim_offload_step_s(const struct spsim_hardware *hw, const struct spsim_parallel *par,
                     const struct shape *x, const struct spsim_memory_report *mem,
                     struct spsim_time_report *tr)
{
    double g = (double)grad_bytes(par), P = (double)mem->trainable_parameters_per_gpu;
    double f = par->optimizer_offload_fraction, Ps = P / (double)opt_ranks(par, x);
    double cast = g == 4 ? 0.0 : g + 4.0;
    double gpu = (1.0 - f) * Ps * (cast + 28.0 + 6.0) / hw->hbm_achievable_Bps;
    double norm = 2.0 * g * P / hw->hbm_achievable_Bps;
    tr->optimizer_d2h_s = f > 0 ? f * Ps * 4.0 / hw->host_d2h_Bps : 0;
    tr->optimizer_cpu_s = f > 0 ? f * Ps * 28.0 / hw->host_cpu_memory_Bps : 0;
    tr->optimizer_h2d_s = f > 0 ? f * Ps * 2.0 / hw->host_h2d_Bps : 0;
    double step = tr->optimizer_d2h_s + spsim_max_d(gpu, tr->optimizer_cpu_s) + tr->optimizer_h2d_s;
    if (par->overlap_cpu_optimizer_d2h_h2d)
        step = spsim_max_d(spsim_max_d(gpu, tr->optimizer_d2h_s),
                           spsim_max_d(tr->optimizer_cpu_s, tr->optimizer_h2d_s));
    tr->optimizer_s = norm + step;
}
