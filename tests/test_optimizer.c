/*
 * The precision-aware optimizer (Megatron --use-precision-aware-optimizer with TE's FusedAdam),
 * worked by hand from Megatron-Core's and TE's code, independently of engine/optimizer.c:
 *
 * Bytes per parameter the distributed optimizer holds, sharded over D = dp·cp
 * (distrib_optimizer.py _build_model_and_main_param_groups, fused_adam.py):
 * - plain Adam: fp32 main weight, exp_avg, exp_avg_sq (12), + an fp32 copy of 16-bit gradients;
 * - precision-aware with bf16 training: TE holds the master weights; with fp32 master and bf16
 *   parameters only the int16 remainder (store_param_remainders, default) = 2, or 2 for an fp16
 *   master; the moments in their dtypes (fp32 4, bf16/fp16 2, fp8 1); no gradient copy
 *   (decoupled_grad is the buffer's shard);
 * - precision-aware with a current-scaling FP8 recipe and fp32 master: Megatron keeps its fp32
 *   main weights and the fp32 gradient copy, TE only the moments.
 *
 * Step HBM bytes (the gradient norm reads the grads, zero_grad clears them: 2·g·P; the Adam part
 * per parameter of the 1/D shard; Megatron's main-to-model copy 2·P where it runs):
 * - plain, fp32 grads: 4 + 24 (master, m, v read and written), copy 2: 4P + 28P/D + 2P + 4P;
 * - TE path: grad g, master remainder 2 + 2, moments fp32 8 each (bf16 pair fused: 4 each;
 *   fp8 alone: unscale 1 + 4, kernel 8, aminmax 4, quantize 4 + 1 = 22; bf16 alone: 2 + 4, 8,
 *   4 + 2 + 2 + 2 = 24), bf16 parameter read and written 4; no main-to-model copy.
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "spsim/spsim.h"
#include "testutil.h"

/* llama3-8b on dgx-h100, tp 2, dp 4, distributed optimizer: D = 4. */
static struct spsim_parallel
base(void)
{
    struct spsim_parallel p = testutil_config(2, 1, 1, 1, 32, true, SPSIM_RECOMPUTE_SELECTIVE);
    p.dp = 4;
    p.distributed_optimizer = true;
    return p;
}

static const struct {
    bool pao;
    enum spsim_opt_dtype grads, master, m, v;
    enum spsim_dtype dtype;
    enum spsim_fp8_recipe recipe;
    int grad_fp32;      /* -1 default, 0 --grad-reduce-in-bf16 */
    uint64_t state;     /* bytes per parameter before sharding, by hand (above) */
    uint64_t grad;      /* gradient buffer bytes per parameter */
    double shard, full; /* step bytes per shard parameter and per parameter (copy) */
} cases[] = {
    /* plain Adam: 12, fp32 grads; step 4 + 24, copy 2 */
    {false, SPSIM_OPT_FP32, SPSIM_OPT_FP32, SPSIM_OPT_FP32, SPSIM_OPT_FP32, SPSIM_DTYPE_BF16,
     SPSIM_FP8_DELAYED, -1, 12, 4, 28, 2},
    /* plain Adam, bf16 grads: + the fp32 copy (16); step: the copy reads 2 and writes 4, Adam
     * reads the fp32 copy 4 and the states 24: 34 */
    {false, SPSIM_OPT_FP32, SPSIM_OPT_FP32, SPSIM_OPT_FP32, SPSIM_OPT_FP32, SPSIM_DTYPE_BF16,
     SPSIM_FP8_DELAYED, 0, 16, 2, 34, 2},
    /* PAO, all fp32: remainder 2 + 4 + 4 = 10; step 4 + 4 + 8 + 8 + 4 = 28, no copy */
    {true, SPSIM_OPT_FP32, SPSIM_OPT_FP32, SPSIM_OPT_FP32, SPSIM_OPT_FP32, SPSIM_DTYPE_BF16,
     SPSIM_FP8_DELAYED, -1, 10, 4, 28, 0},
    /* PAO, bf16 grads and bf16 moments: 2 + 2 + 2 = 6; step 2 + 4 + 4 + 4 + 4 = 18 */
    {true, SPSIM_OPT_BF16, SPSIM_OPT_FP32, SPSIM_OPT_BF16, SPSIM_OPT_BF16, SPSIM_DTYPE_BF16,
     SPSIM_FP8_DELAYED, -1, 6, 2, 18, 0},
    /* PAO, bf16 grads, fp8 m, bf16 v (not fused): 2 + 1 + 2 = 5; step 2 + 4 + 22 + 24 + 4 = 56 */
    {true, SPSIM_OPT_BF16, SPSIM_OPT_FP32, SPSIM_OPT_FP8, SPSIM_OPT_BF16, SPSIM_DTYPE_BF16,
     SPSIM_FP8_DELAYED, -1, 5, 2, 56, 0},
    /* PAO, fp16 master (TE): 2 + 4 + 4 = 10; master step as an fp16 state: .float() 2 + 4, scale
     * 4 + 4, kernel 8, aminmax 4, rescale 4 + 4, copy 4 + 2 = 40: 4 + 40 + 8 + 8 + 4 = 64 */
    {true, SPSIM_OPT_FP32, SPSIM_OPT_FP16, SPSIM_OPT_FP32, SPSIM_OPT_FP32, SPSIM_DTYPE_BF16,
     SPSIM_FP8_DELAYED, -1, 10, 4, 64, 0},
    /* PAO with FP8 current scaling, fp32 master: Megatron's path, fp32 master 4 + bf16 moments
     * 2 + 2, bf16 grads copied to fp32 (4) = 12; step 2 + 4 + 4 + 8 + 4 + 4 = 26, copy 2 */
    {true, SPSIM_OPT_BF16, SPSIM_OPT_FP32, SPSIM_OPT_BF16, SPSIM_OPT_BF16, SPSIM_DTYPE_FP8,
     SPSIM_FP8_CURRENT, -1, 12, 2, 26, 2},
};

