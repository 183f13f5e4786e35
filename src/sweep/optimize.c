/*
 * spsim_optimize_run: the best configurations of a space by branch and bound, in one pass
 * (doc/sweep.md "How optimize searches").
 *
 * The axes split in two. The layer axes (tp, cp, sp, recomputation, mbs, dtype, ...) decide a
 * layer summary, the costly part of an evaluation; the composition axes (pp, vpp, the split,
 * the batch, sharding, overlaps, the recompute method, offload) compose it cheaply. The search
 * evaluates every admissible layer summary once, bounds from it the rank key of every
 * configuration composed from it (optimize_bounds.c), and visits the summaries best bound
 * first; inside one it bounds each pipeline shape (pp, split, vpp, batch) and each point again.
 * A summary, a shape or a point is skipped only when its bound shows that it can enter none of
 * the three answers kept in the same pass: the best K that fit, the best whatever its memory
 * (optimize's "without the memory limit"), and, while nothing fits, the smallest. Points that
 * are aliases of another point (spsim_opt_alias) are counted at their representative.
 * Recomputation variants of one layer configuration share the bound of its variant without
 * recomputation until that bound is reached: recomputation adds a recompute phase to the same
 * forward and backward steps (schedule.c), so no variant is faster per layer.
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/eval.h"
#include "engine/stages.h"
#include "optimize_internal.h"

/* Ordered by (key, digits): the digits from the outermost axis are the point index's order, so
 * ties go to the lower index as in the sweep's --top. */
static int
order(uint64_t ka, const uint32_t *da, uint64_t kb, const uint32_t *db)
{
    if (ka != kb)
        return ka < kb ? -1 : 1;
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++)
        if (da[a] != db[a])
            return da[a] < db[a] ? -1 : 1;
    return 0;
}

struct pick {
    uint64_t key;
    uint64_t twins; /* twin_hash of d where the space offloads (top_push) */
    uint32_t d[SPSIM_AXIS_COUNT];
};

/* The best-first queue: layer summaries by the key bound of everything composed from them; a
 * root or a node also stands for its recomputation subtree, whose next level it queues as one
 * item (children, bounded by what the search of the node found) until that is taken. */
enum { ITEM_SUMMARY, ITEM_ROOT, ITEM_NODE, ITEM_CHILDREN, ITEM_LAZY };

struct item {
    uint64_t key;
    uint32_t kind;
    int32_t parent;       /* ITEM_CHILDREN: the modules digit of the node, -1 for the root;
                           * ITEM_LAZY: the kind it is queued as once evaluated */
    double per_token_mfu; /* mfu / tokens_per_s of its configurations (MFU ranking) */
    uint64_t mem_lb;      /* the least total_bytes of its configurations (memory_lb) */
    uint32_t d[SPSIM_AXIS_COUNT];
};

struct queue {
    struct item *h;
    size_t n, cap;
};

/* What the threads share: the queue, and how many of them are searching an item (which may
 * queue more). Each thread keeps its own answers and prunes by them: a subtree that cannot
 * enter one thread's best K cannot enter the union's (K better ones exist), so the merged
 * answers are the one-thread answers, whatever the thread count and timing. */
struct shared {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct queue q;
    unsigned busy;
    int rc;
};

/* Ranks 0's and p − 1's distinct layer counts (main kind, all) over a pp's splits and vpp. */
#define LAST_LAYERS_MAX 32
struct last_layers {
    bool known, overflow;
    uint32_t n;
    double main[LAST_LAYERS_MAX], built[LAST_LAYERS_MAX];
    double first_main[LAST_LAYERS_MAX], first_built[LAST_LAYERS_MAX];
};

/* What shape_ok keeps of a stage plan (plan_shape): x's p, v, main and built. */
struct plan_memo {
    bool known, ok;
    struct spsim_opt_shape x;
};

struct search {
    const struct spsim_sweep *sw;
    const struct spsim_optimize_options *opt;
    struct spsim_sweep_worker w;
    struct spsim_result mem; /* memory-only compositions */
    struct pick *top;        /* max-heap: the worst of the best K at the root */
    uint64_t ntop;
    struct pick best, small;
    bool has_best, has_small;
    struct shared *sh;
    uint32_t d[SPSIM_AXIS_COUNT];
    int layer_axes[SPSIM_AXIS_COUNT], comp_axes[SPSIM_AXIS_COUNT];
    uint32_t nlayer, ncomp, ngroup, npipe;
    bool tree, block, a2a; /* recomputation trees; the block method, the EP overlap in the space */
    double per_token_mfu;
    /* The least total_bytes of what is being searched (memory_lb, then the shape's) and what a
     * configuration must not exceed to fit on the summary's GPU (capacity_bound). */
    uint64_t mem_lb, cap;
    /* The pipeline shape being searched, what its first point told, and the current pipeline's
     * time without its data-parallel and optimizer lines. */
    struct spsim_opt_shape x;
    struct spsim_opt_pipeline pl;
    double pipe_s, tokens_per_seq, tokens;
    double shape_times[2][2], shape_s; /* the shape's iteration bounds by kind of point */
    double shape_least;                /* sharding_least of the shape; -1 until known */
    double shape_backward;             /* the shape's bound of a micro-batch's backward */
    double shape_least_any;            /* sharding_least without the backward: -1 until known */
    uint64_t tree_lb;                  /* what the node being searched bounds its subtree by */
    bool tracking;
    /* The TE userbuffers axis' digit without them when its variants are queued unevaluated
     * (add_lazy_ub); -1: evaluated up front. */
    int lazy_ub;
    /* Each axis' digits in the order inner visits them: a floor's base value first, the block
     * method's layer counts ascending, else as given. */
    uint32_t *order[SPSIM_AXIS_COUNT];
    int8_t *stages;          /* stages_exist by (model, pp, split, vpp): -1 unknown */
    struct plan_memo *plans; /* shape_ok's plans by the same (NULL: none kept) */
    /* The vpp digits whose plan exists, by (model, pp, split): nvpp of them (UINT32_MAX:
     * not listed yet) at vpps + index · n[vpp] (NULL: none kept; vpp_shapes). */
    uint32_t *vpps, *nvpp;
    /* The configuration of the last digits point_here decoded (here_d; valid with `here`). */
    struct spsim_sweep_point here;
    uint32_t here_d[SPSIM_AXIS_COUNT];
    bool has_here;
    struct last_layers *last; /* last_layers_of by (model, pp) */
    int rc;
    struct spsim_optimize_stats st;
};

/* The layer axes in the point order, then the composition axes in the search's order: the first
 * GROUP_AXES fix the pipeline's shape, the first PIPE_AXES its time; the sharding axes after
 * them change only the data-parallel and optimizer lines. */
static const int layer_axis_set[] = {SPSIM_AXIS_MODEL,
                                     SPSIM_AXIS_HW,
                                     SPSIM_AXIS_TP,
                                     SPSIM_AXIS_CP,
                                     SPSIM_AXIS_GPUS,
                                     SPSIM_AXIS_SP,
                                     SPSIM_AXIS_RECOMPUTE,
                                     SPSIM_AXIS_MBS,
                                     SPSIM_AXIS_SEQ,
                                     SPSIM_AXIS_FLASH_ATTN,
                                     SPSIM_AXIS_DTYPE,
                                     SPSIM_AXIS_FP8_RECIPE,
                                     SPSIM_AXIS_CP_COMM_TYPE,
                                     SPSIM_AXIS_RECOMPUTE_MODULES,
                                     SPSIM_AXIS_EP,
                                     SPSIM_AXIS_ETP,
                                     SPSIM_AXIS_MOE_DISPATCHER,
                                     SPSIM_AXIS_TP_COMM_OVERLAP};
#define GROUP_AXES 6
#define PIPE_AXES  12
static const int comp_axis_order[] = {SPSIM_AXIS_PP,
                                      SPSIM_AXIS_DP,
                                      SPSIM_AXIS_PP_SPLIT,
                                      SPSIM_AXIS_VPP,
                                      SPSIM_AXIS_GBS,
                                      SPSIM_AXIS_MAX_GBS,
                                      SPSIM_AXIS_RECOMPUTE_METHOD,
                                      SPSIM_AXIS_RECOMPUTE_LAYERS,
                                      SPSIM_AXIS_OFFLOAD_LAYERS,
                                      SPSIM_AXIS_OVERLAP_P2P,
                                      SPSIM_AXIS_A2A_OVERLAP,
                                      SPSIM_AXIS_DELAY_WGRAD,
                                      SPSIM_AXIS_ZERO,
                                      SPSIM_AXIS_DIST_OPT_INSTANCES,
                                      SPSIM_AXIS_DISTRIBUTED_OPTIMIZER,
                                      SPSIM_AXIS_GRAD_REDUCE_IN_FP32,
                                      SPSIM_AXIS_OVERLAP_GRAD_REDUCE,
                                      SPSIM_AXIS_OVERLAP_PARAM_GATHER};

void
spsim_optimize_options_defaults(struct spsim_optimize_options *opt)
{
    memset(opt, 0, sizeof(*opt));
    opt->top_k = 5;
    opt->by = SPSIM_BY_TOKENS_PER_S;
}

static bool
axis_has(const struct spsim_sweep *sw, int axis, int64_t v)
{
    for (uint32_t i = 0; i < sw->n[axis]; i++)
        if (sw->v[axis][i] == v)
            return true;
    return false;
}

