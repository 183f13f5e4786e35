/*
 * spsim_optimize_run's branch and bound against the exhaustive evaluation of the same spaces,
 * and each of its bounds against every valid point of those spaces (src/sweep/optimize_bounds.c,
 * doc/sweep.md "How optimize searches"): a bound that were not one (a mutant that tightens a
 * bound, e.g. doubles the floor of a layer's wall or a rank's optimizer state) fails the
 * pointwise checks, and the answers
 * differ where the bound matters. The spaces mix every axis the default space has: pipeline
 * shapes and splits, interleaving and its sends, recomputation with its modules and methods,
 * offload, context parallelism, sharding and its overlaps, FP8 recipes, TE userbuffers, MoE's
 * expert grid, dispatchers and all-to-all overlap, and a space where nothing fits.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/eval.h"
#include "engine/stages.h"
#include "sweep/optimize_internal.h"
#include "testutil.h"

struct axis_text {
    enum spsim_sweep_axis axis;
    const char *text;
};

static struct spsim_sweep *
make_space(const struct axis_text *axes, size_t n)
{
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_sweep *sw = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_sweep_spec_create(&spec, &err), SPSIM_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(spsim_sweep_spec_parse(spec, axes[i].axis, axes[i].text, NULL, &err) ==
                          SPSIM_OK,
                      "%s", err.message);
    ck_assert_msg(spsim_sweep_create(spec, &sw, &err) == SPSIM_OK, "%s", err.message);
    spsim_sweep_spec_destroy(spec);
    return sw;
}

/* Llama 3 8B on 32 H100: pipeline shapes, splits, interleaving and its sends, the recompute
 * methods and their layer counts, sharding and overlaps. */
static const struct axis_text pipeline_space[] = {
    {SPSIM_AXIS_MODEL, "llama3-8b"},
    {SPSIM_AXIS_HW, "dgx-h100"},
    {SPSIM_AXIS_GPUS, "32"},
    {SPSIM_AXIS_TP, "2,8"},
    {SPSIM_AXIS_PP, "1,2,4,8"},
    {SPSIM_AXIS_VPP, "1,2,4"},
    {SPSIM_AXIS_PP_SPLIT, "even,account,balanced"},
    {SPSIM_AXIS_MBS, "1,2"},
    {SPSIM_AXIS_MAX_GBS, "64"},
    {SPSIM_AXIS_SP, "on"},
    {SPSIM_AXIS_RECOMPUTE, "none,selective,full"},
    {SPSIM_AXIS_RECOMPUTE_METHOD, "default,uniform,block"},
    {SPSIM_AXIS_RECOMPUTE_LAYERS, "0..4"},
    {SPSIM_AXIS_OVERLAP_P2P, "on,off"},
    {SPSIM_AXIS_ZERO, "0,1,3"},
    {SPSIM_AXIS_DISTRIBUTED_OPTIMIZER, "on,off"},
    {SPSIM_AXIS_OVERLAP_GRAD_REDUCE, "on,off"},
};

/* Llama 3 70B on 16 H100, tight for memory: offload, context parallelism and its exchanges, FP8
 * recipes, TE userbuffers, module sets, every sharding level with the parameter gather. */
static const struct axis_text memory_space[] = {
    {SPSIM_AXIS_MODEL, "llama3-70b"},
    {SPSIM_AXIS_HW, "dgx-h100"},
    {SPSIM_AXIS_GPUS, "16"},
    {SPSIM_AXIS_TP, "4,8"},
    {SPSIM_AXIS_CP, "1,2"},
    {SPSIM_AXIS_CP_COMM_TYPE, "p2p,a2a"},
    {SPSIM_AXIS_PP, "1,2"},
    {SPSIM_AXIS_SEQ, "4096"},
    {SPSIM_AXIS_GBS, "16"},
    {SPSIM_AXIS_SP, "on,off"},
    {SPSIM_AXIS_TP_COMM_OVERLAP, "off,on"},
    {SPSIM_AXIS_RECOMPUTE, "none,selective,full"},
    {SPSIM_AXIS_RECOMPUTE_MODULES, "default,mlp,layernorm+mlp,core_attn"},
    {SPSIM_AXIS_OFFLOAD_LAYERS, "0,8,40,79"},
    {SPSIM_AXIS_DTYPE, "bf16,fp8"},
    {SPSIM_AXIS_FP8_RECIPE, "delayed,current"},
    {SPSIM_AXIS_ZERO, "0..3"},
    {SPSIM_AXIS_DISTRIBUTED_OPTIMIZER, "off,on"},
    {SPSIM_AXIS_OVERLAP_GRAD_REDUCE, "on,off"},
    {SPSIM_AXIS_OVERLAP_PARAM_GATHER, "on,off"},
};

/* Mixtral 8x7B on 16 H100: the expert grid, both dispatchers, the EP all-to-all overlap with
 * delayed wgrad, MoE recompute modules. */
