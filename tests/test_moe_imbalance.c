/*
 * Routing imbalance (src/engine/moe_imbalance.c), worked by hand: the load of one EP rank for
 * a router that picks each token's k distinct experts uniformly at random, its expected
 * maximum over the ep ranks, and what the most-loaded rank then does on the synthetic terms
 * profile (tests/data/terms/terms-hw.json, as tests/test_moe_terms.c: HBM 1 TB/s achieved,
 * NVLink busbw 50 GB/s, latencies 0). The closed forms are the hypergeometric and binomial
 * moments; E[max of n N(0, 1)] is taken from its published tables (Harter 1961, Biometrika
 * 48:151, "Expected values of normal order statistics": n = 4: 1.0294, n = 8: 1.4236), never
 * from the library.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/moe.h"
#include "testutil.h"

#define HBM           1e12 /* B/s */
#define NV            50e9 /* busbw, B/s */
#define EQ(got, want) ck_assert_double_eq_tol((got), (want), 1e-9 * fabs(want))

/* C(n, 2) */
static double
c2(double n)
{
    return n * (n - 1) / 2;
}

/*
 * E = 8 experts, k = 2, ep = 4 (S = 2 experts a rank), N = 1024 tokens. Per token the copies a
 * rank gets are hypergeometric: mean k·S/E = 1/2, variance k·(S/E)(1 − S/E)(E − k)/(E − 1) =
 * 2·(1/4)(3/4)(6/7) = 9/28; over N: μ = 512, σ² = 1024·9/28 = 329.14. A token reaches the rank
 * with q = 1 − C(6, 2)/C(8, 2) = 13/28; once per rank: mean N·q, variance N·q·(1 − q).
 */
START_TEST(small_case_moments)
{
    struct spsim_moe_load l;
    spsim_moe_load(8, 2, 4, 1024, 0, &l);
    const double N = 1024, q = 1 - c2(6) / c2(8), z4 = 1.0294;
    EQ(l.q, 13.0 / 28.0);
    EQ(l.q, q);
    EQ(l.mean, 512.0);
    EQ(l.var, N * 9.0 / 28.0);
    ck_assert_double_eq_tol(l.z, z4, 5e-5);
    /* The most-loaded rank: 1 + z·σ/μ = 1.03648; flex 1 + z·√(Nq(1 − q))/(Nq) = 1.03455. */
    ck_assert_double_eq_tol(l.factor, 1 + z4 * sqrt(N * 9.0 / 28.0) / 512.0, 1e-5);
    ck_assert_double_eq_tol(l.flex_factor, 1 + z4 * sqrt(N * q * (1 - q)) / (N * q), 1e-5);
    /* A capacity factor caps the load: 1.02 of the mean at most; one rank has no maximum. */
    spsim_moe_load(8, 2, 4, 1024, 1.02, &l);
    EQ(l.factor, 1.02);
    EQ(l.flex_factor, 1.02);
    spsim_moe_load(8, 2, 1, 1024, 0, &l);
    EQ(l.factor, 1.0);
}
END_TEST

START_TEST(expected_max_table)
{
    /* Harter 1961: n = 2: 1/√π = 0.5642, n = 4: 1.0294, n = 8: 1.4236, n = 100: 2.5076 */
    ck_assert_double_eq_tol(spsim_moe_expected_max(2), 1 / sqrt(3.14159265358979323846), 1e-9);
    ck_assert_double_eq_tol(spsim_moe_expected_max(4), 1.0294, 5e-5);
    ck_assert_double_eq_tol(spsim_moe_expected_max(8), 1.4236, 5e-5);
    ck_assert_double_eq_tol(spsim_moe_expected_max(100), 2.5076, 5e-5);
    ck_assert_double_eq(spsim_moe_expected_max(1), 0.0);
}
END_TEST

#define step testutil_step

static size_t
schedule(enum spsim_moe_routing routing, enum spsim_moe_dispatcher d,
         struct spsim_schedule_step *st)
{
    struct spsim_model_shape shape = {
        TESTUTIL_MOE_SHAPE,
    };
    struct spsim_model *m = testutil_model(&shape);
    char path[4096];
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    snprintf(path, sizeof(path), "%s/tests/data/terms/terms-hw.json", getenv("SPSIM_DATA_DIR"));
    ck_assert_msg(spsim_hardware_load(path, &hw, &err) == SPSIM_OK, "%s", err.message);
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.ep = 8;
    p.dp = 8;
    p.gbs = 8;
    p.moe_dispatcher = d;
    p.moe_routing = routing;
    size_t n = 0;
    ck_assert_msg(spsim_layer_schedule(m, hw, &p, st, SPSIM_MAX_SCHEDULE_STEPS, &n, &err) ==
                      SPSIM_OK,
                  "%s", err.message);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
    return n;
}

/* A weight gradient's bytes: the two inputs (rows × in, rows × out) and 8 B per weight. */
static double
wgrad_bytes_s(double rows, double in, double out, double batch)
{
    return (2.0 * rows * in + 2.0 * rows * out + 8.0 * batch * in * out) / HBM;
}