/* ---- the answers ---- */

static bool
top_worse(const void *x, const void *y)
{
    const struct pick *a = x, *b = y;
    return order(a->key, a->d, b->key, b->d) > 0;
}

/* Whether two points differ at most in the offloaded layers. */
static bool
offload_twins(const uint32_t *a, const uint32_t *b)
{
    for (int i = 0; i < SPSIM_AXIS_COUNT; i++)
        if (a[i] != b[i] && i != SPSIM_AXIS_OFFLOAD_LAYERS)
            return false;
    return true;
}

/* A hash of the digits but the offloaded layers' (FNV-1a): twins share it. */
static uint64_t
twin_hash(const uint32_t *d)
{
    uint64_t h = 14695981039346656037u;
    for (int i = 0; i < SPSIM_AXIS_COUNT; i++)
        h = (h ^ (i == SPSIM_AXIS_OFFLOAD_LAYERS ? 0 : d[i])) * 1099511628211u;
    return h;
}

/*
 * Into the best K that fit. Canonical form: configurations that differ in the offloaded layers
 * alone are one configuration with a choice of offload, of which the answer shows the best
 * (ties: the first in the space's order, the fewest layers offloaded when the values ascend).
 * Offloading more layers only adds stalls to the same pipeline (floor_from), so the twins
 * rank alike but for stalls that the copies hide and rounding: without this their rows would
 * fill the answer (Llama 3 8B on 64 H100: offload 0 .. 7 as #1 .. #8). The heap keeps one
 * entry per twin group, so its root stays the K-th best group's and prunes soundly.
 */
static void
top_push(struct search *s, uint64_t key)
{
    struct pick e = {.key = key};
    memcpy(e.d, s->d, sizeof(e.d));
    if (s->sw->n[SPSIM_AXIS_OFFLOAD_LAYERS] > 1) {
        e.twins = twin_hash(e.d);
        for (uint64_t i = 0; i < s->ntop; i++)
            if (s->top[i].twins == e.twins && offload_twins(s->top[i].d, e.d)) {
                if (top_worse(&s->top[i], &e)) /* better: it moves down from the hole */
                    spsim_heap_sift_down((unsigned char *)s->top, sizeof(e), i, s->ntop, &e,
                                         top_worse);
                return;
            }
    }
    spsim_heap_push(s->top, sizeof(e), &s->ntop, s->opt->top_k, &e, top_worse);
}

static void
offer_small(struct search *s, uint64_t bytes)
{
    if (!s->has_small || order(bytes, s->d, s->small.key, s->small.d) < 0) {
        s->small.key = bytes;
        memcpy(s->small.d, s->d, sizeof(s->d));
        s->has_small = true;
    }
}

/* A configuration evaluated in full: into the answers it belongs to. */
static void
offer(struct search *s, const struct spsim_result *r)
{
    uint64_t key = spsim_sweep_rank_key(s->opt->by, r);
    if (!s->has_best || order(key, s->d, s->best.key, s->best.d) < 0) {
        s->best.key = key;
        memcpy(s->best.d, s->d, sizeof(s->d));
        s->has_best = true;
    }
    if (r->memory.fits &&
        (s->opt->max_total_bytes == 0 || r->memory.total_bytes <= s->opt->max_total_bytes))
        top_push(s, key);
    offer_small(s, r->memory.total_bytes);
}

/* What a subtree whose keys are at least `key` (its points at or after digits `d`; NULL: any
 * digits) can still enter. */
struct need {
    bool best, top, small;
};

static struct need
needed(const struct search *s, uint64_t key, const uint32_t *d)
{
    struct need n;
    n.best = !s->has_best || (d ? order(key, d, s->best.key, s->best.d) < 0 : key <= s->best.key);
    n.top = s->mem_lb <= s->cap &&
            (s->ntop < s->opt->top_k ||
             (d ? order(key, d, s->top[0].key, s->top[0].d) < 0 : key <= s->top[0].key));
    n.small = s->ntop == 0 && (!s->has_small || s->mem_lb <= s->small.key);
    return n;
}

static bool
any(struct need n)
{
    return n.best || n.top || n.small;
}

/* ---- the queue: a binary min-heap of (key, digits) ---- */

static bool
item_less(const struct item *a, const struct item *b)
{
    return order(a->key, a->d, b->key, b->d) < 0;
}

static void
queue_push(struct search *s, uint32_t kind, uint64_t key, double per_token_mfu, int32_t parent,
           uint64_t mem_lb)
{
    struct queue *q = &s->sh->q;
    pthread_mutex_lock(&s->sh->mu);
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 1024;
        struct item *h = realloc(q->h, cap * sizeof(*h));
        if (!h) {
            s->rc = s->sh->rc = SPSIM_ENOMEM;
            pthread_cond_broadcast(&s->sh->cv);
            pthread_mutex_unlock(&s->sh->mu);
            return;
        }
        q->h = h;
        q->cap = cap;
    }
    struct item e = {.key = key,
                     .kind = kind,
                     .per_token_mfu = per_token_mfu,
                     .parent = parent,
                     .mem_lb = mem_lb};
    memcpy(e.d, s->d, sizeof(e.d));
    size_t i = q->n++;
    for (; i > 0 && item_less(&e, &q->h[(i - 1) / 2]); i = (i - 1) / 2)
        q->h[i] = q->h[(i - 1) / 2];
    q->h[i] = e;
    pthread_cond_signal(&s->sh->cv);
    pthread_mutex_unlock(&s->sh->mu);
}

static struct item
queue_pop(struct queue *q)
{
    struct item top = q->h[0], last = q->h[--q->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->n)
            break;
        if (c + 1 < q->n && item_less(&q->h[c + 1], &q->h[c]))
            c++;
        if (!item_less(&q->h[c], &last))
            break;
        q->h[i] = q->h[c];
        i = c;
    }
    if (q->n)
        q->h[i] = last;
    return top;
}

/* Advance digits over `axes`; false after the last. */
static bool
next_digits(const struct spsim_sweep *sw, uint32_t *d, const int *axes, uint32_t n)
{
    for (int i = (int)n - 1; i >= 0; i--) {
        if (++d[axes[i]] < sw->n[axes[i]])
            return true;
        d[axes[i]] = 0;
    }
    return false;
}

/* ---- one point ---- */

/* Compose the checked point `pt` from its summary: in full into w.res, or its memory alone
 * (no hardware: no time, no capacity) into s->mem. */
static int
compose(struct search *s, const struct spsim_sweep_point *pt, uint32_t warnings, bool full)
{
    const struct spsim_layer_summary *le = NULL;
    int rc = spsim_sweep_summary(&s->w, s->d, pt, &le, NULL);
    if (rc == SPSIM_OK)
        rc = spsim_compose_into(pt->model, full ? pt->hw : NULL, &pt->par, le, warnings, s->w.memo,
                                false, full ? &s->w.res : &s->mem, NULL);
    s->st.composed += rc == SPSIM_OK && full;
    s->st.memory_only += rc == SPSIM_OK && !full;
    return rc;
}

/* What a configuration on `hw` must not exceed to fit: what the GPU reports less the CUDA
 * context and cuBLAS workspace, then the allocator's fragmentation (memory.c memory_limit
 * takes the NCCL buffers of each communicator off too), and the caller's limit. */
static uint64_t
capacity_bound(const struct search *s, const struct spsim_hardware *hw)
{
    uint64_t left = hw->hbm_capacity_bytes > hw->reserved_fixed_bytes
                        ? hw->hbm_capacity_bytes - hw->reserved_fixed_bytes
                        : 0;
    if (hw->allocator_fragmentation > 0)
        left = (uint64_t)((double)left * (1.0 - hw->allocator_fragmentation));
    uint64_t limit = s->opt->max_total_bytes;
    return limit && limit < left ? limit : left;
}

/* The point of digits s->d (configuration `pt`: the pipeline's first point with these sharding
 * digits), whose rank key is at least `key_lb`. */
static void
leaf(struct search *s, const struct spsim_sweep_point *pt, uint64_t key_lb)
{
    struct need n = needed(s, key_lb, s->d);
    if (!any(n)) {
        s->st.pruned++;
        return;
    }
    if (spsim_opt_sharding_alias(s->sw, s->d, pt))
        return;
    /* The pipeline's time and what this point's sharding cannot hide. */
    uint64_t k = spsim_opt_key_lb(s->opt->by, s->pipe_s + spsim_opt_sharding_lb(pt, &s->x, &s->pl),
                                  (double)pt->par.gbs * s->tokens_per_seq, s->per_token_mfu);
    if (k > key_lb && !any(n = needed(s, key_lb = k, s->d))) {
        s->st.pruned++;
        return;
    }
    uint32_t warnings = 0;
    s->st.checked++;
    if (spsim_parallel_check(pt->model, pt->hw, &pt->par, &warnings, NULL) != SPSIM_OK)
        return;
    s->st.valid++;
    bool memory = s->opt->by == SPSIM_BY_TOTAL_BYTES;
    if (!n.best || memory) { /* the memory decides whether a full evaluation is needed */
        if (compose(s, pt, warnings, false) != SPSIM_OK)
            return;
        uint64_t bytes = s->mem.memory.total_bytes;
        offer_small(s, bytes);
        if (memory)
            n = needed(s, bytes, s->d);
        if (!n.best && (!n.top || bytes > capacity_bound(s, pt->hw)))
            return;
    }
    if (compose(s, pt, warnings, true) == SPSIM_OK) {
        offer(s, &s->w.res);
    }
}

