/*
 * The latency-bandwidth fit on data generated here from known α, hop and B: the weighted least
 * squares must give them back. The generating model is time = α + steps·hop + wire/B with the
 * ring steps and wire fractions of nccl-tests.md §1.1 and §1.5: AllReduce 2(n−1) steps and
 * 2(n−1)/n·S bytes, AllGather n−1 steps and (n−1)/n·S.
 */
#include <gsl/gsl_errno.h>
#include <math.h>

#include "calibrate/calib_fit.h"
#include "testutil.h"

#define MAXP 256

/* Points of `op` on n ranks for sizes 8 B .. 8 GiB (×4), from alpha, hop and B. */
static size_t
generate(struct spsim_fit_point *p, size_t at, enum spsim_coll_op op, uint32_t n, double alpha,
         double hop, double B)
{
    double steps = op == SPSIM_COLL_ALL_REDUCE ? 2.0 * (n - 1) : n - 1;
    double frac = op == SPSIM_COLL_ALL_REDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
    for (double size = 8; size <= 8589934592.0; size *= 4) {
        p[at] = (struct spsim_fit_point){op, steps, frac * size, 0, 0};
        p[at].time_s = alpha + steps * hop + p[at].wire_bytes / B;
        at++;
    }
    return at;
}

START_TEST(recovers_alpha_hop_and_bandwidths)
{
    /* Known values in the range of the shipped H100 profile: base 6.6 µs, hop 1.357 µs, AllReduce
     * busbw 480 GB/s (NVLS), ring busbw 370 GB/s (hardware/dgx-h100.json). */
    static struct spsim_fit_point p[MAXP];
    size_t n = 0;
    for (uint32_t ranks = 2; ranks <= 8; ranks *= 2) {
        n = generate(p, n, SPSIM_COLL_ALL_REDUCE, ranks, 6.6e-6, 1.357e-6, 480e9);
        n = generate(p, n, SPSIM_COLL_ALL_GATHER, ranks, 6.6e-6, 1.357e-6, 370e9);
    }
    struct spsim_fit_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_latbw_fit(p, n, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert(r.hop_fitted);
    ck_assert(!r.alpha_zeroed && !r.hop_zeroed);
    ck_assert_double_eq_tol(r.alpha_s, 6.6e-6, 1e-12);
    ck_assert_double_eq_tol(r.hop_s, 1.357e-6, 1e-13);
    ck_assert_double_eq_tol(r.busbw_Bps[SPSIM_COLL_ALL_REDUCE], 480e9, 480e9 * 1e-8);
    ck_assert_double_eq_tol(r.busbw_Bps[SPSIM_COLL_ALL_GATHER], 370e9, 370e9 * 1e-8);
    ck_assert_double_eq(r.busbw_Bps[SPSIM_COLL_REDUCE_SCATTER], 0);
    for (size_t i = 0; i < n; i++)
        ck_assert_double_eq_tol(spsim_latbw_eval(&r, &p[i]), p[i].time_s, p[i].time_s * 1e-8);
}
END_TEST

START_TEST(one_step_count_fits_the_whole_latency)
{
    /* One rank count and one collective: α and steps·hop are one column. 8 ranks AllReduce:
     * 14 steps, α + 14·hop = 6.6 + 14 × 2.655 = 43.77 µs (the A100 profile's numbers). */
    static struct spsim_fit_point p[MAXP];
    size_t n = generate(p, 0, SPSIM_COLL_ALL_REDUCE, 8, 6.6e-6, 2.655e-6, 232e9);
    struct spsim_fit_result r;
    ck_assert_int_eq(spsim_latbw_fit(p, n, &r, NULL), SPSIM_OK);
    ck_assert(!r.hop_fitted);
    ck_assert_double_eq(r.hop_s, 0);
    ck_assert_double_eq_tol(r.alpha_s, 6.6e-6 + 14 * 2.655e-6, 1e-12);
    ck_assert_double_eq_tol(r.busbw_Bps[SPSIM_COLL_ALL_REDUCE], 232e9, 232e9 * 1e-8);
}
END_TEST

START_TEST(negative_alpha_is_fixed_at_zero)
{
    /* time = wire/B − 3 µs would need α = −3 µs; with α held at 0 the fit is the weighted
     * through-origin line t = c·x, whose least-squares solution is c = Σ w·x·t / Σ w·x² with
     * w = 1/t² (x in GB, t in µs, so B = 1e15/c B/s). */
    static struct spsim_fit_point p[MAXP];
    size_t n = generate(p, 0, SPSIM_COLL_ALL_GATHER, 4, 0, 0, 100e9);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        p[i].time_s -= 3e-6;
        if (p[i].time_s > 0)
            p[m++] = p[i];
    }
    struct spsim_fit_result r;
    ck_assert_int_eq(spsim_latbw_fit(p, m, &r, NULL), SPSIM_OK);
    ck_assert(r.alpha_zeroed);
    ck_assert_double_eq(r.alpha_s, 0);
    double sxy = 0, sxx = 0;
    for (size_t i = 0; i < m; i++) {
        double x = p[i].wire_bytes * 1e-9, t = p[i].time_s * 1e6, w = 1 / (t * t);
        sxy += w * x * t;
        sxx += w * x * x;
    }
    double B = 1e15 / (sxy / sxx);
    ck_assert_double_eq_tol(r.busbw_Bps[SPSIM_COLL_ALL_GATHER], B, B * 1e-9);
}
END_TEST