static const struct axis_text moe_space[] = {
    {SPSIM_AXIS_MODEL, "mixtral-8x7b"},
    {SPSIM_AXIS_HW, "dgx-h100"},
    {SPSIM_AXIS_GPUS, "16"},
    {SPSIM_AXIS_TP, "1,2,4"},
    {SPSIM_AXIS_PP, "1,2,4"},
    {SPSIM_AXIS_EP, "1,2,4,8"},
    {SPSIM_AXIS_ETP, "0,1,2"},
    {SPSIM_AXIS_MOE_DISPATCHER, "alltoall,allgather"},
    {SPSIM_AXIS_A2A_OVERLAP, "off,on"},
    {SPSIM_AXIS_DELAY_WGRAD, "off,on"},
    {SPSIM_AXIS_MBS, "1,2"},
    {SPSIM_AXIS_GBS, "32"},
    {SPSIM_AXIS_SP, "on,off"},
    {SPSIM_AXIS_RECOMPUTE, "none,selective"},
    {SPSIM_AXIS_RECOMPUTE_MODULES, "default,moe_act,core_attn+moe"},
    {SPSIM_AXIS_ZERO, "0,1"},
    {SPSIM_AXIS_OVERLAP_GRAD_REDUCE, "on,off"},
};

/* DeepSeek-V3 on 128 H100: dense and MoE layers, MLA, MTP on the last rank, uneven splits. */
static const struct axis_text mixed_space[] = {
    {SPSIM_AXIS_MODEL, "deepseek-v3"},
    {SPSIM_AXIS_HW, "dgx-h100"},
    {SPSIM_AXIS_GPUS, "128"},
    {SPSIM_AXIS_TP, "1,8"},
    {SPSIM_AXIS_PP, "1,2,4,16"},
    {SPSIM_AXIS_PP_SPLIT, "even,account,balanced"},
    {SPSIM_AXIS_EP, "8,16"},
    {SPSIM_AXIS_MOE_DISPATCHER, "alltoall,allgather"},
    {SPSIM_AXIS_SEQ, "1024"},
    {SPSIM_AXIS_GBS, "128"},
    {SPSIM_AXIS_SP, "on"},
    {SPSIM_AXIS_TP_COMM_OVERLAP, "off,on"},
    {SPSIM_AXIS_RECOMPUTE, "none,selective,full"},
    {SPSIM_AXIS_RECOMPUTE_MODULES, "default,moe_act,mla_up_proj+moe_act"},
    {SPSIM_AXIS_DTYPE, "bf16,fp8"},
    {SPSIM_AXIS_ZERO, "0,1"},
    {SPSIM_AXIS_OVERLAP_GRAD_REDUCE, "on,off"},
};

/* Llama 3 8B on 64 H100, tp up to 8: TE userbuffers hide TP collectives that the variant
 * without them exposes, so the search's bound of a variant with them (optimize.c add_lazy_ub,
 * queued unevaluated) must be the computation alone of the variant without them: with its
 * whole floor, exposed collectives included, the search misses rows of the exhaustive answer
 * here (by iteration_s, #3: tp 2, mbs 2, 5.46 s; the mutant optimize-lazy-ub-full-floor). */
static const struct axis_text userbuffers_space[] = {
    {SPSIM_AXIS_MODEL, "llama3-8b"},
    {SPSIM_AXIS_HW, "dgx-h100"},
    {SPSIM_AXIS_GPUS, "64"},
    {SPSIM_AXIS_TP, "2,4,8"},
    {SPSIM_AXIS_MBS, "1,2"},
    {SPSIM_AXIS_GBS, "512"},
    {SPSIM_AXIS_SP, "on"},
    {SPSIM_AXIS_TP_COMM_OVERLAP, "off,on"},
    {SPSIM_AXIS_RECOMPUTE, "none,selective"},
    {SPSIM_AXIS_DTYPE, "bf16"},
    {SPSIM_AXIS_ZERO, "0,1"},
    {SPSIM_AXIS_OVERLAP_GRAD_REDUCE, "on,off"},
};

/* Llama 3 8B on 64 H100 with offload: the copies of up to 7 layers hide behind compute, so
 * configurations that differ in them alone rank alike (to rounding); the answer shows each
 * once (optimize.c top_push; without it #1 and #2 of this space are offload 2 and 3). */
/* HSDP (num_distributed_optimizer_instances): Llama 3 8B and Mixtral 8x7B on 32 H100, every
 * sharding level and both Megatron-FSDP levels of the experts, R dividing dp·cp and edp or not
 * (invalid), one node a replica or less: the inner groups on NVLink where dp·cp spans nodes. */