/*
 * The first point of a pipeline (its shape and the axes that time it fixed, s->d's sharding
 * digits at the first that evaluates): evaluated in full, it bounds the others, since the
 * sharding axes change only the data-parallel and optimizer lines (pipeline_time.c compose_time:
 * dp_exposed, optimizer_step_s; the stages, bubble, point-to-point, offload and host lines read
 * none of them). @return whether one evaluated (*pipe: the others' key bound); false with
 * *pipe = UINT64_MAX when none of them can enter the answers. `pt` holds the point of s->d.
 */
static int
first_of_pipeline(struct search *s, uint64_t key, uint64_t *pipe, struct spsim_sweep_point *pt)
{
    *pipe = key;
    if (!any(needed(s, key, NULL)))
        return -1;
    uint32_t warnings = 0;
    if (pt->par.dp == 0 || pt->invalid || spsim_opt_alias(s->sw, s->d, pt))
        return 0;
    s->st.checked++;
    if (spsim_parallel_check(pt->model, pt->hw, &pt->par, &warnings, NULL) != SPSIM_OK)
        return 0;
    s->st.valid++;
    if (compose(s, pt, warnings, true) != SPSIM_OK)
        return 0;
    offer(s, &s->w.res);
    const struct spsim_result *r = &s->w.res;
    if (!s->pl.known) { /* the shape's ranks: their parameters on one GPU */
        s->pl.known = true;
        s->pl.params[0] = (double)r->memory.parameters_first_stage;
        s->pl.params[1] = pt->par.pp > 1 ? (double)r->memory.parameters_last_stage : 0;
        /* a middle rank holds the peak only with uneven stages or mixed layers (peak_stage) */
        bool even = s->x.built[0] == s->x.built[1] && s->x.built[1] == s->x.built[2];
        s->pl.params[2] =
            pt->par.pp > 2 && (!even || s->pl.mixed) ? s->x.built[1] * s->pl.layer_params : 0;
    }
    /* the optimizer's host time reads the sharding (its tensors) and the DP line it hides
     * behind: one of the sharding's lines */
    s->pipe_s = r->time.iteration_s - r->time.dp_exposed_s - r->time.optimizer_s -
                r->time.optimizer_host_exposed_s;
    /* the micro-batch's wall holds its backward (bwd_window) */
    s->x.backward_s = spsim_min_d(s->shape_backward, r->time.microbatch_s);
    uint64_t bound = spsim_opt_key_lb(s->opt->by, s->pipe_s,
                                      (double)pt->par.gbs * s->tokens_per_seq, s->per_token_mfu);
    *pipe = bound > key ? bound : key;
    return 1;
}

/* The configuration of s->d, updated from the last one decoded from the outermost axis whose
 * digit differs (the search moves a few inner axes between its pipelines). */
static void
point_here(struct search *s, struct spsim_sweep_point *pt)
{
    int from = 0;
    while (s->has_here && from < SPSIM_AXIS_COUNT && s->here_d[from] == s->d[from])
        from++;
    if (from < SPSIM_AXIS_COUNT) {
        spsim_sweep_point_update(s->sw, s->d, from, &s->here);
        memcpy(s->here_d, s->d, sizeof(s->here_d));
        s->has_here = true;
    }
    *pt = s->here;
}

/* A bound the node being searched gives its recomputation subtree, from one composition. */
static void
tree_note(struct search *s, uint64_t key)
{
    if (s->tracking && key < s->tree_lb)
        s->tree_lb = key;
}

/* The least sharding bound of the pipeline of s->d over its sharding settings (`axes`). */
static double
sharding_least(struct search *s, const int *axes, uint32_t n)
{
    struct spsim_sweep_point pt;
    point_here(s, &pt);
    double least = -1;
    do {
        for (uint32_t i = 0; i < n; i++)
            spsim_sweep_point_set(s->sw, &pt, axes[i], s->d[axes[i]]);
        double t = spsim_opt_sharding_lb(&pt, &s->x, &s->pl);
        least = least < 0 || t < least ? t : least;
    } while (next_digits(s->sw, s->d, axes, n));
    return least > 0 ? least : 0;
}

/* What a pipeline of the node being searched bounds the same pipeline of a descendant by: its
 * time without the data-parallel and optimizer lines (at least `pipe_s`; a descendant's is no
 * less) and the least of what the sharding settings add whatever the backward's length (a
 * descendant's backward is longer). */
static void
note_pipeline(struct search *s, uint64_t key, double pipe_s, const int *axes, uint32_t n)
{
    if (!s->tracking)
        return;
    if (s->pl.known && s->shape_least_any < 0) {
        s->x.backward_s = INFINITY;
        s->shape_least_any = sharding_least(s, axes, n);
        s->x.backward_s = s->shape_backward;
    }
    double least = s->pl.known ? s->shape_least_any : 0;
    uint64_t k = spsim_opt_key_lb(s->opt->by, pipe_s + least, s->tokens, s->per_token_mfu);
    tree_note(s, k > key ? k : key);
}

/* A pipeline's points: the sharding axes' digits in order, the first that evaluates bounding
 * the rest, which are that point with other sharding switches. `floor`: a lower bound of the
 * pipeline's time without its data-parallel and optimizer lines, from a sibling (inner).
 * @return such a bound (0: none known) */
static double
pipeline(struct search *s, uint64_t key, double floor)
{
    int axes[SPSIM_AXIS_COUNT];
    uint32_t n = 0;
    for (uint32_t l = s->npipe; l < s->ncomp; l++)
        axes[n++] = s->comp_axes[l];
    s->st.pipelines++;
    /* Once the shape's parameters are known, the least of the sharding settings' bounds (the
     * same for each of the shape's pipelines: without their walls) adds to the pipeline's time
     * bound (its analytic one, or its sibling's floor). */
    s->x.backward_s = s->shape_backward;
    if (s->pl.known && s->shape_least < 0)
        s->shape_least = sharding_least(s, axes, n);
    double least = s->pl.known ? s->shape_least : 0;
    uint64_t fk = spsim_opt_key_lb(s->opt->by, spsim_max_d(floor, s->shape_s) + least, s->tokens,
                                   s->per_token_mfu);
    if ((floor > 0 || least > 0) && !any(needed(s, fk > key ? fk : key, NULL))) {
        s->st.pruned++;
        note_pipeline(s, key, spsim_max_d(floor, s->shape_s), axes, n);
        return floor;
    }
    /* The pipeline's points differ in sharding axes alone, which no derived axis reads
     * (sweep.c point_update: pp and vpp auto, dp from gpus, the split, max_gbs): each is the
     * pipeline's first point with its sharding digits set. */
    struct spsim_sweep_point base, first, pt;
    point_here(s, &base);
    uint64_t pipe = key;
    int found = 0;
    do {
        if (found <= 0) {
            first = base;
            for (uint32_t i = 0; i < n; i++)
                spsim_sweep_point_set(s->sw, &first, axes[i], s->d[axes[i]]);
            found = first_of_pipeline(s, key, &pipe, &first);
            s->st.pruned += found < 0;
            continue;
        }
        pt = first;
        for (uint32_t i = 0; i < n; i++)
            spsim_sweep_point_set(s->sw, &pt, axes[i], s->d[axes[i]]);
        leaf(s, &pt, pipe);
    } while (found >= 0 && s->rc == SPSIM_OK && next_digits(s->sw, s->d, axes, n));
    for (uint32_t i = 0; i < n; i++)
        s->d[axes[i]] = 0;
    if (found != 0) /* a pipeline with no valid point bounds nothing */
        note_pipeline(s, key, found > 0 ? s->pipe_s : 0, axes, n);
    return found > 0 ? s->pipe_s : 0;
}

/*
 * The axes that time a pipeline, each value's subtree taking a floor from an earlier sibling's
 * (compose_time): offload N > 0 only adds stalls to offload 0's pipeline; the blocking sends
 * (overlap_p2p_communication off) take at least the async ones' time (p2p_exposed_s); uniform
 * recompute replays every layer as the default method does (the same time); the block method
 * replays more layers the larger its count. The base value comes first (s->order).
 */
static double
floor_from(int axis, int64_t v, double base, double previous)
{
    switch (axis) {
    case SPSIM_AXIS_OFFLOAD_LAYERS:
        return v > 0 ? base : 0;
    case SPSIM_AXIS_OVERLAP_P2P:
        return v == 0 ? base : 0;
    case SPSIM_AXIS_RECOMPUTE_METHOD:
        return v == SPSIM_RECOMPUTE_METHOD_UNIFORM ? base : 0;
    case SPSIM_AXIS_RECOMPUTE_LAYERS:
        return previous;
    default:
        return 0;
    }
}

/* The composition axes inside the pipeline's shape, then its points. @return the least
 * pipeline-time bound of the subtree's pipelines (0: not known for every one) */
