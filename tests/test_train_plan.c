/*
 * Time and cost to train (spsim_train_plan_make), worked by hand: a run of N tokens takes
 * ceil(N / (gbs·seq)) whole iterations, wall = iterations × time.iteration_s, GPU-hours =
 * GPUs × wall / 3600, energy = GPUs × gpu.board_power_W × wall / 3.6e6 kWh (dgx-h100: 700 W,
 * hardware/dgx-h100.json), cost = GPU-hours × price. A profile whose board power is marked
 * unsourced (hgx-h800) gives no energy and says why.
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "spsim/spsim.h"
#include "testutil.h"

/* llama3-8b, tp 2, dp 4, gbs 32 at its 8192-token sequences: 262,144 tokens an iteration. */
static struct spsim_result
run(const char *hw)
{
    struct spsim_parallel p = testutil_config(2, 1, 1, 1, 32, true, SPSIM_RECOMPUTE_SELECTIVE);
    p.dp = 4;
    return testutil_evaluate_config("llama3-8b", hw, &p);
}

START_TEST(train_plan_by_hand)
{
    struct spsim_result r = run("dgx-h100");
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_train_plan t;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_train_plan_make(&r, hw, 1e9, 2.5, &t, &err), SPSIM_OK);
    /* 1e9 / 262144 = 3814.7: 3815 iterations */
    ck_assert_double_eq(t.tokens_per_iteration, 262144);
    ck_assert_uint_eq(t.iterations, 3815);
    double wall = 3815 * r.time.iteration_s;
    ck_assert_double_eq_tol(t.wall_s, wall, 1e-9 * wall);
    ck_assert_double_eq_tol(t.wall_days, wall / 86400, 1e-9 * wall);
    ck_assert_double_eq_tol(t.gpu_hours, 8 * wall / 3600, 1e-9 * wall);
    ck_assert(t.energy_available);
    ck_assert_ptr_null(t.energy_refused);
    ck_assert_double_eq_tol(t.energy_kWh, 8 * 700 * wall / 3.6e6, 1e-9 * wall);
    ck_assert_double_eq_tol(t.cost, 8 * wall / 3600 * 2.5, 1e-9 * wall);
    /* A whole number of iterations: exactly 10 iterations' tokens is 10 iterations. */
    ck_assert_int_eq(spsim_train_plan_make(&r, hw, 10 * 262144.0, 0, &t, &err), SPSIM_OK);
    ck_assert_uint_eq(t.iterations, 10);
    ck_assert_double_eq(t.cost, 0);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(train_plan_unsourced_power)
{
    struct spsim_result r = run("hgx-h800");
    struct spsim_hardware *hw = testutil_hardware("hgx-h800");
    struct spsim_train_plan t;
    ck_assert_int_eq(spsim_train_plan_make(&r, hw, 1e9, 2.5, &t, NULL), SPSIM_OK);
    ck_assert(!t.energy_available);
    ck_assert_double_eq(t.energy_kWh, 0);
    ck_assert_ptr_nonnull(t.energy_refused);
    ck_assert_ptr_nonnull(strstr(t.energy_refused, "H800's board power"));
    ck_assert_double_eq_tol(t.gpu_hours, 8 * 3815 * r.time.iteration_s / 3600, 1e-6);
    spsim_hardware_destroy(hw);
}
END_TEST

/* Bad arguments: SPSIM_EINVAL naming the argument, the output untouched. */
START_TEST(train_plan_bad_input)
{
    struct spsim_result r = run("dgx-h100");
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_train_plan t;
    memset(&t, 0x5a, sizeof(t));
    struct spsim_train_plan canary = t;
    struct spsim_error err = {0};
    const double tokens[] = {0, -1, NAN, INFINITY, 2e18};
    for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
        ck_assert_int_eq(spsim_train_plan_make(&r, hw, tokens[i], 1, &t, &err), SPSIM_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "train_tokens"));
    }
    const double prices[] = {-1, NAN, INFINITY};
    for (size_t i = 0; i < sizeof(prices) / sizeof(prices[0]); i++) {
        ck_assert_int_eq(spsim_train_plan_make(&r, hw, 1e9, prices[i], &t, &err), SPSIM_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "gpu_hour_price"));
    }
    ck_assert_int_eq(spsim_train_plan_make(NULL, hw, 1e9, 1, &t, &err), SPSIM_EINVAL);
    ck_assert_int_eq(memcmp(&t, &canary, sizeof(t)), 0);
    spsim_hardware_destroy(hw);
}
END_TEST

static Suite *
train_plan_suite(void)
{
    Suite *s = suite_create("train_plan");
    TCase *tc = tcase_create("train_plan");
    tcase_add_test(tc, train_plan_by_hand);
    tcase_add_test(tc, train_plan_unsourced_power);
    tcase_add_test(tc, train_plan_bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(train_plan_suite());
}
