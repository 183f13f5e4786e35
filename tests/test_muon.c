/*
 * Muon (--optimizer muon), worked by hand from Megatron-Core's and NVIDIA's emerging_optimizers
 * code, independently of engine/optimizer.c:
 *
 * Which weights (megatron/core/optimizer/emerging_optimizers.py @d98e8a64
 * _is_nonlinear_or_embedding): every 2-D weight but the embedding and the output layer; the
 * rest (those two, the norms) steps with Adam. llama3-8b (h 4096, 32 heads of 128, 8 KV heads,
 * SwiGLU FFN 14336, 32 layers, vocabulary 128256, untied) at tp 2, pp 1: one rank's weights
 * per layer, [out, in]: Q [2048, 4096], K and V [512, 4096] (the fused QKV split per query
 * group, --muon-split-qkv default), projection [4096, 2048], FC1 [14336, 4096], FC2 [4096, 7168]:
 * 4096 · (2048 + 1024 + 2048 + 14336 + 7168) = 109,051,904; 32 layers: M = 3,489,660,928.
 *
 * State (Float16OptimizerWithFloat16Params: fp32 main weight 4; torch.zeros_like momentum 4):
 * 8 B per Muon parameter, Adam's 12 for the others (fp32 gradients, no copy), sharded over
 * D = dp = 4 by the layer-wise distributed optimizer.
 *
 * Newton-Schulz (emerging_optimizers muon_utils.py @fd772926 newton_schulz_step, X m × n with
 * m <= n): X·Xᵀ 2m²n, A·A 2m³, B·X 2m²n; 5 steps (--muon-num-ns-steps default):
 * 5 (4m²n + 2m³). --muon-tp-mode duplicated (default) gathers each TP-sharded weight whole:
 *   Q, projection [4096, 4096]: 5 · 6 · 4096³             = 2,061,584,302,080 each
 *   K, V [1024, 4096]: 5 (4·1024²·4096 + 2·1024³)         =    96,636,764,160 each
 *   FC1 [28672, 4096]: 5 (4·4096²·28672 + 2·4096³)        = 10,307,921,510,400
 *   FC2 [4096, 14336]: 5 (4·4096²·14336 + 2·4096³)        =  5,497,558,138,880
 *   a layer: 20,121,921,781,760; 32 layers over D = 4: 160,975,374,254,080 per GPU.
 * blockwise: each rank's shard alone:
 *   Q, projection [2048, 4096]: 5 (4·2048²·4096 + 2·2048³) = 429,496,729,600 each
 *   K, V [512, 4096]: 5 (4·512²·4096 + 2·512³)            =  22,817,013,760 each
 *   FC1 [14336, 4096]: 5 (4·4096²·14336 + 2·4096³)        = 5,497,558,138,880
 *   FC2 [4096, 7168]: 5 (4·4096²·7168 + 2·4096³)          = 3,092,376,453,120
 *   a layer: 9,494,562,078,720; 32 layers over D = 4: 75,956,496,629,760.
 * --muon-no-split-qkv: QKV [6144, 4096] whole: 5 (4·4096²·6144 + 2·4096³) = 2,748,779,069,440
 *   in place of Q + K + V = 2,254,857,830,400.
 * Duplicated gathers (newton_schulz_tp all_gather, fp32): 4 · (4096² + 2·1024·4096 + 4096² +
 *   28672·4096 + 4096·14336) = 872,415,232 B and 6 gathers a layer; 32 over 4: 6,979,321,856 B
 *   in 48 gathers.
 *
 * Step HBM bytes (orthogonalized_optimizer.py step): decay 8, momentum lerp_ 12, normalize 12,
 * cast to bf16 6 and back 6, scale 8, p.add_ 12 = 64 per Muon element of the shard (Nesterov:
 * + 12); Adam's 28 for the others; the gradient norm and zero_grad 2 · 4 · P; the main-to-model
 * copy 2 · P. Newton-Schulz at dgx-h100's achievable BF16 GEMM rate, 794.5 TFLOP/s
 * (hardware/dgx-h100.json), HBM at 2970 GB/s (the same profile).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "spsim/spsim.h"
#include "testutil.h"

static const uint64_t M_HAND = 3489660928ull;
static const double NS_DUP = 160975374254080.0, NS_BLOCK = 75956496629760.0;

static struct spsim_parallel
base(void)
{
    struct spsim_parallel p = testutil_config(2, 1, 1, 1, 32, true, SPSIM_RECOMPUTE_SELECTIVE);
    p.dp = 4;
    p.distributed_optimizer = true;
    p.optimizer = SPSIM_OPTIMIZER_MUON;
    return p;
}

static double
elementwise_s(uint64_t P, uint64_t M, double muon_bytes)
{
    double Pd = (double)P, Md = (double)M;
    return (2.0 * 4.0 * Pd + (28.0 * (Pd - Md) + muon_bytes * Md) / 4.0 + 2.0 * Pd) / 2970e9;
}

START_TEST(muon_state_bytes)
{
    struct spsim_parallel p = base();
    struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    uint64_t P = r.memory.parameters_per_gpu;
    ck_assert_uint_eq(r.memory.muon_parameters_per_gpu, M_HAND);
    ck_assert_uint_eq(r.memory.optimizer_bytes, ((P - M_HAND) * 12 + M_HAND * 8 + 3) / 4);
    /* without the distributed optimizer every rank holds it all */
    p.distributed_optimizer = false;
    r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_uint_eq(r.memory.optimizer_bytes, (P - M_HAND) * 12 + M_HAND * 8);
    /* 16-bit gradients: + the fp32 copy, 4 B each */
    p.distributed_optimizer = true;
    p.grad_reduce_in_fp32 = 0;
    r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_uint_eq(r.memory.optimizer_bytes, ((P - M_HAND) * 16 + M_HAND * 12 + 3) / 4);
}
END_TEST