START_TEST(optimizer_state_and_step)
{
    struct spsim_parallel p = base();
    p.precision_aware_optimizer = cases[_i].pao;
    p.main_grads_dtype = cases[_i].grads;
    p.main_params_dtype = cases[_i].master;
    p.exp_avg_dtype = cases[_i].m;
    p.exp_avg_sq_dtype = cases[_i].v;
    p.dtype = cases[_i].dtype;
    p.fp8_recipe = cases[_i].recipe;
    p.grad_reduce_in_fp32 = cases[_i].grad_fp32;
    struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    uint64_t P = r.memory.parameters_per_gpu, D = 4;
    ck_assert_uint_eq(r.memory.optimizer_bytes, (P * cases[_i].state + D - 1) / D);
    ck_assert_uint_eq(r.memory.gradients_bytes, P * cases[_i].grad);
    /* dgx-h100's measured HBM Triad, 2970 GB/s (hardware/dgx-h100.json) */
    double g = (double)cases[_i].grad, Pd = (double)P;
    double bytes = g * Pd + cases[_i].shard * Pd / 4.0 + cases[_i].full * Pd + g * Pd;
    ck_assert_double_eq_tol(r.time.optimizer_s, bytes / 2970e9, 1e-12);
}
END_TEST

/* Megatron's rules, in its words (optimizer_config.py, arguments.py, optimizer/__init__.py). */
START_TEST(optimizer_rules)
{
    struct spsim_parallel p = base();
    p.exp_avg_dtype = SPSIM_OPT_BF16;
    testutil_expect_rule("llama3-8b", &p,
                         "exp_avg_dtype can only be fp32 when not using precision-aware optimizer");
    p = base();
    p.precision_aware_optimizer = true;
    p.distributed_optimizer = false;
    testutil_expect_rule("llama3-8b", &p,
                         "--use-precision-aware-optimizer only supported with distributed "
                         "optimizer");
    p = base();
    p.precision_aware_optimizer = true;
    p.main_grads_dtype = SPSIM_OPT_BF16;
    p.grad_reduce_in_fp32 = 1;
    testutil_expect_rule("llama3-8b", &p,
                         "--main-grads-dtype can only be fp32 when "
                         "--accumulate-allreduce-grads-in-fp32 is set");
    p = base();
    p.precision_aware_optimizer = true;
    p.main_params_dtype = SPSIM_OPT_BF16;
    testutil_expect_rule("llama3-8b", &p, "must be fp32 or fp16 (--main-params-dtype)");
}
END_TEST

static Suite *
optimizer_suite(void)
{
    Suite *s = suite_create("optimizer");
    TCase *tc = tcase_create("precision_aware");
    tcase_add_loop_test(tc, optimizer_state_and_step, 0, sizeof(cases) / sizeof(cases[0]));
    tcase_add_test(tc, optimizer_rules);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(optimizer_suite());
}
