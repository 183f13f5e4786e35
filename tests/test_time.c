/* The time model: FLOP counts against the paper's Appendix A, the max-min fair solver on cases
 * solved by hand, the collective formula on a synthetic profile, and sanity over every shipped
 * model × hardware. (Accuracy against the paper's measurements is test_accuracy.c.) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/collective_model.h"
#include "engine/eval.h"
#include "testutil.h"

static struct spsim_result
eval_paper(const char *model, uint32_t tp, uint32_t pp, uint32_t vpp, uint32_t mbs, uint64_t gbs,
           bool sp, enum spsim_recompute rec)
{
    return testutil_evaluate(model, "dgx-a100-80g", tp, pp, vpp, mbs, gbs, sp, rec);
}

/* Paper Eq. 7: 72·B·L·s·h²·(1 + s/(6h) + v/(12hL)). */
static double
eq7(double B, double L, double s, double h, double v)
{
    return 72.0 * B * L * s * h * h * (1 + s / (6 * h) + v / (12 * h * L));
}

START_TEST(model_flops_are_eq7)
{
    static const struct {
        const char *model;
        double L, h;
        uint32_t pp, vpp;
        uint64_t gbs;
    } rows[] = {{"paper-22b", 48, 6144, 1, 1, 4},
                {"paper-175b", 96, 12288, 8, 3, 64},
                {"paper-530b", 105, 20480, 35, 3, 280},
                {"paper-1t", 128, 25600, 64, 1, 512}};
    for (size_t i = 0; i < 4; i++) {
        struct spsim_result r =
            eval_paper(rows[i].model, 8, rows[i].pp, rows[i].vpp, i == 0 ? 4 : 1, rows[i].gbs, true,
                       SPSIM_RECOMPUTE_SELECTIVE);
        double want = eq7((double)rows[i].gbs, rows[i].L, 2048, rows[i].h, 51200);
        ck_assert_double_eq_tol(r.time.model_flops / want, 1.0, 1e-12);
    }
}
END_TEST

START_TEST(hardware_flops_count_the_recomputation)
{
    /* Appendix A: forward per layer 24Bsh² + 4Bs²h; backward twice forward; selective
     * recomputation adds the attention-matrix and attention-over-values forward, 2Bs²h each
     * (the text; its Eq. 8 writes the s/(3h) term twice as large); full recomputation adds the
     * whole layer's forward. 22B, B = 4. */
    double B = 4, L = 48, s = 2048, h = 6144, v = 51200;
    struct spsim_result none = eval_paper("paper-22b", 8, 1, 1, 4, 4, false, SPSIM_RECOMPUTE_NONE);
    struct spsim_result sel =
        eval_paper("paper-22b", 8, 1, 1, 4, 4, true, SPSIM_RECOMPUTE_SELECTIVE);
    struct spsim_result full = eval_paper("paper-22b", 8, 1, 1, 4, 4, false, SPSIM_RECOMPUTE_FULL);
    ck_assert_double_eq_tol(none.time.hardware_flops / eq7(B, L, s, h, v), 1.0, 1e-12);
    ck_assert_double_eq_tol(sel.time.hardware_flops / (eq7(B, L, s, h, v) + L * 4 * B * s * s * h),
                            1.0, 1e-12);
    ck_assert_double_eq_tol(full.time.hardware_flops /
                                (eq7(B, L, s, h, v) + L * (24 * B * s * h * h + 4 * B * s * s * h)),
                            1.0, 1e-12);
    /* Eq. 9: HFU/MFU ≈ 1 + s/(6h) for selective... with the text's count, 1 + s/(18h). */
    ck_assert_double_eq_tol(sel.time.hfu / sel.time.mfu,
                            1 + (4 * s * s * h * B * L) / eq7(B, L, s, h, v), 1e-12);
    /* MFU definition: model FLOPs / (time · GPUs · 312e12), A100 BF16 dense peak [GK-A100]. */
    ck_assert_double_eq_tol(sel.time.mfu,
                            sel.time.model_flops / (sel.time.iteration_s * 8 * 312e12), 1e-12);
    ck_assert_double_eq_tol(sel.time.tflops_per_gpu,
                            sel.time.model_flops / (sel.time.iteration_s * 8) / 1e12, 1e-9);
}
END_TEST