START_TEST(muon_newton_schulz)
{
    struct spsim_parallel p = base();
    struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_double_eq_tol(r.memory.muon_ns_flops_per_gpu, NS_DUP, 1.0);
    ck_assert_double_eq_tol(r.memory.muon_tp_gather_bytes_per_gpu, 6979321856.0, 1e-3);
    ck_assert_double_eq_tol(r.memory.muon_tp_gathers_per_gpu, 48.0, 1e-12);
    ck_assert_double_eq_tol(r.time.optimizer_muon_ns_s, NS_DUP / 794.5e12, 1e-12);
    p.muon_tp_mode = SPSIM_MUON_TP_BLOCKWISE;
    r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_double_eq_tol(r.memory.muon_ns_flops_per_gpu, NS_BLOCK, 1.0);
    ck_assert(r.memory.muon_tp_gathers_per_gpu == 0.0);
    ck_assert(r.time.optimizer_muon_gather_s == 0.0);
    /* 3 steps: 3/5 of the FLOPs */
    p.muon_ns_steps = 3;
    r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_double_eq_tol(r.memory.muon_ns_flops_per_gpu, NS_BLOCK * 3.0 / 5.0, 1.0);
    /* the fused QKV orthogonalized whole */
    p = base();
    p.muon_no_split_qkv = true;
    r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    double qkv = 32.0 / 4.0 * (2748779069440.0 - 2254857830400.0);
    ck_assert_double_eq_tol(r.memory.muon_ns_flops_per_gpu, NS_DUP + qkv, 1.0);
}
END_TEST

START_TEST(muon_step_time)
{
    struct spsim_parallel p = base();
    p.muon_tp_mode = SPSIM_MUON_TP_BLOCKWISE;
    struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    uint64_t P = r.memory.parameters_per_gpu;
    ck_assert_double_eq_tol(r.time.optimizer_s,
                            elementwise_s(P, M_HAND, 64.0) + NS_BLOCK / 794.5e12, 1e-12);
    p.muon_nesterov = true;
    r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_double_eq_tol(r.time.optimizer_s,
                            elementwise_s(P, M_HAND, 76.0) + NS_BLOCK / 794.5e12, 1e-12);
    /* duplicated: + 48 all-gathers over the TP pair, each of the mean size */
    p = base();
    r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_collective_prediction ag;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_GATHER, 2, 0,
                                              (uint64_t)(872415232.0 / 6.0), &ag, &err),
                     SPSIM_OK);
    ck_assert_double_gt(ag.time_s, 0);
    ck_assert_double_eq_tol(r.time.optimizer_muon_gather_s, 48.0 * ag.time_s, 1e-6 * ag.time_s);
    ck_assert_double_eq_tol(
        r.time.optimizer_s,
        elementwise_s(P, M_HAND, 64.0) + NS_DUP / 794.5e12 + r.time.optimizer_muon_gather_s, 1e-12);
    spsim_hardware_destroy(hw);
}
END_TEST

/* What spsim does not model of Muon, refused (exit 3 from the CLI). */
START_TEST(muon_rules)
{
    struct spsim_parallel p = base();
    p.precision_aware_optimizer = true;
    testutil_expect_rule("llama3-8b", &p, "muon with --use-precision-aware-optimizer");
    p = base();
    p.optimizer = SPSIM_OPTIMIZER_ADAM;
    p.muon_ns_steps = 3;
    testutil_expect_rule("llama3-8b", &p, "the muon_* options need optimizer muon");
    p = base();
    p.zero = 3;
    testutil_expect_rule("llama3-8b", &p, "muon with Megatron-FSDP");
}
END_TEST

/* Megatron's launch line (arguments.py: --optimizer muon|dist_muon, --muon-num-ns-steps,
 * --muon-tp-mode, --muon-nesterov, --muon-no-split-qkv) read into the configuration. */