static const struct axis_text hsdp_space[] = {
    {SPSIM_AXIS_MODEL, "llama3-8b,mixtral-8x7b"},
    {SPSIM_AXIS_HW, "dgx-h100"},
    {SPSIM_AXIS_GPUS, "32"},
    {SPSIM_AXIS_TP, "1,2"},
    {SPSIM_AXIS_PP, "1,2"},
    {SPSIM_AXIS_EP, "1,8"},
    {SPSIM_AXIS_MBS, "1"},
    {SPSIM_AXIS_GBS, "64"},
    {SPSIM_AXIS_SP, "on,off"},
    {SPSIM_AXIS_RECOMPUTE, "none,full"},
    {SPSIM_AXIS_ZERO, "0..3"},
    {SPSIM_AXIS_DISTRIBUTED_OPTIMIZER, "off,on"},
    {SPSIM_AXIS_OVERLAP_GRAD_REDUCE, "on,off"},
    {SPSIM_AXIS_DIST_OPT_INSTANCES, "1,2,4,8"},
};

static const struct axis_text offload_space[] = {
    {SPSIM_AXIS_MODEL, "llama3-8b"},
    {SPSIM_AXIS_HW, "dgx-h100"},
    {SPSIM_AXIS_GPUS, "64"},
    {SPSIM_AXIS_TP, "1,2"},
    {SPSIM_AXIS_MBS, "1,2"},
    {SPSIM_AXIS_GBS, "512"},
    {SPSIM_AXIS_SP, "off"},
    {SPSIM_AXIS_RECOMPUTE, "none"},
    {SPSIM_AXIS_OFFLOAD_LAYERS, "0..7"},
    {SPSIM_AXIS_DTYPE, "fp8"},
    {SPSIM_AXIS_ZERO, "2,3"},
};

/* Llama 3 405B on 8 H100: nothing fits; the smallest and the fastest whatever their memory. */
static const struct axis_text nothing_fits_space[] = {
    {SPSIM_AXIS_MODEL, "llama3-405b"},
    {SPSIM_AXIS_HW, "dgx-h100"},
    {SPSIM_AXIS_GPUS, "8"},
    {SPSIM_AXIS_TP, "1,2,4,8"},
    {SPSIM_AXIS_PP, "1,2"},
    {SPSIM_AXIS_SEQ, "2048"},
    {SPSIM_AXIS_GBS, "8"},
    {SPSIM_AXIS_SP, "on,off"},
    {SPSIM_AXIS_RECOMPUTE, "none,full"},
    {SPSIM_AXIS_ZERO, "0..3"},
    {SPSIM_AXIS_OVERLAP_GRAD_REDUCE, "on,off"},
};

#define SPACE(a) a, SPSIM_ARRAY_LENGTH(a)

static void
run_threads(const struct spsim_sweep *sw, enum spsim_sweep_by by, uint64_t k, bool exhaustive,
            unsigned threads, struct spsim_optimize_result *res)
{
    struct spsim_optimize_options opt;
    struct spsim_error err = {0};
    spsim_optimize_options_defaults(&opt);
    opt.by = by;
    opt.top_k = k;
    opt.exhaustive = exhaustive;
    opt.threads = threads;
    memset(res, 0, sizeof(*res));
    res->top = calloc(k, sizeof(*res->top));
    ck_assert_ptr_nonnull(res->top);
    ck_assert_msg(spsim_optimize_run(sw, &opt, res, &err) == SPSIM_OK, "%s", err.message);
}

static void
run_optimize(const struct spsim_sweep *sw, enum spsim_sweep_by by, uint64_t k, bool exhaustive,
             struct spsim_optimize_result *res)
{
    run_threads(sw, by, k, exhaustive, 1, res);
}

/* Two entries are the same configuration with the same result: every field of the sweep's
 * row (exact doubles: shortest round-trip), and the HSDP replicas (no column of the row's).
 * Not memcmp of the structures, whose padding bytes
 * are indeterminate (C11 6.2.6.1p6) and differ between a composed and a copied result under
 * clang. */
static bool
same_entry(const struct spsim_optimize_entry *a, const struct spsim_optimize_entry *b)
{
    static char x[SPSIM_ROW_MAX], y[SPSIM_ROW_MAX];
    size_t nx = spsim_row_format(SPSIM_ROW_CSV, "m", "h", &a->result, x, sizeof(x));
    size_t ny = spsim_row_format(SPSIM_ROW_CSV, "m", "h", &b->result, y, sizeof(y));
    ck_assert(nx > 0 && ny > 0);
    return a->model == b->model && a->hw == b->hw && nx == ny && memcmp(x, y, nx) == 0 &&
           a->result.config.dist_opt_instances == b->result.config.dist_opt_instances;
}

/* The length of a CSV row's first `n` fields. */
static size_t
fields_len(const char *row, size_t len, size_t n)
{
    size_t i = 0;
    for (; i < len && n; i++)
        n -= row[i] == ',';
    return i;
}