static double
inner(struct search *s, uint32_t level, const uint64_t keys[2][2], double floor)
{
    if (level == s->npipe) {
        bool replay = s->sw->v[SPSIM_AXIS_RECOMPUTE_METHOD][s->d[SPSIM_AXIS_RECOMPUTE_METHOD]] !=
                      SPSIM_RECOMPUTE_METHOD_BLOCK;
        bool a2a = s->sw->v[SPSIM_AXIS_A2A_OVERLAP][s->d[SPSIM_AXIS_A2A_OVERLAP]] != 0;
        s->shape_s = s->shape_times[replay][a2a];
        return pipeline(s, keys[replay][a2a], floor);
    }
    int axis = s->comp_axes[level];
    /* The recompute layers and offload often admit only 0 here: that digit alone. */
    int only = spsim_opt_comp_only(s->sw, s->d, axis);
    uint32_t count = only >= 0 ? 1 : s->sw->n[axis];
    double least = -1, base = 0, previous = 0;
    for (uint32_t k = 0; k < count && s->rc == SPSIM_OK; k++) {
        uint32_t i = only >= 0 ? (uint32_t)only : s->order[axis][k];
        if (only < 0 && spsim_opt_comp_skip(s->sw, s->d, axis, i))
            continue;
        s->d[axis] = i;
        double got = inner(s, level + 1, keys,
                           spsim_max_d(floor, floor_from(axis, s->sw->v[axis][i], base, previous)));
        if (k == 0)
            base = got;
        previous = got;
        least = least < 0 || got < least ? got : least;
    }
    s->d[axis] = 0;
    return least > 0 ? least : 0;
}

/* The index of s->d's (model, pp, split, vpp) in stages_exist's and shape_ok's memos. */
static size_t
stages_index(const struct search *s)
{
    const struct spsim_sweep *sw = s->sw;
    const uint32_t *d = s->d;
    return (((size_t)d[SPSIM_AXIS_MODEL] * sw->n[SPSIM_AXIS_PP] + d[SPSIM_AXIS_PP]) *
                sw->n[SPSIM_AXIS_PP_SPLIT] +
            d[SPSIM_AXIS_PP_SPLIT]) *
               sw->n[SPSIM_AXIS_VPP] +
           d[SPSIM_AXIS_VPP];
}

/* Whether the stage plan of `pt` exists with its layers dividing as the split needs, and *x's
 * ranks and layers from it (spsim_opt_shape_layers). */
static bool
plan_shape(const struct spsim_sweep_point *pt, struct spsim_opt_shape *x)
{
    const struct spsim_parallel *p = &pt->par;
    const struct spsim_model_shape *m = &pt->model->shape;
    struct spsim_stage_plan plan;
    bool plain =
        !(p->account_embedding || p->account_loss || p->first_stage_layers || p->last_stage_layers);
    if ((plain && m->layers % ((uint64_t)p->pp * p->vpp) != 0) ||
        spsim_stage_plan_make(m, p, &plan, NULL) != SPSIM_OK)
        return false;
    x->p = p->pp;
    x->v = plan.v;
    spsim_opt_shape_layers(pt->model, &plan, x);
    return true;
}

/* check_pipeline's rules on what the shape alone decides: interleaving needs pp >= 2, the split
 * exists, the batch divides into micro-batches, the interleaved schedule's micro-batches divide
 * by pp. *x receives the shape (its ranks' layers from the stage plan, remembered by model, pp,
 * split and vpp: the plan reads nothing else that the space varies, spsim_stage_plan_make). */
static bool
shape_ok(struct search *s, const struct spsim_sweep_point *pt, struct spsim_opt_shape *x)
{
    const struct spsim_parallel *p = &pt->par;
    struct plan_memo *pm = s->plans ? &s->plans[stages_index(s)] : NULL;
    if (!pm || !pm->known) {
        bool ok = plan_shape(pt, x);
        if (pm)
            *pm = (struct plan_memo){.known = true, .ok = ok, .x = *x};
        if (!ok)
            return false;
    } else if (!pm->ok) {
        return false;
    } else {
        *x = pm->x;
    }
    uint64_t step = (uint64_t)p->mbs * p->dp;
    if ((x->v > 1 && p->pp < 2) || step == 0 || p->gbs % step != 0)
        return false;
    x->micro = (double)(p->gbs / step);
    return !(x->v > 1 && (p->gbs / step) % p->pp != 0);
}

/* The pipeline shape of digits s->d (the group axes set, the inner ones at 0): its bound for
 * each kind of point (the recompute phase on every layer or not, the EP overlap on or not),
 * then its points unless no kind can enter the answers. */
static void
group(struct search *s)
{
    struct spsim_sweep_point pt;
    point_here(s, &pt);
    struct spsim_opt_shape x;
    const struct spsim_layer_summary *le = NULL;
    if (pt.par.dp == 0 || pt.invalid || !shape_ok(s, &pt, &x) ||
        spsim_sweep_summary(&s->w, s->d, &pt, &le, NULL) != SPSIM_OK)
        return;
    uint64_t keys[2][2] = {{0, 0}, {0, 0}}, least = UINT64_MAX;
    struct spsim_opt_floor f;
    spsim_opt_floor_of(pt.model, le, false, &f);
    double tokens = (double)pt.par.gbs * (double)le->cfg.s;
    for (int replay = 0; replay < 2; replay++)
        for (int a2a = 0; a2a < 2; a2a++) {
            s->shape_times[replay][a2a] = spsim_opt_iteration_lb(&f, &x, replay, a2a);
            keys[replay][a2a] =
                spsim_opt_key_lb(s->opt->by, s->shape_times[replay][a2a], tokens, s->per_token_mfu);
            if ((replay || s->block) && (!a2a || s->a2a))
                least = keys[replay][a2a] < least ? keys[replay][a2a] : least;
        }
    /* The shape's own memory bound (its ranks 0 and p − 1) for what is searched inside. */
    uint64_t summary_mem = s->mem_lb;
    if (s->sw->use_gpus && !s->sw->auto_pipeline) {
        double b = spsim_opt_ranks_static(s->sw, le, &pt, x.p, x.main[0], x.built[0], x.main[2],
                                          x.built[2]);
        s->mem_lb = spsim_max_u64(s->mem_lb, (uint64_t)(b * (1.0 - 1e-12)));
    }
    if (!any(needed(s, least, NULL))) {
        s->st.pruned++;
        tree_note(s, keys[1][0]); /* a descendant's points here: the recompute phase on */
        s->mem_lb = summary_mem;
        return;
    }
    s->st.shapes++;
    s->shape_least = s->shape_least_any = -1;
    double most = spsim_max_d(spsim_max_d(x.built[0], x.built[1]), x.built[2]);
    s->shape_backward = most * f.layer_backward + f.ends_backward;
    s->x = x;
    memset(&s->pl, 0, sizeof(s->pl));
    for (size_t i = 0; i < sizeof(s->pl.coll) / sizeof(double); i++)
        (&s->pl.coll[0][0][0])[i] = -1;
    s->pl.moe = pt.model->shape.experts > 0;
    s->pl.mixed = le->has_dense;
    s->pl.layer_params = (double)le->params_layer;
    if (le->has_dense)
        s->pl.layer_params = spsim_min_d(s->pl.layer_params, (double)le->params_dense_layer);
    s->tokens_per_seq = (double)le->cfg.s;
    s->tokens = tokens;
    inner(s, s->ngroup, (const uint64_t(*)[2])keys, 0);
    s->mem_lb = summary_mem;
}

/* Whether the stage plan of s->d's pp, split and vpp exists (check_pipeline: the split's rules,
 * interleaving needs pp >= 2), remembered by (model, pp, split, vpp): most vpp values do not
 * divide a pp's layers. */
static bool
stages_exist(struct search *s)
{
    const struct spsim_sweep *sw = s->sw;
    const uint32_t *d = s->d;
    size_t idx = stages_index(s);
    if (s->stages && s->stages[idx] >= 0)
        return s->stages[idx];
    struct spsim_sweep_point pt;
    spsim_sweep_point_of(sw, d, &pt);
    const struct spsim_parallel *p = &pt.par;
    bool plain = !p->account_embedding && !p->account_loss && !p->first_stage_layers &&
                 !p->last_stage_layers;
    struct spsim_stage_plan plan;
    bool ok = !(pt.invalid && p->gbs != 0); /* the split's own refusal (max_gbs's leaves gbs 0) */
    if (ok && plain)
        ok = pt.model->shape.layers % ((uint64_t)p->pp * p->vpp) == 0 && !(p->vpp > 1 && p->pp < 2);
    else if (ok)
        ok = spsim_stage_plan_make(&pt.model->shape, p, &plan, NULL) == SPSIM_OK &&
             !(plan.v > 1 && p->pp < 2);
    if (s->stages)
        s->stages[idx] = ok;
    return ok;
}

/* Rank p − 1's layers over the space's splits and vpp for s->d's model and pp digit `ppd`
 * (the stage plans stages_exist admits): the distinct (main kind, all) counts, remembered. */