START_TEST(mfu_against_one_stated_peak)
{
    /* MFU divides by the dense BF16 peak whatever the dtype (989 TFLOP/s for the H100 SXM,
     * [GK-H100]; hardware/dgx-h100.json), so that it ranks as throughput does; mfu_dtype by the
     * dtype's own peak (FP8 1979 TFLOP/s dense, the same sources). Llama 3 8B, tp 2 · pp 1 ·
     * dp 4, one configuration in BF16 and in FP8. */
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 2;
    p.dp = 4;
    p.sp = true;
    p.gbs = 32;
    struct spsim_result bf16 = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    p.dtype = SPSIM_DTYPE_FP8;
    struct spsim_result fp8 = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    const struct spsim_time_report *a = &bf16.time, *b = &fp8.time;
    ck_assert_double_eq_tol(b->mfu, b->model_flops / (b->iteration_s * 8 * 989e12), 1e-12);
    ck_assert_double_eq_tol(b->mfu_dtype, b->model_flops / (b->iteration_s * 8 * 1979e12), 1e-12);
    ck_assert_double_eq_tol(b->hfu, b->hardware_flops / (b->iteration_s * 8 * 989e12), 1e-12);
    ck_assert_double_eq_tol(b->hfu_dtype, b->hardware_flops / (b->iteration_s * 8 * 1979e12),
                            1e-12);
    ck_assert_double_eq(a->mfu_dtype, a->mfu);
    ck_assert_double_eq(a->hfu_dtype, a->hfu);
    /* The same model FLOPs over both: MFU orders the two as their tokens per second do. */
    ck_assert_double_eq_tol(b->mfu / a->mfu, b->tokens_per_s / a->tokens_per_s, 1e-12);
    ck_assert(b->tokens_per_s > a->tokens_per_s && b->mfu > a->mfu);
}
END_TEST

START_TEST(maxmin_hand_cases)
{
    /* One link of 10 shared by two flows: 5 each. */
    double cap1[1] = {10};
    struct spsim_flow f1[2] = {{.bytes = 100, .nres = 1, .res = {0}},
                               {.bytes = 300, .nres = 1, .res = {0}}};
    ck_assert_int_eq(spsim_maxmin_rates(cap1, 1, f1, 2), SPSIM_OK);
    ck_assert_double_eq_tol(f1[0].rate, 5, 1e-12);
    ck_assert_double_eq_tol(f1[1].rate, 5, 1e-12);
    /* Run to completion: the first ends at 100/5 = 20 s; the second then has 200 left at 10:
     * ends at 40 s; the link is busy 40 s. */
    double busy[1], makespan;
    ck_assert_int_eq(spsim_maxmin_run(cap1, 1, f1, 2, &makespan, busy), SPSIM_OK);
    ck_assert_double_eq_tol(f1[0].finish_s, 20, 1e-9);
    ck_assert_double_eq_tol(f1[1].finish_s, 40, 1e-9);
    ck_assert_double_eq_tol(makespan, 40, 1e-9);
    ck_assert_double_eq_tol(busy[0], 40, 1e-9);

    /* Bertsekas & Gallager's example shape: link A (10) carries f0 and f1, link B (4) carries
     * f1 and f2. B saturates first at 2 each; f0 then takes A's remaining 8. */
    double cap2[2] = {10, 4};
    struct spsim_flow f2[3] = {{.bytes = 1, .nres = 1, .res = {0}},
                               {.bytes = 1, .nres = 2, .res = {0, 1}},
                               {.bytes = 1, .nres = 1, .res = {1}}};
    ck_assert_int_eq(spsim_maxmin_rates(cap2, 2, f2, 3), SPSIM_OK);
    ck_assert_double_eq_tol(f2[0].rate, 8, 1e-12);
    ck_assert_double_eq_tol(f2[1].rate, 2, 1e-12);
    ck_assert_double_eq_tol(f2[2].rate, 2, 1e-12);

    /* A flow's own ceiling: f0 capped at 1 leaves 9 to f1. */
    struct spsim_flow f3[2] = {{.bytes = 1, .max_rate = 1, .nres = 1, .res = {0}},
                               {.bytes = 1, .nres = 1, .res = {0}}};
    ck_assert_int_eq(spsim_maxmin_rates(cap1, 1, f3, 2), SPSIM_OK);
    ck_assert_double_eq_tol(f3[0].rate, 1, 1e-12);
    ck_assert_double_eq_tol(f3[1].rate, 9, 1e-12);

    /* A flow crossing an unknown link is an error, not a crash. */
    struct spsim_flow bad = {.bytes = 1, .nres = 1, .res = {7}};
    ck_assert_int_eq(spsim_maxmin_rates(cap1, 1, &bad, 1), SPSIM_EINVAL);
}
END_TEST