/* Whether two entries are one configuration but for the offloaded layers: their rows'
 * configuration columns (those before the first memory_ column) with offload_layers made
 * equal, and the same HSDP replicas. */
static bool
offload_twins(const struct spsim_optimize_entry *a, const struct spsim_optimize_entry *b)
{
    static char head[SPSIM_ROW_MAX], x[SPSIM_ROW_MAX], y[SPSIM_ROW_MAX];
    struct spsim_result ra = a->result, rb = b->result;
    rb.config.offload_layers = ra.config.offload_layers;
    size_t nh = spsim_row_header(SPSIM_ROW_CSV, head, sizeof(head));
    const char *mem = strstr(head, ",memory_");
    ck_assert(nh > 0 && mem);
    size_t cols = 0;
    for (const char *c = head; c < mem; c++)
        cols += *c == ',';
    size_t nx = spsim_row_format(SPSIM_ROW_CSV, "m", "h", &ra, x, sizeof(x));
    size_t ny = spsim_row_format(SPSIM_ROW_CSV, "m", "h", &rb, y, sizeof(y));
    size_t lx = fields_len(x, nx, cols + 1), ly = fields_len(y, ny, cols + 1);
    return a->model == b->model && a->hw == b->hw && lx == ly && memcmp(x, y, lx) == 0 &&
           ra.config.dist_opt_instances == rb.config.dist_opt_instances;
}

/* Canonical form: no two rows of an answer differ in the offloaded layers alone (top_push). */
static void
no_offload_twins(const struct spsim_optimize_result *r, const char *name)
{
    for (uint64_t i = 0; i < r->count; i++)
        for (uint64_t j = i + 1; j < r->count; j++)
            ck_assert_msg(!offload_twins(&r->top[i], &r->top[j]),
                          "%s: #%llu and #%llu differ in offload_layers alone (%u, %u)", name,
                          (unsigned long long)i + 1, (unsigned long long)j + 1,
                          r->top[i].result.config.offload_layers,
                          r->top[j].result.config.offload_layers);
}

/* Two answers are the same, entry by entry. */
static void
same_answers(const struct spsim_optimize_result *bnb, const struct spsim_optimize_result *all,
             const char *name, int by)
{
    ck_assert_msg(bnb->count == all->count, "%s by %s: %llu vs %llu", name, spsim_sweep_by_name(by),
                  (unsigned long long)bnb->count, (unsigned long long)all->count);
    for (uint64_t i = 0; i < all->count; i++)
        ck_assert_msg(same_entry(&bnb->top[i], &all->top[i]),
                      "%s by %s: #%llu differs: %.17g s (tp %u pp %u dp %u mbs %u) "
                      "against %.17g s (tp %u pp %u dp %u mbs %u)",
                      name, spsim_sweep_by_name(by), (unsigned long long)i + 1,
                      bnb->top[i].result.time.iteration_s, bnb->top[i].result.config.tp,
                      bnb->top[i].result.config.pp, bnb->top[i].result.config.dp,
                      bnb->top[i].result.config.mbs, all->top[i].result.time.iteration_s,
                      all->top[i].result.config.tp, all->top[i].result.config.pp,
                      all->top[i].result.config.dp, all->top[i].result.config.mbs);
    ck_assert(bnb->has_unconstrained == all->has_unconstrained);
    ck_assert_msg(!all->has_unconstrained || same_entry(&bnb->unconstrained, &all->unconstrained),
                  "%s by %s: the best without the memory limit differs", name,
                  spsim_sweep_by_name(by));
    ck_assert(bnb->has_smallest == all->has_smallest);
    ck_assert_msg(!all->has_smallest || same_entry(&bnb->smallest, &all->smallest),
                  "%s by %s: the smallest differs", name, spsim_sweep_by_name(by));
    no_offload_twins(bnb, name);
}

/* The branch and bound's three answers are the exhaustive evaluation's, entry by entry, on one
 * thread and on three (a shared queue, each thread pruning by its own answers, merged). */
static void
bnb_is_exhaustive(const struct axis_text *axes, size_t n, const char *name)
{
    struct spsim_sweep *sw = make_space(axes, n);
    for (int by = 0; by < SPSIM_BY_COUNT; by++)
        for (uint64_t k = 1; k <= 5; k += 4) {
            struct spsim_optimize_result bnb, all, par;
            run_optimize(sw, (enum spsim_sweep_by)by, k, false, &bnb);
            run_optimize(sw, (enum spsim_sweep_by)by, k, true, &all);
            run_threads(sw, (enum spsim_sweep_by)by, k, false, 3, &par);
            same_answers(&bnb, &all, name, by);
            same_answers(&par, &all, name, by);
            no_offload_twins(&all, name);
            /* the search is a search: no more evaluations than the space's valid points, but
             * for the one probe per layer summary that ranking by MFU composes to bound the
             * summary's FLOPs (optimize.c, the key bound's probe): a space too small to prune
             * (the offload space's 64 points) may then compose a few more */
            uint64_t probes = by == SPSIM_BY_MFU ? bnb.stats.summaries : 0;
            ck_assert_uint_le(bnb.stats.composed, all.stats.composed + probes);
            free(bnb.top);
            free(all.top);
            free(par.top);
        }
    spsim_sweep_destroy(sw);
}