static const struct last_layers *
last_layers_of(struct search *s, uint32_t ppd)
{
    const struct spsim_sweep *sw = s->sw;
    struct last_layers *ll = &s->last[(size_t)s->d[SPSIM_AXIS_MODEL] * sw->n[SPSIM_AXIS_PP] + ppd];
    if (ll->known)
        return ll;
    uint32_t saved[SPSIM_AXIS_COUNT];
    memcpy(saved, s->d, sizeof(saved));
    s->d[SPSIM_AXIS_PP] = ppd;
    ll->known = true;
    for (uint32_t a = 0; a < sw->n[SPSIM_AXIS_PP_SPLIT]; a++)
        for (uint32_t b = 0; b < sw->n[SPSIM_AXIS_VPP]; b++) {
            s->d[SPSIM_AXIS_PP_SPLIT] = a;
            s->d[SPSIM_AXIS_VPP] = b;
            struct spsim_sweep_point pt;
            struct spsim_stage_plan plan;
            struct spsim_opt_shape x;
            spsim_sweep_point_of(sw, s->d, &pt);
            if (!stages_exist(s) ||
                spsim_stage_plan_make(&pt.model->shape, &pt.par, &plan, NULL) != SPSIM_OK)
                continue;
            spsim_opt_shape_layers(pt.model, &plan, &x);
            uint32_t k = 0;
            while (k < ll->n &&
                   (ll->main[k] != x.main[2] || ll->built[k] != x.built[2] ||
                    ll->first_main[k] != x.main[0] || ll->first_built[k] != x.built[0]))
                k++;
            if (k == ll->n && k == LAST_LAYERS_MAX)
                ll->overflow = true; /* more shapes than kept: no bound from their ranks */
            else if (k == ll->n) {
                ll->main[k] = x.main[2];
                ll->built[k] = x.built[2];
                ll->first_main[k] = x.main[0];
                ll->first_built[k] = x.built[0];
                ll->n++;
            }
        }
    memcpy(s->d, saved, sizeof(saved));
    return ll;
}

/* The least memory any configuration composed from summary `le` can need: ranks_static's least
 * over the space's pp, splits and vpp. Recomputation does not change it: it holds for the
 * summary's recomputation tree. 0: none known. */
static uint64_t
memory_lb(struct search *s, const struct spsim_layer_summary *le,
          const struct spsim_sweep_point *probe)
{
    const struct spsim_sweep *sw = s->sw;
    double tc = (double)probe->par.tp * probe->par.cp, least = -1;
    if (!sw->use_gpus || !s->last || sw->auto_pipeline)
        return 0;
    for (uint32_t i = 0; i < sw->n[SPSIM_AXIS_PP]; i++) {
        double p = (double)sw->v[SPSIM_AXIS_PP][i];
        if (fmod((double)probe->gpus, tc * p) != 0)
            continue;
        const struct last_layers *ll = last_layers_of(s, i);
        if (ll->overflow)
            return 0;
        for (uint32_t k = 0; k < ll->n; k++) {
            double b = spsim_opt_ranks_static(sw, le, probe, p, ll->first_main[k],
                                              ll->first_built[k], ll->main[k], ll->built[k]);
            least = least < 0 || b < least ? b : least;
        }
    }
    return least > 0 ? (uint64_t)(least * (1.0 - 1e-12)) : 0;
}

/* The least wall rank p − 1's layers can have, by last_layers_of, at the floor's walls. */
static double
last_layers_wall(struct search *s, uint32_t ppd, const struct spsim_opt_floor *f, bool replay)
{
    const struct last_layers *ll = s->last ? last_layers_of(s, ppd) : NULL;
    double least = -1;
    for (uint32_t k = 0; ll && !ll->overflow && k < ll->n; k++) {
        double w =
            ll->main[k] * f->kind[0][replay] + (ll->built[k] - ll->main[k]) * f->kind[1][replay];
        least = least < 0 || w < least ? w : least;
    }
    return least > 0 ? least : 0;
}

static void shapes(struct search *s, uint32_t level);

/* The vpp axis at `level`: the digits whose stage plan exists for s->d's model, pp and split
 * (stages_exist), listed once for them. */
static void
vpp_shapes(struct search *s, uint32_t level)
{
    uint32_t nv = s->sw->n[SPSIM_AXIS_VPP];
    s->d[SPSIM_AXIS_VPP] = 0;
    size_t g = stages_index(s) / nv;
    uint32_t *list = s->vpps + g * nv;
    if (s->nvpp[g] == UINT32_MAX) {
        uint32_t k = 0;
        for (uint32_t i = 0; i < nv; i++) {
            s->d[SPSIM_AXIS_VPP] = i;
            if (stages_exist(s))
                list[k++] = i;
        }
        s->nvpp[g] = k;
    }
    for (uint32_t k = 0; k < s->nvpp[g] && s->rc == SPSIM_OK; k++) {
        s->d[SPSIM_AXIS_VPP] = list[k];
        shapes(s, level + 1);
    }
    s->d[SPSIM_AXIS_VPP] = 0;
}

/* The group axes (pp first), then each shape. */
static void
shapes(struct search *s, uint32_t level)
{
    if (level == s->ngroup) {
        group(s);
        return;
    }
    int axis = s->comp_axes[level];
    if (axis == SPSIM_AXIS_VPP && s->vpps) {
        vpp_shapes(s, level);
        return;
    }
    for (uint32_t i = 0; i < s->sw->n[axis] && s->rc == SPSIM_OK; i++) {
        s->d[axis] = i;
        if (axis == SPSIM_AXIS_PP && s->sw->use_gpus) {
            int64_t pp = s->sw->v[SPSIM_AXIS_PP][i];
            uint64_t tc = (uint64_t)s->sw->v[SPSIM_AXIS_TP][s->d[SPSIM_AXIS_TP]] *
                          (uint64_t)s->sw->v[SPSIM_AXIS_CP][s->d[SPSIM_AXIS_CP]];
            uint64_t gpus = (uint64_t)s->sw->v[SPSIM_AXIS_GPUS][s->d[SPSIM_AXIS_GPUS]];
            if (pp != SPSIM_AXIS_AUTO && gpus % (tc * (uint64_t)pp) != 0)
                continue; /* dp would not be an integer: every point inside is invalid */
        }
        if (axis == SPSIM_AXIS_VPP && !s->sw->auto_pipeline && !stages_exist(s))
            continue;
        shapes(s, level + 1);
    }
    s->d[axis] = 0;
}

/* ---- the layer summaries ---- */

/*
 * The key bound of every configuration composed from summary `le` (its probe `probe`): the
 * steady state alone, iteration >= mb · keep · wall, the critical rank's wall at least the mean
 * over the p ranks and at least what rank p − 1 adds to its layers (output layer, MTP), so per
 * token (mb micro-batches of mbs sequences of seq tokens on each of dp replicas)
 * keep · wall / (dp · mbs · seq), and for the iteration time itself mb >= gbs / (mbs · dp) (1
 * with --max-gbs): the least over the space's pp. A model whose layer depends on dp
 * (global_aux_loss) has no bound here, the probe's dp not being every point's; nor has a space
 * with pp or vpp "auto".
 */
static uint64_t
summary_key(struct search *s, const struct spsim_opt_floor *floor,
            const struct spsim_layer_summary *le, const struct spsim_sweep_point *probe,
            double per_token_mfu)
{
    const struct spsim_sweep *sw = s->sw;
    bool max_gbs = sw->v[SPSIM_AXIS_MAX_GBS][0] != 0; /* the axis is set (0: unset) */
    if (probe->model->shape.load_balancing == SPSIM_BALANCE_GLOBAL_AUX_LOSS || sw->auto_pipeline)
        return 0;
    struct spsim_opt_floor f = *floor;
    double sum = s->block ? f.sum_no_replay : f.sum, keep = s->a2a ? f.keep_a2a : f.keep;
    double tc = (double)probe->par.tp * probe->par.cp, mbs = probe->par.mbs, dp_max = 1, gbs = 0;
    for (uint32_t i = 0; i < sw->n[SPSIM_AXIS_DP]; i++)
        dp_max = spsim_max_d(dp_max, (double)sw->v[SPSIM_AXIS_DP][i]);
    for (uint32_t i = 0; i < sw->n[SPSIM_AXIS_GBS] && !max_gbs; i++)
        gbs = gbs == 0 || (double)sw->v[SPSIM_AXIS_GBS][i] < gbs ? (double)sw->v[SPSIM_AXIS_GBS][i]
                                                                 : gbs;
    double least = INFINITY;
    for (uint32_t i = 0; i < sw->n[SPSIM_AXIS_PP]; i++) {
        double p = (double)sw->v[SPSIM_AXIS_PP][i], dp = dp_max;
        if (sw->use_gpus && fmod((double)probe->gpus, tc * p) != 0)
            continue;
        if (sw->use_gpus)
            dp = (double)probe->gpus / (tc * p);
        double last = f.last + last_layers_wall(s, i, &f, !s->block);
        double wall = p > 1 ? spsim_max_d(sum / p, last) : sum, t;
        if (s->opt->by != SPSIM_BY_ITERATION_S)
            t = keep * wall / (dp * mbs * (double)le->cfg.s);
        else
            t = keep * wall * (max_gbs ? 1.0 : gbs / (mbs * dp));
        least = spsim_min_d(least, t);
    }
    if (!isfinite(least))
        return 0;
    return spsim_opt_key_lb(s->opt->by, least, 1.0,
                            s->opt->by == SPSIM_BY_ITERATION_S ? 0 : per_token_mfu);
}

/* MFU ranking: mfu / tokens_per_s, the same for every configuration of the probe's model, seq,
 * padded vocabulary (tp) and GPU count (compose_flops), from the probe composed in full. */
static double
probe_mfu(struct search *s, const struct spsim_sweep_point *probe)
{
    if (s->opt->by != SPSIM_BY_MFU || !s->sw->use_gpus || compose(s, probe, 0, true) != SPSIM_OK)
        return 0;
    return s->w.res.time.mfu / s->w.res.time.tokens_per_s;
}

/* What a layer configuration's summary bounds of its TE userbuffers variants (lazy_ub). */
struct lazy {
    bool known;
    uint64_t key, mem; /* the key bound of its computation alone; its memory bound */
    double per_token_mfu;
};

