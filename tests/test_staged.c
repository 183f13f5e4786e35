/*
 * The sweep's staged composition against spsim_evaluate, point by point: a sweep reuses what
 * consecutive points share (the layer summary while only non-layer axes move, the critical
 * stage, the memory report and the data-parallel terms through the composition's memos, each
 * keyed by what it reads). Every row of these sweeps must be, byte for byte, the row of
 * spsim_evaluate() on the same configuration, which composes from scratch without a memo; and
 * the sweep's valid points must be exactly those spsim_evaluate accepts (the sweep counts runs
 * of points that fail alike without evaluating them). The spaces move the
 * inner axes (batch, sharding, overlaps, dtype, recompute method, offload) of MoE, MLA, CP and
 * FP8 configurations, where a key that missed an input would show.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

struct text {
    char *data;
    size_t len, cap;
};

static int
append(void *cookie, const char *data, size_t len)
{
    struct text *t = cookie;
    if (t->len + len + 1 > t->cap) {
        t->cap = (t->len + len + 1) * 2;
        t->data = realloc(t->data, t->cap);
        ck_assert_ptr_nonnull(t->data);
    }
    memcpy(t->data + t->len, data, len);
    t->len += len;
    t->data[t->len] = '\0';
    return 0;
}

/* Axes given as "name=values" pairs, e.g. {"model=llama3-8b", "tp=1,2", NULL}. */
static struct spsim_sweep *
make_sweep(const char *const *axes)
{
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_sweep *sw = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_sweep_spec_create(&spec, &err), SPSIM_OK);
    for (size_t i = 0; axes[i]; i++) {
        char name[64];
        const char *eq = strchr(axes[i], '=');
        ck_assert_ptr_nonnull(eq);
        snprintf(name, sizeof(name), "%.*s", (int)(eq - axes[i]), axes[i]);
        int axis = spsim_sweep_axis_from_name(name);
        ck_assert_msg(axis >= 0, "axis %s", name);
        ck_assert_msg(spsim_sweep_spec_parse(spec, (enum spsim_sweep_axis)axis, eq + 1, "test",
                                             &err) == SPSIM_OK,
                      "%s", err.message);
    }
    ck_assert_msg(spsim_sweep_create(spec, &sw, &err) == SPSIM_OK, "%s", err.message);
    spsim_sweep_spec_destroy(spec);
    return sw;
}