START_TEST(pipeline_space_answer)
{
    bnb_is_exhaustive(SPACE(pipeline_space), "pipeline");
}
END_TEST

START_TEST(memory_space_answer)
{
    bnb_is_exhaustive(SPACE(memory_space), "memory");
}
END_TEST

START_TEST(moe_space_answer)
{
    bnb_is_exhaustive(SPACE(moe_space), "moe");
}
END_TEST

START_TEST(mixed_space_answer)
{
    bnb_is_exhaustive(SPACE(mixed_space), "mixed");
}
END_TEST

START_TEST(userbuffers_space_answer)
{
    bnb_is_exhaustive(SPACE(userbuffers_space), "userbuffers");
}
END_TEST

START_TEST(offload_space_answer)
{
    bnb_is_exhaustive(SPACE(offload_space), "offload");
}
END_TEST

START_TEST(hsdp_space_answer)
{
    bnb_is_exhaustive(SPACE(hsdp_space), "hsdp");
}
END_TEST

START_TEST(nothing_fits_answer)
{
    bnb_is_exhaustive(SPACE(nothing_fits_space), "nothing fits");
    struct spsim_sweep *sw = make_space(SPACE(nothing_fits_space));
    struct spsim_optimize_result r;
    run_optimize(sw, SPSIM_BY_TOKENS_PER_S, 5, false, &r);
    ck_assert_uint_eq(r.count, 0);
    ck_assert(r.has_smallest && r.has_unconstrained);
    ck_assert(!r.smallest.result.memory.fits);
    free(r.top);
    spsim_sweep_destroy(sw);
}
END_TEST

/* ---- each bound against every valid point ---- */

static void
digits_of_index(const struct spsim_sweep *sw, uint64_t index, uint32_t *d)
{
    for (int a = SPSIM_AXIS_COUNT - 1; a >= 0; a--) {
        d[a] = (uint32_t)(index % sw->n[a]);
        index /= sw->n[a];
    }
}

static uint64_t
index_of(const struct spsim_sweep *sw, const uint32_t *d)
{
    uint64_t index = 0;
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++)
        index = index * sw->n[a] + d[a];
    return index;
}

/* What the sibling checks need of each point: NaN where invalid or an alias. */
struct point_rec {
    double pipe; /* iteration_s less dp_exposed_s, optimizer_s and optimizer_host_exposed_s */
    double iteration;
    uint64_t bytes;
    bool alias;
};

/* The shape of an evaluated point: its stage plan's ranks 0, 1 and p − 1, their layers and how
 * many of them are MoE layers (every layer of a dense model), by the model's pattern. */
static struct spsim_opt_shape
shape_of(const struct spsim_sweep_point *pt, const struct spsim_result *r)
{
    struct spsim_opt_shape x = {.p = r->config.pp, .v = r->config.vpp};
    struct spsim_stage_plan plan;
    x.micro = r->comm.microbatches;
    ck_assert_int_eq(spsim_stage_plan_make(&pt->model->shape, &r->config, &plan, NULL), SPSIM_OK);
    const uint32_t ranks[3] = {0, 1, r->config.pp - 1};
    for (int i = 0; i < 3; i++)
        for (uint32_t c = 0; c < plan.v && !(i == 1 && r->config.pp <= 2); c++) {
            uint32_t off = spsim_stage_chunk_offset(&plan, ranks[i], c);
            uint32_t n = spsim_stage_chunk_layers(&plan, ranks[i], c);
            x.built[i] += n;
            for (uint32_t l = off; l < off + n; l++)
                x.main[i] += !pt->model->shape.experts || spsim_model_layer_is_moe(pt->model, l);
        }
    ck_assert_uint_eq(x.built[0], r->memory.layers_first_stage);
    ck_assert_uint_eq(x.built[2], r->memory.layers_last_stage);
    return x;
}

/* Seconds per token no configuration composed from floor f can beat (optimize.c summary_key). */
static double
per_token_floor(const struct spsim_opt_floor *f, const struct spsim_result *r, bool replay,
                bool a2a)
{
    return (a2a ? f->keep_a2a : f->keep) * (replay ? f->sum : f->sum_no_replay) /
           ((double)r->config.pp * r->config.dp * r->config.mbs * r->config.seq);
}

#define SLACK (1 + 1e-12)