START_TEST(collective_formula_by_hand)
{
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_hardware_parse(testutil_synthetic_hw, strlen(testutil_synthetic_hw),
                                       "synthetic", &hw, &err) == SPSIM_OK,
                  "%s", err.message);
    struct spsim_collective_prediction p;
    /* AllReduce, 8 GPUs, 1e9 B: 5 + 14·1 µs + 2·7/8·1e9 / 200e9 s = 19 µs + 8.75 ms. */
    ck_assert_int_eq(
        spsim_collective_predict(hw, SPSIM_COLL_ALL_REDUCE, 8, 0, 1000000000, &p, NULL), SPSIM_OK);
    ck_assert_double_eq_tol(p.time_s, 19e-6 + 8.75e-3, 1e-12);
    ck_assert_double_eq_tol(p.algbw_GBps, 1.0 / p.time_s, 1e-9);
    ck_assert_double_eq_tol(p.busbw_GBps, 1.75 / p.time_s, 1e-9);
    ck_assert_int_eq(p.tier, SPSIM_TIER_NVLINK);
    /* AllGather, 4 GPUs, 1e9 B (the whole gathered buffer): 5 + 3 µs + 3/4·1e9/200e9. */
    ck_assert_int_eq(
        spsim_collective_predict(hw, SPSIM_COLL_ALL_GATHER, 4, 0, 1000000000, &p, NULL), SPSIM_OK);
    ck_assert_double_eq_tol(p.time_s, 8e-6 + 3.75e-3, 1e-12);
    /* AllReduce over 2 nodes of 8 (16 GPUs): hierarchical, NCCL's Ring/Simple. Bandwidth: the
     * smaller of NVLink (200) and the 8 NICs of a node (8 × 40 = 320): 200. Latency: network
     * base 10 µs, 30 steps of which 2(2−1) = 2 cross nodes at 3 µs, 28 at 1 µs → 44 µs; plus
     * Simple's latency beyond LL's in NCCL's table (tuning.cc, Ampere's rows for GPU "X"):
     * Simple 8.4 + 28·3.4 + 2·14 = 131.6 µs, ×1.4 for the ring's plateau (1e9/(16 channels ·
     * 16 ranks) >= 64) = 184.24; LL 6.6 + 28·max(0.6, 1 µs net overhead) + 2·2.7 = 40;
     * 144.24 µs more. Wire 2·15/16·1e9. */
    ck_assert_int_eq(
        spsim_collective_predict(hw, SPSIM_COLL_ALL_REDUCE, 16, 2, 1000000000, &p, NULL), SPSIM_OK);
    ck_assert_int_eq(p.tier, SPSIM_TIER_HIERARCHICAL);
    ck_assert_double_eq_tol(p.time_s, (44 + 144.24) * 1e-6 + 1.875e9 / 200e9, 1e-12);
    /* One GPU per node (8 GPUs on 8 nodes): each rank has its own NIC, 40 GB/s; latency
     * 10 + 14 steps all across nodes × 3 µs = 52 µs; with one GPU per node NCCL takes the
     * Tree NET row for every step: Simple (8.4 + 14·14)·1.4 = 286.16 against LL 6.6 + 14·5 =
     * 76.6, 209.56 µs more. */
    ck_assert_int_eq(
        spsim_collective_predict(hw, SPSIM_COLL_ALL_REDUCE, 8, 8, 1000000000, &p, NULL), SPSIM_OK);
    ck_assert_int_eq(p.tier, SPSIM_TIER_NETWORK);
    ck_assert_double_eq_tol(p.time_s, (52 + 209.56) * 1e-6 + 1.75e9 / 40e9, 1e-12);
    /* Bad layouts are refused. */
    ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_REDUCE, 12, 5, 1024, &p, &err),
                     SPSIM_EINVAL);
    ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_REDUCE, 1, 0, 1024, &p, &err),
                     SPSIM_EINVAL);
    spsim_hardware_destroy(hw);
}
END_TEST