START_TEST(offset_is_taken_out)
{
    /* A hierarchical ring: 12 NVLink hops of 1 µs known, 2 network steps of 5 µs and 8 µs base
     * to find. Two rank counts give two inter-domain step counts (AllReduce 2·(domains − 1)). */
    static struct spsim_fit_point p[MAXP];
    size_t n = 0;
    for (double inter = 2; inter <= 6; inter += 4)
        for (double size = 1024; size <= 1 << 30; size *= 8) {
            p[n] = (struct spsim_fit_point){SPSIM_COLL_ALL_REDUCE, inter, 1.75 * size, 12e-6, 0};
            p[n].time_s = 8e-6 + inter * 5e-6 + p[n].wire_bytes / 150e9 + 12e-6;
            n++;
        }
    struct spsim_fit_result r;
    ck_assert_int_eq(spsim_latbw_fit(p, n, &r, NULL), SPSIM_OK);
    ck_assert_double_eq_tol(r.alpha_s, 8e-6, 1e-12);
    ck_assert_double_eq_tol(r.hop_s, 5e-6, 1e-12);
    ck_assert_double_eq_tol(r.busbw_Bps[SPSIM_COLL_ALL_REDUCE], 150e9, 150e9 * 1e-8);
}
END_TEST

START_TEST(refused_inputs)
{
    static struct spsim_fit_point p[4];
    struct spsim_fit_result r;
    /* Times falling with size: 1/B would be negative. */
    p[0] = (struct spsim_fit_point){SPSIM_COLL_ALL_REDUCE, 14, 1e3, 0, 100e-6};
    p[1] = (struct spsim_fit_point){SPSIM_COLL_ALL_REDUCE, 14, 1e6, 0, 90e-6};
    p[2] = (struct spsim_fit_point){SPSIM_COLL_ALL_REDUCE, 14, 1e9, 0, 10e-6};
    ck_assert_int_eq(spsim_latbw_fit(p, 3, &r, NULL), SPSIM_ENUMERIC);
    /* One point for two unknowns (α and 1/B). */
    ck_assert_int_eq(spsim_latbw_fit(p, 1, &r, NULL), SPSIM_EINVAL);
    /* Non-finite or non-positive measurements. */
    p[1].time_s = (double)NAN;
    ck_assert_int_eq(spsim_latbw_fit(p, 3, &r, NULL), SPSIM_EINVAL);
    p[1].time_s = 0;
    ck_assert_int_eq(spsim_latbw_fit(p, 3, &r, NULL), SPSIM_EINVAL);
    p[1].time_s = 90e-6;
    p[1].wire_bytes = -1;
    ck_assert_int_eq(spsim_latbw_fit(p, 3, &r, NULL), SPSIM_EINVAL);
    ck_assert_int_eq(spsim_latbw_fit(NULL, 3, &r, NULL), SPSIM_EINVAL);
}
END_TEST

static Suite *
calib_fit_suite(void)
{
    Suite *s = suite_create("calib_fit");
    TCase *known = tcase_create("known parameters");
    tcase_add_test(known, recovers_alpha_hop_and_bandwidths);
    tcase_add_test(known, one_step_count_fits_the_whole_latency);
    tcase_add_test(known, negative_alpha_is_fixed_at_zero);
    tcase_add_test(known, offset_is_taken_out);
    suite_add_tcase(s, known);
    TCase *bad = tcase_create("refused");
    tcase_add_test(bad, refused_inputs);
    suite_add_tcase(s, bad);
    return s;
}

int
main(void)
{
    gsl_set_error_handler_off();
    return testutil_run(calib_fit_suite());
}