/* The layer configuration of digits s->d (with `root`, its variant without recomputation,
 * standing for every recomputation variant): evaluated, bounded, queued. `lazy` (or NULL)
 * receives the key bound of its computation alone (lazy_ub). */
static void
add_summary(struct search *s, uint32_t kind, uint64_t floor, struct lazy *lazy)
{
    struct spsim_sweep_point probe;
    const struct spsim_layer_summary *le = NULL;
    if (lazy)
        lazy->known = false;
    if (spsim_opt_layer_invalid(s->sw, s->d, kind == ITEM_ROOT, &probe) ||
        spsim_opt_layer_alias(s->sw, s->d, &probe) ||
        spsim_sweep_summary(&s->w, s->d, &probe, &le, NULL) != SPSIM_OK)
        return;
    double c = probe_mfu(s, &probe);
    struct spsim_opt_floor f;
    spsim_opt_floor_of(probe.model, le, false, &f);
    uint64_t key = summary_key(s, &f, le, &probe, c), mem = memory_lb(s, le, &probe);
    if (s->opt->by == SPSIM_BY_TOTAL_BYTES)
        key = mem;
    if (lazy) {
        spsim_opt_floor_of(probe.model, le, true, &f);
        *lazy = (struct lazy){true, summary_key(s, &f, le, &probe, c), mem, c};
    }
    queue_push(s, kind, key > floor ? key : floor, c, 0, mem);
}

/* The digit of an axis' value, or -1. */
static int
digit_of(const struct spsim_sweep *sw, int axis, int64_t v)
{
    for (uint32_t i = 0; i < sw->n[axis]; i++)
        if (sw->v[axis][i] == v)
            return (int)i;
    return -1;
}

/* Selective recomputation's modules of a digit (0 is Megatron's default, core_attn). */
static uint32_t
modules_of(const struct spsim_sweep *sw, uint32_t digit)
{
    int64_t v = sw->v[SPSIM_AXIS_RECOMPUTE_MODULES][digit];
    return v ? (uint32_t)v : SPSIM_RMOD_CORE_ATTN;
}

/* The modules digit whose set is the largest proper subset of digit m's that the axis holds,
 * removing its highest modules first; -1: none (the tree's root, no recomputation, is its
 * parent). The first digit of equal sets stands for them (spsim_opt_alias). */
static int
modules_parent(const struct spsim_sweep *sw, uint32_t m)
{
    uint32_t bits = modules_of(sw, m);
    while (bits & (bits - 1)) {
        uint32_t high = 1u << (31 - __builtin_clz(bits));
        bits &= ~high;
        for (uint32_t i = 0; i < sw->n[SPSIM_AXIS_RECOMPUTE_MODULES]; i++)
            if (modules_of(sw, i) == bits)
                return (int)i;
    }
    return -1;
}

/*
 * The recomputation tree of one layer configuration: the root without recomputation, under it
 * full recomputation and the selective module sets, each set under its largest subset. A
 * node's bound holds for its subtree (recomputing more adds recompute steps to the same
 * forward and backward steps, schedule.c), so a node's children are evaluated only when it is
 * taken from the queue. `parent`: the modules digit whose children to queue, -1 the root's.
 */
static void
add_children(struct search *s, int parent, uint64_t floor)
{
    const struct spsim_sweep *sw = s->sw;
    int rs = digit_of(sw, SPSIM_AXIS_RECOMPUTE, SPSIM_RECOMPUTE_SELECTIVE);
    int rf = digit_of(sw, SPSIM_AXIS_RECOMPUTE, SPSIM_RECOMPUTE_FULL);
    int m0 = digit_of(sw, SPSIM_AXIS_RECOMPUTE_MODULES, 0);
    if (parent < 0 && rf >= 0 && m0 >= 0) {
        s->d[SPSIM_AXIS_RECOMPUTE] = (uint32_t)rf;
        s->d[SPSIM_AXIS_RECOMPUTE_MODULES] = (uint32_t)m0;
        add_summary(s, ITEM_SUMMARY, floor, NULL);
    }
    for (uint32_t m = 0; rs >= 0 && m < sw->n[SPSIM_AXIS_RECOMPUTE_MODULES]; m++)
        if (modules_parent(sw, m) == parent) {
            s->d[SPSIM_AXIS_RECOMPUTE] = (uint32_t)rs;
            s->d[SPSIM_AXIS_RECOMPUTE_MODULES] = m;
            add_summary(s, ITEM_NODE, floor, NULL);
        }
}

/*
 * The TE userbuffers variants of the layer configuration of s->d (at the digit without them,
 * whose summary bounded its computation: `lz`), queued as `kind` unevaluated. TE userbuffers
 * change only how a TP collective overlaps its GEMM (schedule.c boundary_overlap, timing.c
 * ub_cost, ub_without_ring_tail): the steps and their computation are the same, and a step's
 * wall is its computation and its exposed communication (fold_step), so the computation of
 * the variant without them bounds every variant's walls, its recomputation subtree's too; the
 * parameters, which the memory bound reads, are the same. A variant is evaluated when the
 * queue reaches that bound (search_item). Without `lz` (no summary there) each is evaluated now.
 */
static void
add_lazy_ub(struct search *s, uint32_t kind, const struct lazy *lz)
{
    uint32_t off = s->d[SPSIM_AXIS_TP_COMM_OVERLAP];
    for (uint32_t u = 0; u < s->sw->n[SPSIM_AXIS_TP_COMM_OVERLAP] && s->rc == SPSIM_OK; u++) {
        if (u == off)
            continue;
        s->d[SPSIM_AXIS_TP_COMM_OVERLAP] = u;
        if (lz->known)
            queue_push(s, ITEM_LAZY, lz->key, lz->per_token_mfu, (int32_t)kind, lz->mem);
        else
            add_summary(s, kind, 0, NULL);
    }
    s->d[SPSIM_AXIS_TP_COMM_OVERLAP] = off;
}

/* The layer configuration of s->d as `kind` (floor 0), and with lazy_ub its TE userbuffers
 * variants. */
static void
add_layer(struct search *s, uint32_t kind)
{
    struct lazy lz;
    add_summary(s, kind, 0, s->lazy_ub >= 0 ? &lz : NULL);
    if (s->lazy_ub >= 0)
        add_lazy_ub(s, kind, &lz);
}

/* Every recomputation variant of s->d, each on its own (no shared bound). */
static void
add_variants(struct search *s)
{
    uint32_t nr = s->sw->n[SPSIM_AXIS_RECOMPUTE], nm = s->sw->n[SPSIM_AXIS_RECOMPUTE_MODULES];
    for (uint32_t r = 0; r < nr && s->rc == SPSIM_OK; r++)
        for (uint32_t m = 0; m < nm && s->rc == SPSIM_OK; m++) {
            s->d[SPSIM_AXIS_RECOMPUTE] = r;
            s->d[SPSIM_AXIS_RECOMPUTE_MODULES] = m;
            add_layer(s, ITEM_SUMMARY);
        }
}

/* Whether the recomputation variants of s->d form a tree: not with the EP overlap in the space
 * (its bound scales by the variant's own exposure). */
static bool
tree_of(const struct search *s)
{
    return s->tree;
}

/* What recomputing more than the node of s->d could take from a layer's wall (0: its search
 * bounds its subtree, tree_lb; spsim_opt_ub_slack). */
static double
tree_slack(struct search *s, uint32_t kind)
{
    struct spsim_sweep_point probe;
    if (s->sw->v[SPSIM_AXIS_TP_COMM_OVERLAP][s->d[SPSIM_AXIS_TP_COMM_OVERLAP]] == 0)
        return 0;
    spsim_opt_layer_invalid(s->sw, s->d, kind == ITEM_ROOT, &probe);
    s->w.layer_evaluations++;
    return spsim_opt_ub_slack(&probe, s->w.le);
}

/* The key bound of the subtree of the node of s->d whose descendants' layer walls can be up to
 * `slack` shorter than its own. */
static uint64_t
slack_key(struct search *s, uint32_t kind, double slack, double per_token_mfu)
{
    struct spsim_sweep_point probe;
    const struct spsim_layer_summary *le = NULL;
    if (!isfinite(slack) || spsim_opt_layer_invalid(s->sw, s->d, kind == ITEM_ROOT, &probe) ||
        spsim_sweep_summary(&s->w, s->d, &probe, &le, NULL) != SPSIM_OK)
        return 0;
    struct spsim_opt_floor f;
    spsim_opt_floor_of(probe.model, le, false, &f);
    spsim_opt_floor_less(&f, slack);
    return summary_key(s, &f, le, &probe, per_token_mfu);
}

/* The root of s->d's tree, at the digits of no recomputation when the space has them. */
static void
add_root(struct search *s)
{
    int rn = digit_of(s->sw, SPSIM_AXIS_RECOMPUTE, SPSIM_RECOMPUTE_NONE);
    int m0 = digit_of(s->sw, SPSIM_AXIS_RECOMPUTE_MODULES, 0);
    s->d[SPSIM_AXIS_RECOMPUTE] = rn >= 0 ? (uint32_t)rn : 0;
    s->d[SPSIM_AXIS_RECOMPUTE_MODULES] = m0 >= 0 ? (uint32_t)m0 : 0;
    add_layer(s, ITEM_ROOT);
}