static double
gemm_s(const struct spsim_hardware *hw, uint64_t m, uint64_t n, uint64_t k, bool fp32_out)
{
    double s = 0;
    ck_assert_int_eq(spsim_gemm_time(hw, SPSIM_DTYPE_BF16, m, n, k, 1, fp32_out, &s), SPSIM_OK);
    return s;
}

START_TEST(gemm_model_by_hand)
{
    /* Synthetic GPU: 100 SMs, 50 TFLOP/s achievable, 1000 GB/s HBM. */
    struct spsim_hardware *hw = testutil_synthetic("");
    /* 1280 × 2560 output: 10 × 10 tiles of 128 × 256 = one full wave, or 200 of 128 × 128 =
     * two; K = 4096 is 64 k-blocks of 64, and a persistent kernel (the default "overlapped"
     * epilogue) pays one prologue slot per SM: 64 of 65 slots useful with one wave, 128 of 129
     * with two, the best. 2·1280·2560·4096 FLOPs at 50e12 × 128/129. Operands
     * 2·(1280·4096 + 4096·2560) B and the output are far below the compute time, which alone
     * counts when the epilogue is overlapped. */
    double persistent = 2.0 * 1280 * 2560 * 4096 / 50e12 * 129.0 / 128.0;
    ck_assert_double_eq_tol(gemm_s(hw, 1280, 2560, 4096, false), persistent, 1e-15);
    ck_assert_double_eq_tol(gemm_s(hw, 1280, 2560, 4096, true), persistent, 1e-15);
    /* 1280 × 2816: 128×256 and 256×128 give 110 tiles = 2 waves, 7040 useful k-block slots of
     * 100·(2·64 + 1); 128×128 gives 220 tiles = 3 waves, 14080 of 100·(3·64 + 1): the best. */
    ck_assert_double_eq_tol(gemm_s(hw, 1280, 2816, 4096, false),
                            2.0 * 1280 * 2816 * 4096 / (50e12 * 14080.0 / 19300.0), 1e-15);
    /* Thin K = 16: one k-block (padded to 64) and the prologue per unit. 128×128: 200 tiles in
     * 2 waves, 2·1 + 1 slots for 1280·2560·16 / (128·128·64) = 50 useful per 100 SMs: 1/6,
     * better than 128×256's 25 / (100·2). 2·1280·2560·16 / 50e12 × 6 = 12.6 µs of compute;
     * with the fp32 main gradient (8 B) the output's 26.2 µs through HBM is the roofline. */
    ck_assert_double_eq_tol(gemm_s(hw, 1280, 2560, 16, false), 2.0 * 1280 * 2560 * 16 / 50e12 * 6,
                            1e-15);
    ck_assert_double_eq_tol(gemm_s(hw, 1280, 2560, 16, true),
                            (2.0 * (1280 * 16 + 16 * 2560) + 8.0 * 1280 * 2560) / 1e12, 1e-15);
    spsim_hardware_destroy(hw);

    /* Serial epilogue: the output is written after the main loop, 2 B per element, or the
     * fp32 main gradient read and written (8 B) for a weight gradient; the prologue is paid
     * per tile: 64 + 1 slots for the one wave of 128 × 256 (two waves of 128 × 128 do no
     * better), 2·1280·2560·4096 FLOPs at 50e12 × 64/65. */
    double compute = 2.0 * 1280 * 2560 * 4096 / 50e12 * 65.0 / 64.0;
    hw = testutil_synthetic("\"gemm_epilogue\": {\"value\": \"serial\", \"source\": \"t\"},");
    ck_assert_double_eq_tol(gemm_s(hw, 1280, 2560, 4096, false), compute + 2.0 * 1280 * 2560 / 1e12,
                            1e-15);
    ck_assert_double_eq_tol(gemm_s(hw, 1280, 2560, 4096, true), compute + 8.0 * 1280 * 2560 / 1e12,
                            1e-15);
    /* Thin K: 128×256 and 128×128 both reach 1/8 (25 of 100·2, 50 of 100·2·2); the operands
     * (0.12 µs) stream under the main loop's 16.8 µs; the output's 6.6 µs follow it. */
    ck_assert_double_eq_tol(gemm_s(hw, 1280, 2560, 16, false),
                            2.0 * 1280 * 2560 * 16 / 50e12 * 8 + 2.0 * 1280 * 2560 / 1e12, 1e-15);
    spsim_hardware_destroy(hw);

    /* A measured point with a serial epilogue: 40 TFLOP/s at 1280×2560×4096 is
     * 2.68435456e10 / 40e12 = 671.08864 µs, of which the output takes 6.5536 µs. The same
     * GEMM is predicted back at its measured time; one with 4× the K runs 256 k-blocks + 1
     * where the measured one ran 64 + 1: its main loop is 4·257/260 of the measured one. */
    hw = testutil_synthetic("\"gemm_epilogue\": {\"value\": \"serial\", \"source\": \"t\"},"
                            " \"gemm_table\": {\"dtype\": \"bf16\", \"source\": \"t\","
                            " \"points\": [[1280, 2560, 4096, 40]]},");
    ck_assert_double_eq_tol(gemm_s(hw, 1280, 2560, 4096, false), 671.08864e-6, 1e-15);
    ck_assert_double_eq_tol(gemm_s(hw, 1280, 2560, 16384, false),
                            4.0 * 257.0 / 260.0 * (671.08864e-6 - 6.5536e-6) + 6.5536e-6, 1e-15);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(gemm_profile_errors)
{
    static const struct {
        const char *extra, *needle;
    } cases[] = {
        {"\"gemm_epilogue\": {\"value\": \"sometimes\", \"source\": \"t\"},",
         "field 'gpu.gemm_epilogue.value': must be one of 'overlapped', 'serial', got "
         "'sometimes'"},
        {"\"gemm_epilogue\": \"serial\",", "field 'gpu.gemm_epilogue': must be {\"value\": "
                                           "\"NAME\", \"source\": \"TEXT\"}, got a string"},
        {"\"gemm_epilogue\": {\"value\": \"serial\"},",
         "field 'gpu.gemm_epilogue.source': is required but missing"},
        /* 2e10 B of output at 1e12 B/s take 20 ms; 2e10 FLOPs at 50e12 claim 0.4 ms. */
        {"\"gemm_epilogue\": {\"value\": \"serial\", \"source\": \"t\"}, \"gemm_table\": "
         "{\"dtype\": \"bf16\", \"source\": \"t\", \"points\": [[100000, 100000, 1, 50]]},",
         "field 'gpu.gemm_table.points': row 0: 50 TFLOP/s is faster than writing the 100000 x "
         "100000 output at gpu.hbm_achievable_GBps alone"},
        {"\"gemm_table\": {\"dtype\": \"bf16\", \"source\": \"t\", \"points\": [[1280.5, 2560, "
         "4096, 40]]},",
         "field 'gpu.gemm_table.points': row 0: M, N and K must be whole numbers from 1 to 1e9, "
         "got 1280.5"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        testutil_synthetic_refused(cases[i].extra, cases[i].needle);
}
END_TEST

static int
each_hardware(void *cookie, const char *name, const char *path)
{
    struct spsim_model *m = cookie;
    if (testutil_listing_only(path)) /* hgx-h20: the time model refuses it (test_profiles.c) */
        return 0;
    struct spsim_hardware *hw = testutil_hardware(name);
    const struct spsim_model_shape *s = spsim_model_get_shape(m);
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 8;
    p.sp = true;
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    p.pp = s->layers % 8 == 0 ? 8 : (s->layers % 7 == 0 ? 7 : 1);
    p.dp = 2;
    p.gbs = 2 * 4 * p.pp;
    p.distributed_optimizer = true;
    p.overlap_grad_reduce = true;
    struct spsim_result r;
    struct spsim_error err = {0};
    /* MoE profiles: tp dividing their (few) KV heads, etp 1 (gpt-oss has biases). */
    if (s->experts) {
        while (s->kv_heads % p.tp)
            p.tp /= 2;
        p.sp = p.tp > 1;
        p.etp = 1;
    }
    ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s on %s: %s",
                  spsim_model_name(m), name, err.message);
    const struct spsim_field *fields;
    size_t n = spsim_result_fields(&fields);
    for (size_t i = 0; i < n; i++) {
        if (fields[i].type != SPSIM_FIELD_F64 || strncmp(fields[i].path, "time.", 5) != 0)
            continue;
        double v;
        memcpy(&v, (const char *)&r + fields[i].offset, sizeof(v));
        ck_assert_msg(isfinite(v) && v >= 0, "%s on %s: %s = %g", spsim_model_name(m), name,
                      fields[i].path, v);
    }
    ck_assert(r.time.iteration_s > 0 && r.time.layer_forward_s > 0 && r.time.layer_backward_s > 0);
    ck_assert(r.time.mfu > 0 && r.time.mfu < 1 && r.time.hfu > 0 && r.time.hfu < 1);
    spsim_hardware_destroy(hw);
    return 0;
}

static int
each_model(void *cookie, const char *name, const char *path)
{
    (void)cookie;
    (void)path;
    struct spsim_model *m = testutil_model_named(name);
    ck_assert_int_eq(spsim_profile_list(SPSIM_PROFILE_HARDWARE, each_hardware, m, NULL), SPSIM_OK);
    spsim_model_destroy(m);
    return 0;
}

START_TEST(every_shipped_pair_has_finite_times)
{
    ck_assert_int_eq(spsim_profile_list(SPSIM_PROFILE_MODEL, each_model, NULL, NULL), SPSIM_OK);
}
END_TEST

START_TEST(bubble_between_its_bounds)
{
    /* 175B as the paper ran it with data parallelism added: tp 8 (SP, selective), pp 8, vpp 3,
     * dp 2, 64 micro-batches, the distributed optimizer, the tied embedding across stages.
     * (The iteration as the sum of its terms is worked by hand in test_terms.c; restating the
     * result's own sum here tested nothing, issue 23.) */
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 8;
    p.pp = 8;
    p.vpp = 3;
    p.dp = 2;
    p.sp = true;
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    p.gbs = 128;
    p.distributed_optimizer = true;
    struct spsim_result r = testutil_evaluate_config("paper-175b", "dgx-a100-80g", &p);
    const struct spsim_time_report *t = &r.time;
    double m = 64;
    /* Bubble (Narayanan et al. 2021): (p − 1)/vpp slots of the mean stage's micro-batch and
     * its sends. A middle stage runs L/p = 12 layers and nothing else; the mean stage lies
     * between it and the critical one. */
    double sends = t->pp_p2p_s / m, middle = 12 * (t->layer_forward_s + t->layer_backward_s);
    ck_assert(t->pp_bubble_s >= 7.0 / 3.0 * (middle + sends) * (1 - 1e-12));
    ck_assert(t->pp_bubble_s <= 7.0 / 3.0 * t->microbatch_s * (1 + 1e-12));
}
END_TEST

static Suite *
time_suite(void)
{
    Suite *s = suite_create("time");
    TCase *tc = tcase_create("flops");
    tcase_add_test(tc, model_flops_are_eq7);
    tcase_add_test(tc, hardware_flops_count_the_recomputation);
    suite_add_tcase(s, tc);
    tc = tcase_create("network");
    tcase_add_test(tc, mfu_against_one_stated_peak);
    tcase_add_test(tc, maxmin_hand_cases);
    tcase_add_test(tc, collective_formula_by_hand);
    tcase_add_test(tc, gemm_model_by_hand);
    tcase_add_test(tc, gemm_profile_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("sanity");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, every_shipped_pair_has_finite_times);
    tcase_add_test(tc, bubble_between_its_bounds);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(time_suite());
}