/* Every row of the sweep (one thread, in point order) is spsim_evaluate's row of its point. */
static void
rows_equal_evaluate(const char *const *axes, uint64_t min_valid)
{
    struct spsim_sweep *sw = make_sweep(axes);
    struct spsim_sweep_options opt;
    struct spsim_sweep_stats stats;
    struct spsim_error err = {0};
    struct text csv = {0};
    spsim_sweep_options_defaults(&opt);
    opt.threads = 1;
    opt.header = false;
    opt.write = append;
    opt.cookie = &csv;
    ck_assert_msg(spsim_sweep_run(sw, &opt, &stats, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_ge(stats.valid, min_valid);
    static char row[SPSIM_ROW_MAX + 4096];
    static struct spsim_result res;
    const char *at = csv.data ? csv.data : "";
    uint64_t valid = 0;
    for (uint64_t i = 0; i < spsim_sweep_size(sw); i++) {
        struct spsim_sweep_point pt;
        if (spsim_sweep_point_at(sw, i, &pt, NULL) != SPSIM_OK ||
            spsim_evaluate(pt.model, pt.hw, &pt.par, &res, NULL) != SPSIM_OK)
            continue;
        size_t n =
            spsim_row_format(SPSIM_ROW_CSV, pt.model_name, pt.hw_name, &res, row, sizeof(row));
        ck_assert_uint_gt(n, 0);
        const char *end = strchr(at, '\n');
        ck_assert_msg(end != NULL, "point %llu: valid for spsim_evaluate, missing in the sweep",
                      (unsigned long long)i);
        ck_assert_msg((size_t)(end + 1 - at) == n && memcmp(at, row, n) == 0,
                      "point %llu: the sweep's row differs from spsim_evaluate's:\n%.*s\n%s",
                      (unsigned long long)i, (int)(end - at), at, row);
        at = end + 1;
        valid++;
    }
    ck_assert_msg(*at == '\0', "the sweep has rows spsim_evaluate refuses");
    ck_assert_uint_eq(valid, stats.valid);
    free(csv.data);
    spsim_sweep_destroy(sw);
}

START_TEST(dense_inner_axes)
{
    /* The benchmark's shape of space: batch, sharding and overlaps innermost, FP8 recipes. */
    static const char *const axes[] = {"model=llama3-8b",
                                       "hw=dgx-h100",
                                       "tp=1,2",
                                       "pp=1,2",
                                       "dp=1,4",
                                       "vpp=1,2",
                                       "sp=on,off",
                                       "recompute=none,full",
                                       "mbs=1,2",
                                       "gbs=8..64:8",
                                       "distributed_optimizer=on,off",
                                       "overlap_grad_reduce=on,off",
                                       "dtype=bf16,fp8",
                                       "fp8_recipe=delayed,current",
                                       "zero=0,3",
                                       "overlap_param_gather=on,off",
                                       NULL};
    rows_equal_evaluate(axes, 1000);
}
END_TEST

START_TEST(moe_mla_inner_axes)
{
    static const char *const axes[] = {"model=deepseek-v3,mixtral-8x7b",
                                       "hw=dgx-h100",
                                       "tp=1,2",
                                       "pp=1,2",
                                       "dp=8,16",
                                       "ep=4,8",
                                       "gbs=256,512",
                                       "mbs=1,2",
                                       "distributed_optimizer=on,off",
                                       "overlap_grad_reduce=on,off",
                                       "zero=0,1,3",
                                       "moe_dispatcher=allgather,alltoall",
                                       NULL};
    rows_equal_evaluate(axes, 100);
}
END_TEST

START_TEST(cp_recompute_offload_inner_axes)
{
    static const char *const axes[] = {"model=llama3-70b",
                                       "hw=dgx-h100",
                                       "tp=2,8",
                                       "pp=1,4",
                                       "cp=1,4",
                                       "dp=1,2",
                                       "seq=8192",
                                       "recompute=none,full",
                                       "gbs=8,16,64",
                                       "distributed_optimizer=on,off",
                                       "overlap_grad_reduce=on,off",
                                       "cp_comm_type=p2p,a2a",
                                       "grad_reduce_in_fp32=on,off",
                                       "recompute_method=default,uniform,block",
                                       "recompute_layers=0,2",
                                       "offload_layers=0,4",
                                       "pp_split=even,account",
                                       NULL};
    rows_equal_evaluate(axes, 300);
}
END_TEST

START_TEST(batch_optimizer_overlap_innermost)
{
    /* gbs, distributed_optimizer and overlap_grad_reduce innermost: a point they alone moved
     * to from one that passed is checked for their rules only (spsim_parallel_recheck_batch),
     * so each rule must still refuse right after a point that passed. Without
     * --overlap-param-gather every optimizer and overlap setting passes and the batch rules
     * refuse: mbs·dp not dividing gbs, and interleaving's micro-batch count (M = gbs/(mbs·dp)
     * in [pp, ...] with M mod pp 0 or >= pp, schedules.py: at pp 2, mbs·dp 4, gbs 12 after 8).
     * With it, arguments.py refuses it without the distributed optimizer (zero 0) and without
     * --overlap-grad-reduce, the passing point (on, on) last before the next batch. */
    static const char *const batch[] = {"model=llama3-8b",
                                        "hw=dgx-h100",
                                        "tp=1,2",
                                        "pp=2,4",
                                        "dp=1,2,4",
                                        "vpp=1,2",
                                        "mbs=1,2",
                                        "gbs=4..48:4",
                                        "distributed_optimizer=on,off",
                                        "overlap_grad_reduce=on,off",
                                        NULL};
    static const char *const sharding[] = {"model=llama3-8b",
                                           "hw=dgx-h100",
                                           "tp=1,2",
                                           "pp=2",
                                           "dp=2",
                                           "vpp=1,2",
                                           "dtype=fp8",
                                           "overlap_param_gather=on",
                                           "gbs=8..32:8",
                                           "distributed_optimizer=off,on",
                                           "overlap_grad_reduce=off,on",
                                           NULL};
    rows_equal_evaluate(batch, 300);
    rows_equal_evaluate(sharding, 10);
}
END_TEST

START_TEST(optimizer_host_stage_axes)
{
    /* The optimizer step's host counts (engine/opt_host.c) are remembered by the axes they read:
     * the model, the stage plan (pp, vpp, split), ep, the sharding and the gradient dtype, and
     * dp only where the optimizer is sharded. Here dp, the sharding and the split move inside
     * the stage plan's axes, the models share layer counts (llama2-7b and llama3-8b, 32 each),
     * and the MoE and hybrid ones are split evenly (remembered) and unevenly (counted afresh):
     * a key word left out reuses another configuration's tensor counts and a row differs. */
    static const char *const dense[] = {"model=llama2-7b,llama3-8b",
                                        "hw=dgx-h100",
                                        "tp=1,2",
                                        "pp=1,2,4",
                                        "dp=1,2,8",
                                        "vpp=1,2",
                                        "pp_split=even,account,balanced",
                                        "gbs=32,64",
                                        "distributed_optimizer=on,off",
                                        "zero=0,1,3",
                                        "grad_reduce_in_fp32=on,off",
                                        NULL};
    static const char *const moe[] = {
        "model=mixtral-8x7b,deepseek-v3,nemotron-3-nano,nemotron-h-8b",
        "hw=dgx-h100",
        "tp=1,2",
        "pp=1,2,3,4",
        "dp=2,4,8",
        "ep=1,2,4",
        "pp_split=even,account",
        "gbs=64,128",
        "distributed_optimizer=on,off",
        "zero=0,1",
        NULL};
    rows_equal_evaluate(dense, 1000);
    rows_equal_evaluate(moe, 400);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("staged");
    TCase *tc = tcase_create("rows");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, dense_inner_axes);
    tcase_add_test(tc, moe_mla_inner_axes);
    tcase_add_test(tc, cp_recompute_offload_inner_axes);
    tcase_add_test(tc, batch_optimizer_overlap_innermost);
    tcase_add_test(tc, optimizer_host_stage_axes);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