/* Every layer configuration of the space, queued. */
static void
add_layers(struct search *s)
{
    int axes[SPSIM_AXIS_COUNT];
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->nlayer; i++)
        if (s->layer_axes[i] != SPSIM_AXIS_RECOMPUTE &&
            s->layer_axes[i] != SPSIM_AXIS_RECOMPUTE_MODULES &&
            (s->layer_axes[i] != SPSIM_AXIS_TP_COMM_OVERLAP || s->lazy_ub < 0))
            axes[n++] = s->layer_axes[i];
    memset(s->d, 0, sizeof(s->d));
    s->d[SPSIM_AXIS_TP_COMM_OVERLAP] = s->lazy_ub >= 0 ? (uint32_t)s->lazy_ub : 0;
    do {
        if (tree_of(s))
            add_root(s);
        else
            add_variants(s);
        s->d[SPSIM_AXIS_RECOMPUTE] = s->d[SPSIM_AXIS_RECOMPUTE_MODULES] = 0;
    } while (s->rc == SPSIM_OK && next_digits(s->sw, s->d, axes, n));
}

/* Whether the root's digits are a point of the space (recompute none and modules 0 there). */
static bool
root_in_space(const struct search *s)
{
    const struct spsim_sweep *sw = s->sw;
    return sw->v[SPSIM_AXIS_RECOMPUTE][s->d[SPSIM_AXIS_RECOMPUTE]] == SPSIM_RECOMPUTE_NONE &&
           sw->v[SPSIM_AXIS_RECOMPUTE_MODULES][s->d[SPSIM_AXIS_RECOMPUTE_MODULES]] == 0;
}

/* The next item for thread s: false when the queue is empty and no thread can queue more (or
 * the search failed). The time bound alone decides first (the rest of the queue has no smaller
 * key): an item no answer of this thread needs ends the queue as it stands. */
static bool
next_item(struct search *s, struct item *it)
{
    struct shared *sh = s->sh;
    pthread_mutex_lock(&sh->mu);
    for (;;) {
        while (sh->q.n == 0 && sh->busy > 0 && sh->rc == SPSIM_OK)
            pthread_cond_wait(&sh->cv, &sh->mu);
        if (sh->q.n == 0 || sh->rc != SPSIM_OK) {
            pthread_cond_broadcast(&sh->cv);
            pthread_mutex_unlock(&sh->mu);
            return false;
        }
        *it = queue_pop(&sh->q);
        s->mem_lb = 0;
        s->cap = UINT64_MAX;
        if (any(needed(s, it->key, NULL)))
            break;
        s->st.pruned += 1 + sh->q.n;
        sh->q.n = 0;
    }
    sh->busy++;
    pthread_mutex_unlock(&sh->mu);
    return true;
}

/* One item of the queue, taken by thread s. */
static void
search_item(struct search *s, const struct item *itp)
{
    struct item it = *itp;
    memcpy(s->d, it.d, sizeof(s->d));
    s->mem_lb = it.mem_lb;
    s->cap = capacity_bound(s, s->sw->hws[s->d[SPSIM_AXIS_HW]]);
    if (!any(needed(s, it.key, NULL))) {
        s->st.pruned++;
        return;
    }
    s->per_token_mfu = it.per_token_mfu;
    if (it.kind == ITEM_LAZY) { /* a TE userbuffers variant reached: evaluated (add_lazy_ub) */
        add_summary(s, (uint32_t)it.parent, it.key, NULL);
        return;
    }
    if (it.kind == ITEM_CHILDREN) {
        add_children(s, it.parent, it.key);
        return;
    }
    /* A node's search bounds its subtree: tree_lb collects what each of its compositions
     * was bounded by (a descendant's are no less: it only adds recompute steps). */
    bool own = it.kind != ITEM_ROOT || root_in_space(s);
    double slack = it.kind != ITEM_SUMMARY ? tree_slack(s, it.kind) : 0;
    bool exact = slack == 0;
    s->tree_lb = UINT64_MAX;
    s->tracking = it.kind != ITEM_SUMMARY && own && exact;
    if (own) {
        s->st.summaries++;
        shapes(s, 0);
    }
    s->tracking = false;
    if (it.kind == ITEM_SUMMARY)
        return;
    /* The node's bound and its search's (when some composition was valid: others may be for
     * a descendant, e.g. a recompute method); with TE userbuffers' slack, its bound with
     * every layer that much shorter. */
    if (s->tree_lb == UINT64_MAX)
        s->tree_lb = 0;
    uint64_t lb = exact ? (s->tree_lb > it.key ? s->tree_lb : it.key)
                        : slack_key(s, it.kind, slack, it.per_token_mfu);
    memcpy(s->d, it.d, sizeof(s->d));
    queue_push(s, ITEM_CHILDREN, lb, it.per_token_mfu,
               it.kind == ITEM_ROOT ? -1 : (int32_t)it.d[SPSIM_AXIS_RECOMPUTE_MODULES], it.mem_lb);
}

/* Best bound first, the threads taking items from one queue. */
static void *
search_queue(void *arg)
{
    struct search *s = arg;
    struct item it;
    while (s->rc == SPSIM_OK && next_item(s, &it)) {
        search_item(s, &it);
        pthread_mutex_lock(&s->sh->mu);
        s->sh->busy--;
        if (s->rc != SPSIM_OK && s->sh->rc == SPSIM_OK)
            s->sh->rc = s->rc;
        pthread_cond_broadcast(&s->sh->cv);
        pthread_mutex_unlock(&s->sh->mu);
    }
    return NULL;
}

/* Every point of the space, no bound (opt->exhaustive). */
static void
search_all(struct search *s)
{
    int axes[SPSIM_AXIS_COUNT];
    uint32_t n = 0;
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++)
        if (s->sw->n[a] > 1)
            axes[n++] = a;
    memset(s->d, 0, sizeof(s->d));
    do {
        struct spsim_sweep_point pt;
        spsim_sweep_point_of(s->sw, s->d, &pt);
        if (pt.par.dp == 0 || pt.invalid || spsim_opt_alias(s->sw, s->d, &pt))
            continue;
        s->st.checked++;
        if (spsim_sweep_eval_digits(&s->w, s->d, 0, false, &pt, NULL) != SPSIM_OK)
            continue;
        s->st.valid++;
        s->st.composed++;
        offer(s, &s->w.res);
    } while (next_digits(s->sw, s->d, axes, n));
}

/* ---- the run ---- */

/* s->order: the base value of a floor first (offload 0, the async sends, the default method),
 * the layer counts ascending, the others as given. */
static int
make_orders(struct search *s)
{
    const struct spsim_sweep *sw = s->sw;
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++) {
        uint32_t n = sw->n[a], k = 0;
        if (!(s->order[a] = spsim_calloc(n, sizeof(uint32_t))))
            return SPSIM_ENOMEM;
        int64_t base = a == SPSIM_AXIS_OVERLAP_P2P ? 1 : 0; /* 0: offload 0, method default */
        for (uint32_t i = 0; i < n; i++)
            if (sw->v[a][i] == base)
                s->order[a][k++] = i;
        for (uint32_t i = 0; i < n; i++)
            if (sw->v[a][i] != base)
                s->order[a][k++] = i;
        if (a != SPSIM_AXIS_RECOMPUTE_LAYERS)
            continue;
        for (uint32_t i = 1; i < n; i++) /* insertion sort by value: the chain of counts */
            for (uint32_t j = i; j > 0 && sw->v[a][s->order[a][j]] < sw->v[a][s->order[a][j - 1]];
                 j--) {
                uint32_t t = s->order[a][j];
                s->order[a][j] = s->order[a][j - 1];
                s->order[a][j - 1] = t;
            }
    }
    return SPSIM_OK;
}

/* The layer summaries a search thread keeps (a power of 2; about 9 kB each). */
#define OPT_CACHE_SLOTS 256