START_TEST(muon_launch_line)
{
    static const char head[] = "pretrain_gpt.py --num-layers 2 --hidden-size 64 "
                               "--num-attention-heads 4 --seq-length 32 --vocab-size 100 --bf16 ";
    char text[1024];
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    snprintf(text, sizeof(text),
             "%s--optimizer dist_muon --muon-num-ns-steps 3 --muon-tp-mode "
             "blockwise --muon-nesterov --muon-no-split-qkv --muon-momentum 0.9\n",
             head);
    ck_assert_msg(spsim_megatron_parse(text, strlen(text), "launch.sh", &mc, &err) == SPSIM_OK,
                  "%s", err.message);
    ck_assert_int_eq(mc.par.optimizer, SPSIM_OPTIMIZER_MUON);
    ck_assert(mc.par.distributed_optimizer); /* dist_muon: muon + --use-distributed-optimizer */
    ck_assert_uint_eq(mc.par.muon_ns_steps, 3);
    ck_assert_int_eq(mc.par.muon_tp_mode, SPSIM_MUON_TP_BLOCKWISE);
    ck_assert(mc.par.muon_nesterov && mc.par.muon_no_split_qkv);
    ck_assert_str_eq(mc.unmodelled, "--muon-momentum"); /* no cost */
    spsim_model_destroy(mc.model);
    /* what spsim does not model of it, refused naming the flag */
    snprintf(text, sizeof(text), "%s--optimizer muon --muon-tp-mode distributed\n", head);
    ck_assert_int_ne(spsim_megatron_parse(text, strlen(text), "launch.sh", &mc, &err), SPSIM_OK);
    ck_assert_msg(strstr(err.message, "--muon-tp-mode: 'distributed' is not modelled"), "%s",
                  err.message);
    /* with Adam Megatron ignores the muon flags, whatever their values */
    snprintf(text, sizeof(text), "%s--optimizer adam --muon-tp-mode distributed\n", head);
    ck_assert_msg(spsim_megatron_parse(text, strlen(text), "launch.sh", &mc, &err) == SPSIM_OK,
                  "%s", err.message);
    ck_assert_int_eq(mc.par.optimizer, SPSIM_OPTIMIZER_ADAM);
    ck_assert_uint_eq(mc.par.muon_tp_mode, SPSIM_MUON_TP_DUPLICATED);
    spsim_model_destroy(mc.model);
    snprintf(text, sizeof(text), "%s--optimizer sgd\n", head);
    ck_assert_int_ne(spsim_megatron_parse(text, strlen(text), "launch.sh", &mc, &err), SPSIM_OK);
    ck_assert_msg(strstr(err.message, "--optimizer: 'sgd' is not modelled"), "%s", err.message);
}
END_TEST

/* The library's document (spsim_result_to_json: `spsim query --format json` and Python's
 * spsim.query()) ends with the "optimizer" object under Muon, holding the hand-worked figures
 * above; Adam's has none. */
START_TEST(muon_json_object)
{
    struct spsim_parallel p = base();
    struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    char *doc = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_result_to_json(&r, "llama3-8b", "dgx-h100", &doc, &err), SPSIM_OK);
    const char *obj = strstr(doc, "\n  \"optimizer\": {\n    \"name\": \"muon\",");
    ck_assert_msg(obj && strstr(doc, "\n  \"time\": {") < obj, "%s", doc);
    ck_assert_ptr_nonnull(strstr(obj, "\"muon_parameters_per_gpu\": 3489660928,"));
    ck_assert_ptr_nonnull(strstr(obj, "\"muon_ns_flops_per_gpu\": 160975374254080,"));
    ck_assert_ptr_nonnull(strstr(obj, "\"muon_tp_gather_bytes_per_gpu\": 6979321856,"));
    ck_assert_ptr_nonnull(strstr(obj, "\"muon_tp_gathers_per_gpu\": 48,"));
    const char *ns = strstr(obj, "\"muon_ns_s\": ");
    ck_assert_ptr_nonnull(ns);
    ck_assert_double_eq_tol(strtod(ns + strlen("\"muon_ns_s\": "), NULL), NS_DUP / 794.5e12, 1e-12);
    ck_assert_str_eq(doc + strlen(doc) - 6, "  }\n}\n");
    free(doc);
    p.optimizer = SPSIM_OPTIMIZER_ADAM;
    r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_int_eq(spsim_result_to_json(&r, "llama3-8b", "dgx-h100", &doc, &err), SPSIM_OK);
    ck_assert_ptr_null(strstr(doc, "\"optimizer\": {"));
    free(doc);
}
END_TEST

static Suite *
muon_suite(void)
{
    Suite *s = suite_create("muon");
    TCase *tc = tcase_create("muon");
    tcase_add_test(tc, muon_state_bytes);
    tcase_add_test(tc, muon_newton_schulz);
    tcase_add_test(tc, muon_step_time);
    tcase_add_test(tc, muon_rules);
    tcase_add_test(tc, muon_launch_line);
    tcase_add_test(tc, muon_json_object);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(muon_suite());
}
