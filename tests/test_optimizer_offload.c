/*
 * The optimizer's CPU offload (--optimizer-cpu-offload, --optimizer-offload-fraction,
 * --overlap-cpu-optimizer-d2h-h2d), worked by hand from Megatron-Core's HybridDeviceOptimizer
 * (megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py @d98e8a64, built by
 * optimizer/__init__.py with param_update_in_fp32=True over the distributed optimizer's shard),
 * independently of engine/memory.c and dp_time.c:
 *
 * llama3-8b on dgx-h100, tp 2, dp 4 (D = 4), the precision-aware optimizer (Megatron requires
 * it), fraction f of the shard's P/D parameters offloaded:
 * - GPU: the kept parameters' fp32 copy (4) and FusedAdam's fp32 moments (8): 12 (1 − f) P / D;
 * - host (pinned): the offloaded ones' fp32 copy (4), torch AdamW's moments (8) and the fp32
 *   gradient buffer (4): 16 f P / D.
 * Step, Ps = P/D: the gradient norm and zero_grad 2·g·P of HBM; GPU (1 − f) Ps (cast + 28 + 6)
 *   (cast: 16-bit gradients to fp32, g + 4; FusedAdam 4 + 24; the bf16 copy-back 4 + 2); D2H
 *   f Ps · 4 B (fp32 gradients into the fp32 host buffer, hybrid_optimizer.py:108-114; 16-bit
 *   ones refused: where PyTorch's copy_ converts them is unsourced here); the CPU's AdamW
 *   f Ps · 28 B at the host's memory bandwidth; H2D f Ps · 2 B (bf16). Serial:
 *   d2h + max(gpu, cpu) + h2d; overlapped per parameter: max of the four.
 * dgx-h100: HBM 2970 GB/s, D2H 52, H2D 51 GB/s (hardware/dgx-h100.json host_link); the CPU's
 * memory bandwidth has no sourced figure, so this test's copy of the profile says 100 GB/s.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spsim/spsim.h"
#include "testutil.h"

static struct spsim_hardware *
hw_with_cpu(void)
{
    char path[4096];
    const char *text = testutil_hardware_file_text("dgx-h100", path, sizeof(path));
    const char *at = strstr(text, "\"host_link\": {");
    ck_assert_ptr_nonnull(at);
    static char json[1 << 16];
    size_t head = (size_t)(at - text) + strlen("\"host_link\": {");
    snprintf(json, sizeof(json),
             "%.*s\"cpu_memory_GBps\": {\"value\": 100, \"source\": \"test\"},%s", (int)head, text,
             text + head);
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_hardware_parse(json, strlen(json), "test", &hw, &err) == SPSIM_OK, "%s",
                  err.message);
    return hw;
}

static struct spsim_parallel
base(double f)
{
    struct spsim_parallel p = testutil_config(2, 1, 1, 1, 32, true, SPSIM_RECOMPUTE_SELECTIVE);
    p.dp = 4;
    p.distributed_optimizer = true;
    p.precision_aware_optimizer = true;
    p.optimizer_cpu_offload = true;
    p.optimizer_offload_fraction = f;
    return p;
}

static struct spsim_result
run(const struct spsim_parallel *p)
{
    return testutil_evaluate_on("llama3-8b", hw_with_cpu(), p);
}

START_TEST(offload_memory)
{
    struct spsim_parallel p = base(0.5);
    struct spsim_result r = run(&p);
    double P = (double)r.memory.parameters_per_gpu;
    ck_assert_uint_eq(r.memory.optimizer_bytes, (uint64_t)ceil(12.0 * 0.5 * P / 4.0));
    ck_assert_uint_eq(r.memory.optimizer_host_bytes, (uint64_t)ceil(16.0 * 0.5 * P / 4.0));
    p = base(1.0); /* all of it on the host */
    r = run(&p);
    ck_assert_uint_eq(r.memory.optimizer_bytes, 0);
    ck_assert_uint_eq(r.memory.optimizer_host_bytes, (uint64_t)ceil(16.0 * P / 4.0));
}
END_TEST

START_TEST(offload_step)
{
    struct spsim_parallel p = base(0.5);
    struct spsim_result r = run(&p);
    double P = (double)r.memory.parameters_per_gpu, Ps = P / 4.0, f = 0.5;
    double norm = 2.0 * 4.0 * P / 2970e9, gpu = (1 - f) * Ps * 34.0 / 2970e9;
    double d2h = f * Ps * 4.0 / 52e9, cpu = f * Ps * 28.0 / 100e9, h2d = f * Ps * 2.0 / 51e9;
    ck_assert_double_eq_tol(r.time.optimizer_d2h_s, d2h, 1e-12);
    ck_assert_double_eq_tol(r.time.optimizer_cpu_s, cpu, 1e-12);
    ck_assert_double_eq_tol(r.time.optimizer_h2d_s, h2d, 1e-12);
    ck_assert_double_eq_tol(r.time.optimizer_s, norm + d2h + fmax(gpu, cpu) + h2d, 1e-12);
    p.overlap_cpu_optimizer_d2h_h2d = true;
    r = run(&p);
    ck_assert_double_eq_tol(r.time.optimizer_s, norm + fmax(fmax(gpu, d2h), fmax(cpu, h2d)), 1e-12);
    /* 1 % offloaded: the GPU's step is the longer one (0.99 · 34 / 2970 > 0.01 · 28 / 100) */
    p = base(0.01);
    r = run(&p);
    f = 0.01;
    gpu = (1 - f) * Ps * 34.0 / 2970e9;
    d2h = f * Ps * 4.0 / 52e9, cpu = f * Ps * 28.0 / 100e9, h2d = f * Ps * 2.0 / 51e9;
    ck_assert_double_gt(gpu, cpu);
    ck_assert_double_eq_tol(r.time.optimizer_s, norm + d2h + gpu + h2d, 1e-12);
    /* 16-bit gradients, nothing offloaded: each kept one is cast to fp32 first (2 + 4 B,
     * _set_sub_optimizer_grads grad.to) */
    p = base(0);
    p.main_grads_dtype = SPSIM_OPT_BF16;
    r = run(&p);
    norm = 2.0 * 2.0 * P / 2970e9;
    gpu = Ps * (6.0 + 34.0) / 2970e9;
    ck_assert_double_eq_tol(r.time.optimizer_s, norm + gpu, 1e-12);
    /* offloaded 16-bit gradients: the size of their copy into the fp32 host buffer depends on
     * where PyTorch's copy_ converts them (Copy.cu, not read): refused, naming the field */
    p = base(0.01);
    p.main_grads_dtype = SPSIM_OPT_BF16;
    struct spsim_hardware *hw = hw_with_cpu();
    struct spsim_model *m = testutil_model_named("llama3-8b");
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_evaluate(m, hw, &p, &r, &err), SPSIM_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "field 'main_grads_dtype'"));
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