/*
 * tp 1, ep 8, dp 8, alltoall; h = 1024, E = 128, k = 8, f_e = 128: T = 1024 tokens a rank, the
 * N = ep·T = 8192 tokens reach a rank's S = 16 experts: μ = N·k/ep = 8192 copies (512 per
 * expert), σ² = N·k·(1/8)(7/8)(120/127) = 6772.9, z_8 = 1.4236: the most-loaded rank gets
 * 8192·(1 + 1.4236·82.30/8192) = 8309.2 copies, ⌈519.32⌉ = 520 per expert, 8320 rows. It
 * receives 8320·2h B in the dispatch (then 8320·4 B of probabilities) and 8320·2h in the combine,
 * over 8 ranks; its grouped GEMMs' weight gradients (bytes-bound, as in test_moe_terms) run on 8320
 * rows; the permute of its own 1024·8 copies stays at the mean.
 */
START_TEST(critical_rank_terms)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    const double h = 1024, fe = 128, loc = 16, rows = 16 * 520, own = 1024 * 8;
    const enum spsim_phase F = SPSIM_PHASE_FORWARD, B = SPSIM_PHASE_BACKWARD;
    const double sigma = sqrt(8192.0 * 8 * (1.0 / 8) * (7.0 / 8) * (120.0 / 127));
    ck_assert_double_eq(ceil(512 * (1 + 1.4236 * sigma / 8192)), 520);
    size_t n = schedule(SPSIM_MOE_ROUTING_RANDOM, SPSIM_MOE_ALLTOALL, st);
    const struct spsim_schedule_step *d = step(st, n, F, "dispatch all-to-all (EP)", "");
    ck_assert_uint_eq(d->message_bytes, (uint64_t)(rows * 2 * h));
    EQ(d->time_s, rows * 2 * h * 7 / 8 / NV);
    d = step(st, n, F, "dispatch all-to-all of the probabilities (EP)", "");
    ck_assert_uint_eq(d->message_bytes, (uint64_t)(rows * 4));
    EQ(step(st, n, B, "combine all-to-all (EP)", "")->time_s, rows * 2 * h * 7 / 8 / NV);
    EQ(step(st, n, B, "experts FC1 grouped GEMM", "wgrad")->time_s,
       wgrad_bytes_s(rows, h, 2 * fe, loc));
    EQ(step(st, n, B, "experts FC2 grouped GEMM", "wgrad")->time_s,
       wgrad_bytes_s(rows, fe, h, loc));
    EQ(step(st, n, F, "experts SwiGLU (× probabilities)", "forward")->time_s,
       (6 * rows * fe + 4 * rows) / HBM);
    EQ(step(st, n, F, "permute (token copies into expert order)", "forward")->time_s,
       4 * own * h / HBM);
    /* Balanced: the mean, 512 per expert (test_moe_terms' values). */
    n = schedule(SPSIM_MOE_ROUTING_BALANCED, SPSIM_MOE_ALLTOALL, st);
    EQ(step(st, n, B, "experts FC2 grouped GEMM", "wgrad")->time_s,
       wgrad_bytes_s(8192, fe, h, loc));
    ck_assert_uint_eq(step(st, n, F, "dispatch all-to-all (EP)", "")->message_bytes,
                      (uint64_t)(8192 * 2 * h));
}
END_TEST

/*
 * flex (DeepEP, the 8 ranks in one NVLink domain): a token reaches a rank with q = 1 −
 * C(112, 8)/C(128, 8) and is sent there once; the most-loaded rank receives the N = 8192
 * tokens' N·q times 1 + z_8·√(N·q·(1 − q))/(N·q), each in a 16-byte aligned DeepEP record of
 * 2h + 8 + 8k B = 2120 → 2128 B (moe_flex.c record_bytes); per source rank T·q·(n − 1) of
 * them, times that ratio.
 */
START_TEST(flex_critical_rank_bytes)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    double miss = 1, N = 8192;
    for (int i = 0; i < 8; i++)
        miss *= (112.0 - i) / (128.0 - i);
    double q = 1 - miss, load = 1 + 1.4236 * sqrt(N * q * (1 - q)) / (N * q);
    size_t n = schedule(SPSIM_MOE_ROUTING_RANDOM, SPSIM_MOE_FLEX, st);
    const struct spsim_schedule_step *d =
        step(st, n, SPSIM_PHASE_FORWARD, "flex dispatch (DeepEP: NVLink + RDMA)", "");
    ck_assert_double_eq_tol((double)d->message_bytes, 1024 * q * 7 * load * 2128, 200);
    n = schedule(SPSIM_MOE_ROUTING_BALANCED, SPSIM_MOE_FLEX, st);
    d = step(st, n, SPSIM_PHASE_FORWARD, "flex dispatch (DeepEP: NVLink + RDMA)", "");
    ck_assert_double_eq_tol((double)d->message_bytes, 1024 * q * 7 * 2128, 1);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("moe_imbalance");
    TCase *tc = tcase_create("moe_imbalance");
    tcase_add_test(tc, small_case_moments);
    tcase_add_test(tc, expected_max_table);
    tcase_add_test(tc, critical_rank_terms);
    tcase_add_test(tc, flex_critical_rank_bytes);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