/* The time bounds of one point: the shape's (iteration_lb), the summary's per token, and the
 * recomputation tree's (the variant without recomputation, and the largest subset of selective
 * modules, bound the point). */
static void
check_time_bounds(struct spsim_sweep_worker *w, const uint32_t *d,
                  const struct spsim_sweep_point *pt, const struct spsim_result *r,
                  const struct spsim_layer_summary *le)
{
    struct spsim_opt_floor f;
    spsim_opt_floor_of(pt->model, le, false, &f);
    struct spsim_opt_shape x = shape_of(pt, r);
    bool replay = r->config.recompute_method != SPSIM_RECOMPUTE_METHOD_BLOCK;
    bool a2a = r->config.moe_a2a_overlap;
    double lb = spsim_opt_iteration_lb(&f, &x, replay, a2a);
    ck_assert_msg(lb <= r->time.iteration_s * SLACK, "shape bound %g > iteration %g", lb,
                  r->time.iteration_s);
    double per_token = r->time.iteration_s / ((double)r->config.gbs * r->config.seq) * SLACK;
    ck_assert(per_token_floor(&f, r, replay, a2a) <= per_token);
    if (r->config.recompute == SPSIM_RECOMPUTE_NONE || a2a)
        return;
    struct spsim_sweep_point q = *pt;
    const struct spsim_layer_summary *lq = NULL;
    uint32_t mods = r->config.recompute_modules;
    uint32_t parent = mods & ~(1u << (31 - __builtin_clz(mods ? mods : 1)));
    q.par.recompute = r->config.recompute == SPSIM_RECOMPUTE_SELECTIVE && parent
                          ? SPSIM_RECOMPUTE_SELECTIVE
                          : SPSIM_RECOMPUTE_NONE;
    q.par.recompute_modules = q.par.recompute == SPSIM_RECOMPUTE_NONE ? 0 : parent;
    q.par.recompute_method = SPSIM_RECOMPUTE_METHOD_DEFAULT;
    q.par.recompute_layers = 0;
    ck_assert_int_eq(spsim_sweep_summary(w, d, &q, &lq, NULL), SPSIM_OK);
    spsim_opt_floor_of(pt->model, lq, false, &f);
    /* With TE userbuffers the parent's walls less their slack (optimize.c slack_key). */
    static struct spsim_layer_eval scratch;
    spsim_opt_floor_less(&f, spsim_opt_ub_slack(&q, &scratch));
    ck_assert_msg(per_token_floor(&f, r, true, false) <= per_token,
                  "the recomputation tree's parent bound exceeds its child");
}

/* What the sharding settings cannot hide (spsim_opt_sharding_lb) against the point's data-
 * parallel and optimizer lines, with the bound of the backward optimize.c uses. */
static void
check_sharding_bound(const struct spsim_sweep_point *pt, const struct spsim_result *r,
                     const struct spsim_layer_summary *le)
{
    struct spsim_opt_floor f;
    spsim_opt_floor_of(pt->model, le, false, &f);
    struct spsim_opt_shape x = shape_of(pt, r);
    struct spsim_opt_pipeline pl;
    memset(&pl, 0, sizeof(pl));
    for (size_t i = 0; i < sizeof(pl.coll) / sizeof(double); i++)
        (&pl.coll[0][0][0])[i] = -1;
    pl.known = true;
    pl.moe = pt->model->shape.experts > 0;
    pl.mixed = le->has_dense;
    pl.layer_params = le->has_dense ? fmin((double)le->params_layer, (double)le->params_dense_layer)
                                    : (double)le->params_layer;
    bool even = x.built[0] == x.built[1] && x.built[1] == x.built[2];
    pl.params[0] = (double)r->memory.parameters_first_stage;
    pl.params[1] = r->config.pp > 1 ? (double)r->memory.parameters_last_stage : 0;
    pl.params[2] = r->config.pp > 2 && (!even || pl.mixed) ? x.built[1] * pl.layer_params : 0;
    double most = fmax(fmax(x.built[0], x.built[1]), x.built[2]);
    double lines = r->time.dp_exposed_s + r->time.optimizer_s + r->time.optimizer_host_exposed_s;
    x.backward_s = most * f.layer_backward + f.ends_backward;
    ck_assert_msg(spsim_opt_sharding_lb(pt, &x, &pl) <= lines * SLACK + 1e-15,
                  "sharding bound %g > %g (zero %u)", spsim_opt_sharding_lb(pt, &x, &pl), lines,
                  r->config.zero);
    x.backward_s = fmin(x.backward_s, r->time.microbatch_s);
    ck_assert(spsim_opt_sharding_lb(pt, &x, &pl) <= lines * SLACK + 1e-15);
}

/* The memory bound of the point's shape (optimize.c memory_lb takes the least of these over
 * the space's shapes) against its total. */