/* The number after "key": in the document's "optimizer" object; -1 when absent. */
static double
optimizer_value(const char *doc, const char *key)
{
    const char *obj = strstr(doc, "\n  \"optimizer\": {");
    char quoted[64];
    snprintf(quoted, sizeof(quoted), "\"%s\": ", key);
    const char *at = obj ? strstr(obj, quoted) : NULL;
    return at ? strtod(at + strlen(quoted), NULL) : -1.0;
}

/* The library's document (`spsim query --format json`, Python's spsim.query()) holds the
 * offload's terms in its "optimizer" object, the figures worked by hand above. */
START_TEST(offload_json_object)
{
    struct spsim_parallel p = base(0.5);
    struct spsim_result r = run(&p);
    double P = (double)r.memory.parameters_per_gpu, Ps = P / 4.0, f = 0.5;
    char *doc = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_result_to_json(&r, "llama3-8b", "test", &doc, &err), SPSIM_OK);
    ck_assert_ptr_nonnull(strstr(doc, "\"optimizer\": {\n    \"name\": \"adam\",\n    "
                                      "\"cpu_offload\": true,\n    \"offload_fraction\": 0.5,"));
    ck_assert_double_eq(optimizer_value(doc, "host_bytes"), ceil(16.0 * f * P / 4.0));
    ck_assert_double_eq_tol(optimizer_value(doc, "d2h_s"), f * Ps * 4.0 / 52e9, 1e-12);
    ck_assert_double_eq_tol(optimizer_value(doc, "cpu_s"), f * Ps * 28.0 / 100e9, 1e-12);
    ck_assert_double_eq_tol(optimizer_value(doc, "h2d_s"), f * Ps * 2.0 / 51e9, 1e-12);
    ck_assert_double_eq(optimizer_value(doc, "muon_ns_s"), 0.0);
    free(doc);
}
END_TEST

/* Megatron's rules (arguments.py, verbatim) and what the profiles lack. */
START_TEST(offload_rules)
{
    struct spsim_parallel p = base(0.5);
    p.precision_aware_optimizer = false;
    testutil_expect_rule("llama3-8b", &p,
                         "must be used in conjunction with `--use-precision-aware-optimizer`");
    p = base(0.5);
    p.exp_avg_dtype = SPSIM_OPT_BF16;
    testutil_expect_rule("llama3-8b", &p, "leave them fp32");
    p = base(0);
    p.optimizer_cpu_offload = false;
    p.optimizer_offload_fraction = 0.5;
    testutil_expect_rule("llama3-8b", &p, "needs optimizer_cpu_offload");
    /* the shipped profile has no CPU memory bandwidth: refused, naming the field */
    p = base(0.5);
    struct spsim_model *m = testutil_model_named("llama3-8b");
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_int_ne(spsim_evaluate(m, hw, &p, &r, &err), SPSIM_OK);
    ck_assert_msg(strstr(err.message, "host_link.cpu_memory_GBps"), "%s", err.message);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

/* Megatron's launch line read into the configuration. */
START_TEST(offload_launch_line)
{
    static const char text[] =
        "pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 "
        "--vocab-size 100 --bf16 --use-distributed-optimizer --use-precision-aware-optimizer "
        "--optimizer-cpu-offload --optimizer-offload-fraction 0.75 "
        "--overlap-cpu-optimizer-d2h-h2d\n";
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_parse(text, strlen(text), "launch.sh", &mc, &err) == SPSIM_OK,
                  "%s", err.message);
    ck_assert(mc.par.optimizer_cpu_offload && mc.par.overlap_cpu_optimizer_d2h_h2d);
    ck_assert(mc.par.optimizer_offload_fraction == 0.75);
    spsim_model_destroy(mc.model);
}
END_TEST

static Suite *
offload_suite(void)
{
    Suite *s = suite_create("optimizer_offload");
    TCase *tc = tcase_create("offload");
    tcase_add_test(tc, offload_memory);
    tcase_add_test(tc, offload_step);
    tcase_add_test(tc, offload_json_object);
    tcase_add_test(tc, offload_rules);
    tcase_add_test(tc, offload_launch_line);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(offload_suite());
}