static int
search_init(struct search *s, const struct spsim_sweep *sw,
            const struct spsim_optimize_options *opt)
{
    memset(s, 0, sizeof(*s));
    s->sw = sw;
    s->opt = opt;
    s->top = spsim_calloc(opt->top_k, sizeof(*s->top));
    if (!s->top || spsim_sweep_worker_init(&s->w, sw, NULL) != SPSIM_OK)
        return SPSIM_ENOMEM;
    /* The sweep's memos (exact: a hit is what composing again gives, tests/test_staged.c): the
     * search composes the pipelines of one summary over their sharding settings and batches,
     * whose collectives repeat. spsim_sweep_worker_free releases it. */
    if (!(s->w.memo = spsim_coll_memo_create()))
        return SPSIM_ENOMEM;
    /* The sweep's layer cache too (slots by the layer key, as a sweep worker's): a summary
     * queued is asked again when it is taken, a TE userbuffers variant right after it is
     * evaluated (add_lazy_ub), and the recomputation children after their node. */
    free(s->w.cache);
    s->w.cache_slots = OPT_CACHE_SLOTS;
    if (!(s->w.cache = spsim_calloc(s->w.cache_slots, sizeof(*s->w.cache))))
        return SPSIM_ENOMEM;
    if (make_orders(s) != SPSIM_OK)
        return SPSIM_ENOMEM;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(layer_axis_set); i++)
        if (sw->n[layer_axis_set[i]] > 1)
            s->layer_axes[s->nlayer++] = layer_axis_set[i];
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(comp_axis_order); i++)
        if (sw->n[comp_axis_order[i]] > 1) {
            s->ngroup += i < GROUP_AXES;
            s->npipe += i < PIPE_AXES;
            s->comp_axes[s->ncomp++] = comp_axis_order[i];
        }
    s->block = axis_has(sw, SPSIM_AXIS_RECOMPUTE, SPSIM_RECOMPUTE_FULL) &&
               axis_has(sw, SPSIM_AXIS_RECOMPUTE_METHOD, SPSIM_RECOMPUTE_METHOD_BLOCK);
    s->a2a = axis_has(sw, SPSIM_AXIS_A2A_OVERLAP, 1);
    size_t nstages = (size_t)sw->n[SPSIM_AXIS_MODEL] * sw->n[SPSIM_AXIS_PP] *
                     sw->n[SPSIM_AXIS_PP_SPLIT] * sw->n[SPSIM_AXIS_VPP];
    if (nstages <= (1u << 22) && (s->stages = malloc(nstages)) != NULL)
        memset(s->stages, -1, nstages);
    if (nstages <= (1u << 16) && !sw->auto_pipeline) {
        s->plans = spsim_calloc(nstages, sizeof(*s->plans));
        s->vpps = spsim_calloc(nstages, sizeof(*s->vpps));
        s->nvpp = malloc(nstages / sw->n[SPSIM_AXIS_VPP] * sizeof(*s->nvpp));
        if (s->nvpp)
            memset(s->nvpp, 0xff, nstages / sw->n[SPSIM_AXIS_VPP] * sizeof(*s->nvpp));
        if (!s->nvpp) {
            free(s->vpps);
            s->vpps = NULL;
        }
    }
    s->last =
        spsim_calloc((size_t)sw->n[SPSIM_AXIS_MODEL] * sw->n[SPSIM_AXIS_PP], sizeof(*s->last));
    s->lazy_ub = opt->by != SPSIM_BY_TOTAL_BYTES && sw->n[SPSIM_AXIS_TP_COMM_OVERLAP] > 1
                     ? digit_of(sw, SPSIM_AXIS_TP_COMM_OVERLAP, 0)
                     : -1;
    s->tree = opt->by != SPSIM_BY_TOTAL_BYTES && !s->a2a &&
              (sw->n[SPSIM_AXIS_RECOMPUTE] > 1 || sw->n[SPSIM_AXIS_RECOMPUTE_MODULES] > 1);
    return SPSIM_OK;
}

static void
search_free(struct search *s)
{
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++)
        free(s->order[a]);
    free(s->top);
    free(s->stages);
    free(s->plans);
    free(s->vpps);
    free(s->nvpp);
    free(s->last);
    spsim_sweep_worker_free(&s->w);
}

/* A pick evaluated as spsim_evaluate evaluates it (comm.per_layer included). */
static int
entry_of(struct search *s, const struct pick *p, struct spsim_optimize_entry *e,
         struct spsim_error *err)
{
    struct spsim_sweep_point pt;
    int rc = spsim_sweep_eval_digits(&s->w, p->d, 0, true, &pt, err);
    if (rc != SPSIM_OK)
        return rc;
    e->result = s->w.res;
    e->model = pt.model;
    e->hw = pt.hw;
    e->model_name = pt.model_name;
    e->hw_name = pt.hw_name;
    return SPSIM_OK;
}

static int
pick_cmp(const void *x, const void *y)
{
    const struct pick *a = x, *b = y;
    return order(a->key, a->d, b->key, b->d);
}

static int
answers(struct search *s, struct spsim_optimize_result *out, struct spsim_error *err)
{
    qsort(s->top, s->ntop, sizeof(*s->top), pick_cmp);
    int rc = SPSIM_OK;
    out->count = s->ntop;
    for (uint64_t i = 0; rc == SPSIM_OK && i < s->ntop; i++)
        rc = entry_of(s, &s->top[i], &out->top[i], err);
    out->has_unconstrained = s->has_best;
    if (rc == SPSIM_OK && s->has_best)
        rc = entry_of(s, &s->best, &out->unconstrained, err);
    out->has_smallest = s->ntop == 0 && s->has_small;
    if (rc == SPSIM_OK && out->has_smallest)
        rc = entry_of(s, &s->small, &out->smallest, err);
    return rc;
}

/* Merge thread t's answers into thread 0's: the best and the smallest by order, the best K
 * of both heaps with one entry per twin group (top_push). */
static int
merge_answers(struct search *s0, const struct search *t)
{
    if (t->has_best &&
        (!s0->has_best || order(t->best.key, t->best.d, s0->best.key, s0->best.d) < 0)) {
        s0->best = t->best;
        s0->has_best = true;
    }
    if (t->has_small &&
        (!s0->has_small || order(t->small.key, t->small.d, s0->small.key, s0->small.d) < 0)) {
        s0->small = t->small;
        s0->has_small = true;
    }
    uint64_t n = s0->ntop + t->ntop, kept = 0;
    struct pick *all = spsim_calloc(n ? n : 1, sizeof(*all));
    if (!all)
        return SPSIM_ENOMEM;
    memcpy(all, s0->top, s0->ntop * sizeof(*all));
    memcpy(all + s0->ntop, t->top, t->ntop * sizeof(*all));
    qsort(all, n, sizeof(*all), pick_cmp);
    for (uint64_t i = 0; i < n && kept < s0->opt->top_k; i++) {
        bool twin = false;
        for (uint64_t j = 0; j < kept && s0->sw->n[SPSIM_AXIS_OFFLOAD_LAYERS] > 1 && !twin; j++)
            twin = s0->top[j].twins == all[i].twins && offload_twins(s0->top[j].d, all[i].d);
        if (!twin)
            s0->top[kept++] = all[i];
    }
    s0->ntop = kept; /* sorted best first: a heap no more, which only answers() reads now */
    free(all);
    return SPSIM_OK;
}

static void
stats_add(struct spsim_optimize_stats *a, const struct search *t)
{
    a->summaries += t->st.summaries;
    a->shapes += t->st.shapes;
    a->pipelines += t->st.pipelines;
    a->checked += t->st.checked;
    a->valid += t->st.valid;
    a->composed += t->st.composed;
    a->memory_only += t->st.memory_only;
    a->pruned += t->st.pruned;
    a->layer_evaluations += t->w.layer_evaluations;
}

/* The threads the search runs on: opt->threads, 0 for every online CPU, at most MAX_THREADS;
 * one for --exhaustive (no queue to share). */
#define MAX_THREADS 256
static unsigned
thread_count(const struct spsim_optimize_options *opt)
{
    long n = opt->threads ? (long)opt->threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (opt->exhaustive || n < 1)
        return 1;
    return n > MAX_THREADS ? MAX_THREADS : (unsigned)n;
}

/* The branch and bound on `n` threads, each with its own search s[i] (s[0]: this thread). */
static int
search_threads(struct search *s, unsigned n)
{
    pthread_t tid[MAX_THREADS];
    unsigned started = 1;
    int rc = SPSIM_OK;
    add_layers(&s[0]);
    for (; started < n && s[0].rc == SPSIM_OK; started++)
        if (pthread_create(&tid[started], NULL, search_queue, &s[started]) != 0)
            break;
    search_queue(&s[0]);
    for (unsigned i = 1; i < started; i++)
        pthread_join(tid[i], NULL);
    for (unsigned i = 0; i < n; i++)
        rc = rc != SPSIM_OK ? rc : s[i].rc;
    if (s[0].sh->rc != SPSIM_OK)
        rc = s[0].sh->rc;
    for (unsigned i = 1; i < started && rc == SPSIM_OK; i++)
        rc = merge_answers(&s[0], &s[i]);
    return rc;
}

int
spsim_optimize_run(const struct spsim_sweep *sw, const struct spsim_optimize_options *opt,
                   struct spsim_optimize_result *out, struct spsim_error *err)
{
    if (!sw || !opt || !out || !out->top)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_optimize_run: NULL argument");
    if (opt->top_k < 1 || opt->top_k > SPSIM_OPTIMIZE_MAX_TOP ||
        (unsigned)opt->by >= SPSIM_BY_COUNT)
        return spsim_fail(err, SPSIM_EINVAL, "optimize: top_k must be 1 .. %u and by a ranking",
                          SPSIM_OPTIMIZE_MAX_TOP);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned n = thread_count(opt), made = 0;
    struct shared sh = {.rc = SPSIM_OK};
    struct search *s = spsim_calloc(n, sizeof(*s));
    int rc = s ? SPSIM_OK : SPSIM_ENOMEM;
    pthread_mutex_init(&sh.mu, NULL);
    pthread_cond_init(&sh.cv, NULL);
    for (; rc == SPSIM_OK && made < n; made++) {
        rc = search_init(&s[made], sw, opt);
        s[made].sh = &sh;
    }
    if (rc == SPSIM_OK && opt->exhaustive)
        search_all(&s[0]);
    else if (rc == SPSIM_OK)
        rc = search_threads(s, n);
    rc = rc != SPSIM_OK ? spsim_fail(err, rc, "out of memory") : answers(&s[0], out, err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    memset(&out->stats, 0, sizeof(out->stats));
    for (unsigned i = 0; i < made; i++)
        stats_add(&out->stats, &s[i]);
    out->stats.points = sw->points;
    out->stats.elapsed_s =
        (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    for (unsigned i = 0; i < made; i++)
        search_free(&s[i]);
    free(s);
    free(sh.q.h);
    pthread_mutex_destroy(&sh.mu);
    pthread_cond_destroy(&sh.cv);
    return rc;
}