static void
check_memory_bound(const struct spsim_sweep *sw, const struct spsim_sweep_point *pt,
                   const struct spsim_result *r, const struct spsim_layer_summary *le)
{
    struct spsim_opt_shape x = shape_of(pt, r);
    double lb =
        spsim_opt_ranks_static(sw, le, pt, x.p, x.main[0], x.built[0], x.main[2], x.built[2]);
    ck_assert_msg(lb <= (double)r->memory.total_bytes * SLACK, "memory bound %g > total %g", lb,
                  (double)r->memory.total_bytes);
}

/* The digits of `d` with axis `a` at the digit of value v; false if the axis lacks it. */
static bool
with_value(const struct spsim_sweep *sw, const uint32_t *d, int a, int64_t v, uint32_t *out)
{
    memcpy(out, d, SPSIM_AXIS_COUNT * sizeof(*d));
    for (uint32_t i = 0; i < sw->n[a]; i++)
        if (sw->v[a][i] == v) {
            out[a] = i;
            return true;
        }
    return false;
}

/* optimize.c's floors between siblings: offload N only adds stalls to offload 0, blocking
 * sends take at least the async ones' time, uniform recompute times as the default method, the
 * block method's time grows with its count; and the sharding axes leave the rest alone. */
static void
check_siblings(const struct spsim_sweep *sw, const struct point_rec *rec, uint64_t index)
{
    const struct point_rec *me = &rec[index];
    uint32_t d[SPSIM_AXIS_COUNT], e[SPSIM_AXIS_COUNT];
    digits_of_index(sw, index, d);
    const struct {
        int axis;
        int64_t base;
        bool applies;
    } floors[] = {
        {SPSIM_AXIS_OFFLOAD_LAYERS, 0,
         sw->v[SPSIM_AXIS_OFFLOAD_LAYERS][d[SPSIM_AXIS_OFFLOAD_LAYERS]] > 0},
        {SPSIM_AXIS_OVERLAP_P2P, 1, sw->v[SPSIM_AXIS_OVERLAP_P2P][d[SPSIM_AXIS_OVERLAP_P2P]] == 0},
        {SPSIM_AXIS_RECOMPUTE_METHOD, SPSIM_RECOMPUTE_METHOD_DEFAULT,
         sw->v[SPSIM_AXIS_RECOMPUTE_METHOD][d[SPSIM_AXIS_RECOMPUTE_METHOD]] ==
             SPSIM_RECOMPUTE_METHOD_UNIFORM},
    };
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(floors); i++) {
        if (!floors[i].applies || !with_value(sw, d, floors[i].axis, floors[i].base, e))
            continue;
        if (floors[i].axis == SPSIM_AXIS_RECOMPUTE_METHOD &&
            !with_value(sw, e, SPSIM_AXIS_RECOMPUTE_LAYERS, 0, e))
            continue;
        const struct point_rec *base = &rec[index_of(sw, e)];
        if (!isnan(base->pipe))
            ck_assert_msg(me->pipe * SLACK >= base->pipe, "%s: %g below its base's %g",
                          spsim_sweep_axis_name(floors[i].axis), me->pipe, base->pipe);
    }
    if (sw->v[SPSIM_AXIS_RECOMPUTE_METHOD][d[SPSIM_AXIS_RECOMPUTE_METHOD]] ==
            SPSIM_RECOMPUTE_METHOD_BLOCK &&
        d[SPSIM_AXIS_RECOMPUTE_LAYERS] > 0) {
        memcpy(e, d, sizeof(e));
        e[SPSIM_AXIS_RECOMPUTE_LAYERS]--; /* the axis is ascending */
        const struct point_rec *fewer = &rec[index_of(sw, e)];
        if (!isnan(fewer->pipe))
            ck_assert(me->pipe * SLACK >= fewer->pipe);
    }
    /* The pipeline's time does not see the sharding axes (the first sharding setting's stands
     * for the rest in optimize.c pipeline). */
    static const int sharding[] = {SPSIM_AXIS_ZERO, SPSIM_AXIS_DISTRIBUTED_OPTIMIZER,
                                   SPSIM_AXIS_GRAD_REDUCE_IN_FP32, SPSIM_AXIS_OVERLAP_GRAD_REDUCE,
                                   SPSIM_AXIS_OVERLAP_PARAM_GATHER};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(sharding); i++)
        for (uint32_t j = 0; j < sw->n[sharding[i]]; j++) {
            memcpy(e, d, sizeof(e));
            e[sharding[i]] = j;
            const struct point_rec *other = &rec[index_of(sw, e)];
            if (!isnan(other->pipe))
                ck_assert_msg(fabs(other->pipe - me->pipe) <= 1e-9 * me->pipe,
                              "%s changes the pipeline's time: %.17g vs %.17g",
                              spsim_sweep_axis_name(sharding[i]), other->pipe, me->pipe);
        }
}

static int
by_figures(const void *x, const void *y)
{
    const struct point_rec *a = *(const struct point_rec *const *)x,
                           *b = *(const struct point_rec *const *)y;
    if (a->iteration != b->iteration)
        return a->iteration < b->iteration ? -1 : 1;
    return a->bytes < b->bytes ? -1 : a->bytes > b->bytes;
}

/* Every alias evaluates as some point that is not one (its representative). */
static void
check_aliases(struct point_rec *rec, uint64_t n)
{
    struct point_rec **canon = calloc(n, sizeof(*canon));
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++)
        if (!rec[i].alias && !isnan(rec[i].pipe))
            canon[m++] = &rec[i];
    qsort(canon, m, sizeof(*canon), by_figures);
    for (uint64_t i = 0; i < n; i++) {
        if (!rec[i].alias || isnan(rec[i].iteration))
            continue;
        struct point_rec *key = &rec[i];
        ck_assert_msg(bsearch(&key, canon, m, sizeof(*canon), by_figures) != NULL,
                      "point %llu is an alias of no point of the space", (unsigned long long)i);
    }
    free(canon);
}

/* Every point of a space: the bounds of each valid one, then the floors between siblings and
 * the aliases' representatives. */
static void
bounds_hold(const struct axis_text *axes, size_t n, bool has_aliases)
{
    struct spsim_sweep *sw = make_space(axes, n);
    struct spsim_sweep_worker w;
    ck_assert_int_eq(spsim_sweep_worker_init(&w, sw, NULL), SPSIM_OK);
    uint64_t size = spsim_sweep_size(sw), valid = 0, aliases = 0;
    struct point_rec *rec = calloc(size, sizeof(*rec));
    for (uint64_t i = 0; i < size; i++) {
        uint32_t d[SPSIM_AXIS_COUNT];
        struct spsim_sweep_point pt;
        const struct spsim_layer_summary *le = NULL;
        rec[i].pipe = rec[i].iteration = NAN;
        digits_of_index(sw, i, d);
        spsim_sweep_point_of(sw, d, &pt);
        if (pt.par.dp == 0 || pt.invalid ||
            spsim_sweep_eval_digits(&w, d, 0, false, &pt, NULL) != SPSIM_OK)
            continue;
        rec[i].iteration = w.res.time.iteration_s;
        rec[i].bytes = w.res.memory.total_bytes;
        if ((rec[i].alias = spsim_opt_alias(sw, d, &pt))) {
            aliases++;
            continue;
        }
        struct spsim_result r = w.res;
        valid++;
        rec[i].pipe = r.time.iteration_s - r.time.dp_exposed_s - r.time.optimizer_s -
                      r.time.optimizer_host_exposed_s;
        ck_assert_int_eq(spsim_sweep_summary(&w, d, &pt, &le, NULL), SPSIM_OK);
        check_sharding_bound(&pt, &r, le);
        check_time_bounds(&w, d, &pt, &r, le);
        check_memory_bound(sw, &pt, &r, le);
    }
    /* enough points to mean something (nothing_fits_space has 92: Megatron-FSDP is refused
     * with pp 2) */
    ck_assert_uint_gt(valid, 80);
    ck_assert(has_aliases == (aliases > 0));
    for (uint64_t i = 0; i < size; i++)
        if (!isnan(rec[i].pipe))
            check_siblings(sw, rec, i);
    check_aliases(rec, size);
    free(rec);
    spsim_sweep_worker_free(&w);
    spsim_sweep_destroy(sw);
}

START_TEST(pipeline_space_bounds)
{
    bounds_hold(SPACE(pipeline_space), true);
}
END_TEST

START_TEST(memory_space_bounds)
{
    bounds_hold(SPACE(memory_space), true);
}
END_TEST

START_TEST(moe_space_bounds)
{
    bounds_hold(SPACE(moe_space), true);
}
END_TEST

START_TEST(mixed_space_bounds)
{
    bounds_hold(SPACE(mixed_space), false);
}
END_TEST

START_TEST(nothing_fits_bounds)
{
    bounds_hold(SPACE(nothing_fits_space), true);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("optimize");
    TCase *tc = tcase_create("search");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, pipeline_space_bounds);
    tcase_add_test(tc, memory_space_bounds);
    tcase_add_test(tc, moe_space_bounds);
    tcase_add_test(tc, mixed_space_bounds);
    tcase_add_test(tc, nothing_fits_bounds);
    tcase_add_test(tc, pipeline_space_answer);
    tcase_add_test(tc, memory_space_answer);
    tcase_add_test(tc, moe_space_answer);
    tcase_add_test(tc, mixed_space_answer);
    tcase_add_test(tc, userbuffers_space_answer);
    tcase_add_test(tc, offload_space_answer);
    tcase_add_test(tc, hsdp_space_answer);
    tcase_add_test(tc, nothing_fits_answer);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
