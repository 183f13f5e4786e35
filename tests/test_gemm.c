/* The GEMM shape model (engine/gemm_shape.c) and the sustained clock, worked by hand on round
 * numbers: tile counts, waves, k-blocks, prologue slots, split-K. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/eval.h"
#include "engine/gemm_shape.h"
#include "testutil.h"

static const struct spsim_gemm_geometry serial16 = {100, 64, false};
static const struct spsim_gemm_geometry persistent16 = {100, 64, true};
static const struct spsim_gemm_geometry persistent8 = {100, 128, true};

START_TEST(tiles_and_waves)
{
    /* 1280 × 2560 × 4096 on 100 SMs, serial kernels (a prologue slot per tile): 128×256 gives
     * 10·10 = 100 tiles, one wave of 64 k-blocks + 1: 6400 useful slots of 6500. */
    ck_assert_double_eq_tol(spsim_gemm_shape_efficiency(&serial16, 1280, 2560, 4096, 1),
                            6400.0 / 6500.0, 1e-15);
    /* 1408 × 2560: 128×256 gives 11·10 = 110 tiles (2 waves, 7040 useful of 100·2·65); 256×128
     * gives 6·20 = 120 (edge tiles 1408/1536 full: the same 7040 of 13000); 128×128 gives
     * 11·20 = 220 tiles in 3 waves, 14080 of 100·3·65: the best. */
    ck_assert_double_eq_tol(spsim_gemm_shape_efficiency(&serial16, 1408, 2560, 4096, 1),
                            14080.0 / 19500.0, 1e-15);
    /* A batch multiplies the tiles: 4 × (640 × 640): 128×128 gives 4·25 = 100 tiles, one
     * wave; 640·640·4096·4 / (128·128·64) = 6400 useful of 6500. */
    ck_assert_double_eq_tol(spsim_gemm_shape_efficiency(&serial16, 640, 640, 4096, 4),
                            6400.0 / 6500.0, 1e-15);
}
END_TEST

START_TEST(k_blocks_and_prologue)
{
    /* K = 4100 is 65 k-blocks of 64 (the last one 4/64 full) + the prologue: 66 slots for
     * 4100/64 = 64.0625 useful per tile. */
    ck_assert_double_eq_tol(spsim_gemm_shape_efficiency(&serial16, 1280, 2560, 4100, 1),
                            64.0625 / 66.0, 1e-15);
    /* Persistent kernels pay the prologue once per SM: 128×128 in two waves, 2·64 + 1 slots
     * for 128 useful, better than one wave of 128×256 (64 of 65). */
    ck_assert_double_eq_tol(spsim_gemm_shape_efficiency(&persistent16, 1280, 2560, 4096, 1),
                            128.0 / 129.0, 1e-15);
    /* FP8: k-blocks of 128 elements (128 bytes of K): 32 per tile; two waves of 128×128,
     * 64 of 65 slots. */
    ck_assert_double_eq_tol(spsim_gemm_shape_efficiency(&persistent8, 1280, 2560, 4096, 1),
                            64.0 / 65.0, 1e-15);
    /* Short K: 1280 × 2560 × 128 is 2 k-blocks; serial: 2 of 3 slots per tile whatever the
     * tile; the prologue costs a third. */
    ck_assert_double_eq_tol(spsim_gemm_shape_efficiency(&serial16, 1280, 2560, 128, 1), 2.0 / 3.0,
                            1e-15);
}
END_TEST

START_TEST(split_k_for_small_outputs)
{
    /* 256 × 256 × 8192 on 100 SMs at 50 TFLOP/s per full wave, HBM 1e12 B/s: 4 tiles of
     * 128×128 use 4 SMs. Split 16 ways (at most 16; 16·4 units fill one wave): 128/16 = 8
     * k-blocks + 1 slot, 256·256·8192 / (128·128·64) = 512 useful of 100·9; the fp32 partials,
     * 8 B per output element per split, go through HBM: 8·16·65536 B. */
    uint32_t split = 0;
    double t = spsim_gemm_shape_time(&serial16, 50e12, 1e12, 256, 256, 8192, 1, &split);
    double want = 2.0 * 256 * 256 * 8192 / (50e12 * 512.0 / 900.0) + 8.0 * 16 * 65536 / 1e12;
    ck_assert_uint_eq(split, 16);
    ck_assert_double_eq_tol(t, want, 1e-15);
    /* Unsplit it would take 128 + 1 slots on 4 SMs: 2·256·256·8192 / (50e12·512/12900). */
    ck_assert_double_gt(2.0 * 256 * 256 * 8192 / (50e12 * 512.0 / 12900.0), t);
    /* An output that fills a wave is never split: 1280 × 2560 keeps 100 tiles, split 1. */
    t = spsim_gemm_shape_time(&serial16, 50e12, 1e12, 1280, 2560, 4096, 1, &split);
    ck_assert_uint_eq(split, 1);
    ck_assert_double_eq_tol(t, 2.0 * 1280 * 2560 * 4096 / (50e12 * 6400.0 / 6500.0), 1e-15);
    /* A split keeps at least one k-block per part: K = 128 splits at most 2 ways; 4 tiles ×
     * 2 = 8 units, 1 k-block + 1 slot each, 256·256·128/(128·128·64) = 8 useful of 100·2. */
    t = spsim_gemm_shape_time(&serial16, 50e12, 1e12, 256, 256, 128, 1, &split);
    ck_assert_uint_eq(split, 2);
    ck_assert_double_eq_tol(
        t, 2.0 * 256 * 256 * 128 / (50e12 * 8.0 / 200.0) + 8.0 * 2 * 65536 / 1e12, 1e-15);
}
END_TEST

/* The same GPU with 1 GB/s of HBM (the text "1000" of hbm_achievable_GBps becomes "1e+0"):
 * every GEMM on the roofline. */
static struct spsim_hardware *
slow_hbm(void)
{
    char text[sizeof(testutil_synthetic_hw)];
    memcpy(text, testutil_synthetic_hw, sizeof(text));
    char *v = strstr(text, "\"hbm_achievable_GBps\": {\"value\": 1000");
    ck_assert_ptr_nonnull(v);
    memcpy(v + strlen("\"hbm_achievable_GBps\": {\"value\": "), "1e+0", 4);
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_hardware_parse(text, strlen(text), "synthetic", &hw, &err) == SPSIM_OK,
                  "%s", err.message);
    return hw;
}

static double
gemm_s(const struct spsim_hardware *hw, enum spsim_dtype dtype, uint64_t m, uint64_t n, uint64_t k)
{
    double s = 0;
    ck_assert_int_eq(spsim_gemm_time(hw, dtype, m, n, k, 1, false, &s), SPSIM_OK);
    return s;
}

START_TEST(fp8_gemms_and_the_sustained_clock)
{
    struct spsim_hardware *hw = testutil_synthetic("");
    /* FP8 at its own ceiling (100 TFLOP/s) with k-blocks of 128: 64/65 (see above). */
    double fp8 = 2.0 * 1280 * 2560 * 4096 / (100e12 * 64.0 / 65.0);
    ck_assert_double_eq_tol(gemm_s(hw, SPSIM_DTYPE_FP8, 1280, 2560, 4096), fp8, 1e-15);
    /* Thin K in FP8: 1280 × 2560 × 16 is one k-block + the prologue on two waves of 128×128,
     * 200·16/128 = 25 useful of 100·3 slots = 1/12 (compute 2·1280·2560·16 / 100e12 · 12 =
     * 12.6 µs); the operands are 1 B each, the output 2 B: 1280·16 + 16·2560 + 2·1280·2560
     * bytes = 6.6 µs stay below it. */
    ck_assert_double_eq_tol(gemm_s(hw, SPSIM_DTYPE_FP8, 1280, 2560, 16),
                            2.0 * 1280 * 2560 * 16 / 100e12 * 12.0, 1e-15);
    double bf16 = gemm_s(hw, SPSIM_DTYPE_BF16, 1280, 2560, 4096);
    spsim_hardware_destroy(hw);

    /* Sustained 1500 of a 2000 MHz boost: tensor-core rates × 3/4, GEMMs 4/3 as long. */
    hw = testutil_synthetic("\"sustained_clock\": {\"boost_MHz\": 2000, \"sustained_MHz\": 1500,"
                            " \"source\": \"t\"},");
    ck_assert_double_eq_tol(gemm_s(hw, SPSIM_DTYPE_FP8, 1280, 2560, 4096), fp8 * 4.0 / 3.0, 1e-15);
    ck_assert_double_eq_tol(gemm_s(hw, SPSIM_DTYPE_BF16, 1280, 2560, 4096), bf16 * 4.0 / 3.0,
                            1e-15);
    /* The HBM roofline is not scaled by the clock: an fp32-accumulating 1280 × 2560 × 16
     * weight gradient moves 2·(1280·16 + 16·2560) + 8·1280·2560 bytes, 26.2 µs, above its
     * compute (12.6 µs × 4/3). */
    double s = 0;
    ck_assert_int_eq(spsim_gemm_time(hw, SPSIM_DTYPE_BF16, 1280, 2560, 16, 1, true, &s), SPSIM_OK);
    ck_assert_double_eq_tol(s, (2.0 * (1280 * 16 + 16 * 2560) + 8.0 * 1280 * 2560) / 1e12, 1e-15);
    spsim_hardware_destroy(hw);

    /* On the roofline (1 GB/s), FP8 operands are 1 B per element, the BF16 output 2 B:
     * 1280·4096 + 4096·2560 + 2·1280·2560 bytes; BF16 operands 2 B. */
    hw = slow_hbm();
    ck_assert_double_eq_tol(gemm_s(hw, SPSIM_DTYPE_FP8, 1280, 2560, 4096),
                            (1280.0 * 4096 + 4096.0 * 2560 + 2.0 * 1280 * 2560) / 1e9, 1e-12);
    ck_assert_double_eq_tol(gemm_s(hw, SPSIM_DTYPE_BF16, 1280, 2560, 4096),
                            (2.0 * 1280 * 4096 + 2.0 * 4096 * 2560 + 2.0 * 1280 * 2560) / 1e9,
                            1e-12);
    spsim_hardware_destroy(hw);

    /* Without sustained_MHz (no sourced figure) the measured rates stand. */
    hw = testutil_synthetic("\"sustained_clock\": {\"boost_MHz\": 2000, \"source\": \"t\"},");
    ck_assert_double_eq_tol(gemm_s(hw, SPSIM_DTYPE_FP8, 1280, 2560, 4096), fp8, 1e-15);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(sustained_clock_errors)
{
    static const struct {
        const char *extra, *needle;
    } cases[] = {
        {"\"sustained_clock\": {\"boost_MHz\": 1000, \"sustained_MHz\": 1500, \"source\": \"t\"},",
         "'gpu.sustained_clock.sustained_MHz': must not exceed boost_MHz"},
        {"\"sustained_clock\": {\"sustained_MHz\": 1500, \"source\": \"t\"},",
         "gpu.sustained_clock.boost_MHz"},
        {"\"sustained_clock\": {\"boost_MHz\": 1000},", "gpu.sustained_clock.source"},
        {"\"sustained_clock\": {\"boost_MHz\": 1000, \"source\": \"t\", \"x\": 1},",
         "gpu.sustained_clock.x"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        testutil_synthetic_refused(cases[i].extra, cases[i].needle);
}
END_TEST

START_TEST(sustained_gemm_points)
{
    /* One FP8 GEMM measured under sustained load at 75 TFLOP/s, where the boost-clock model
     * gives it 100·64/65 (its own ceiling, one wave of 64 + 1 slots, see above): the clock
     * ratio is 75·65/6400, at which the model gives the point back, and every tensor-core rate
     * (BF16 too) falls by it. */
    struct spsim_hardware *boost = testutil_synthetic("");
    double bf16 = gemm_s(boost, SPSIM_DTYPE_BF16, 1280, 2560, 4096);
    spsim_hardware_destroy(boost);
    struct spsim_hardware *hw = testutil_synthetic(
        "\"sustained_clock\": {\"gemm\": {\"dtype\": \"fp8\", \"points\": [[1280, 2560, 4096, "
        "75]]}, \"source\": \"t\"},");
    double r = 75.0 * 65.0 / 6400.0, f = 2.0 * 1280 * 2560 * 4096;
    ck_assert_double_eq_tol(hw->clock_scale, r, 1e-12);
    ck_assert_double_eq_tol(gemm_s(hw, SPSIM_DTYPE_FP8, 1280, 2560, 4096), f / 75e12, 1e-15);
    ck_assert_double_eq_tol(gemm_s(hw, SPSIM_DTYPE_BF16, 1280, 2560, 4096), bf16 / r, 1e-15);
    spsim_hardware_destroy(hw);
    /* Two points: the ratio at which the model takes as long over both as measured. K = 8192
     * is 64 FP8 k-blocks on two waves of 128×128, 128 of 129 slots; at 75 and 60 TFLOP/s the
     * measured sum is f/75e12 + 2f/60e12 and the boost-clock one f/(100e12·64/65) +
     * 2f/(100e12·128/129). */
    hw = testutil_synthetic(
        "\"sustained_clock\": {\"gemm\": {\"dtype\": \"fp8\", \"points\": "
        "[[1280, 2560, 4096, 75], [1280, 2560, 8192, 60]]}, \"source\": \"t\"},");
    double at_boost = f / (100e12 * 64.0 / 65.0) + 2.0 * f / (100e12 * 128.0 / 129.0);
    ck_assert_double_eq_tol(hw->clock_scale, at_boost / (f / 75e12 + 2.0 * f / 60e12), 1e-12);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(sustained_gemm_errors)
{
    static const struct {
        const char *extra, *needle;
    } cases[] = {
        {"\"sustained_clock\": {\"boost_MHz\": 2000, \"sustained_MHz\": 1500, \"gemm\": "
         "{\"dtype\": \"fp8\", \"points\": [[1280, 2560, 4096, 75]]}, \"source\": \"t\"},",
         "'gpu.sustained_clock.gemm': give sustained_MHz or gemm, not both"},
        /* 99 TFLOP/s beats the boost-clock model's 98.46 at that shape. */
        {"\"sustained_clock\": {\"gemm\": {\"dtype\": \"fp8\", \"points\": [[1280, 2560, 4096, "
         "99]]}, \"source\": \"t\"},",
         "'gpu.sustained_clock.gemm.points': the points take"},
        {"\"sustained_clock\": {\"gemm\": {\"dtype\": \"fp16\", \"points\": [[1280, 2560, 4096, "
         "9]]}, \"source\": \"t\"},",
         "'gpu.sustained_clock.gemm.dtype': the GPU has no fp16 peak"},
        {"\"sustained_clock\": {\"gemm\": {\"dtype\": \"fp8\", \"points\": [[1280.5, 2560, "
         "4096, 9]]}, \"source\": \"t\"},",
         "'gpu.sustained_clock.gemm.points': row 0: M, N and K must be whole numbers"},
        {"\"sustained_clock\": {\"gemm\": {\"dtype\": \"fp8\", \"points\": [[1280, 2560, 4096, "
         "201]]}, \"source\": \"t\"},",
         "'gpu.sustained_clock.gemm.points': row 0: 201 TFLOP/s exceeds the fp8 peak"},
        {"\"sustained_clock\": {\"gemm\": {\"points\": [[1280, 2560, 4096, 9]]}, \"source\": "
         "\"t\"},",
         "gpu.sustained_clock.gemm.dtype"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        testutil_synthetic_refused(cases[i].extra, cases[i].needle);
}
END_TEST

START_TEST(attention_table_errors)
{
    static const struct {
        const char *extra, *needle;
    } cases[] = {
        {"\"attention_table\": {\"dtype\": \"bf16\", \"source\": \"t\", \"points\": [[128, 128, "
         "1024, 1024, 10, 10]]},",
         "row 0: a window (1024) must be shorter than the sequence (1024)"},
        {"\"attention_table\": {\"dtype\": \"bf16\", \"source\": \"t\", \"points\": [[128.5, 128, "
         "1024, 0, 10, 10]]},",
         "row 0: head dimensions (to 4096), sequence and window (to 1e8) must be whole"},
        {"\"attention_table\": {\"dtype\": \"bf16\", \"source\": \"t\", \"points\": [[128, 128, "
         "1024, 0, 101, 10]]},",
         "row 0: 101 / 10 TFLOP/s exceeds the bf16 peak"},
        {"\"attention_table\": {\"dtype\": \"bf16\", \"source\": \"t\", \"points\": [[128, 128, "
         "0, 0, 10, 10]]},",
         "row 0, column 2 must be a finite number > 0"},
        {"\"attention_table\": {\"dtype\": \"fp8\", \"source\": \"t\", \"points\": [[128, 128, "
         "1024, 0, 10, 10]]},",
         "gpu.attention_table.dtype"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        testutil_synthetic_refused(cases[i].extra, cases[i].needle);
}
END_TEST

/* Seconds the profile's GEMM model gives the four BF16 Fprop shapes of TE's gemm_profiling.rst
 * (hidden 4096, intermediate 16384, M = 15,872 tokens). */
static double
te_fprop_s(const struct spsim_hardware *hw)
{
    return gemm_s(hw, SPSIM_DTYPE_BF16, 15872, 12288, 4096) +
           gemm_s(hw, SPSIM_DTYPE_BF16, 15872, 4096, 4096) +
           gemm_s(hw, SPSIM_DTYPE_BF16, 15872, 16384, 4096) +
           gemm_s(hw, SPSIM_DTYPE_BF16, 15872, 4096, 16384);
}

START_TEST(shipped_clocks)
{
    /* H100: 1950 of 1980 MHz (Megatron-LM README_STRAGGLER.md). */
    struct spsim_hardware *h100 = testutil_hardware("dgx-h100");
    ck_assert_double_eq_tol(h100->clock_scale, 1950.0 / 1980.0, 1e-15);
    spsim_hardware_destroy(h100);
    /* GB200: Azure's steady-state cuBLASLt FP8 16384³, 2,906.9 TFLOP/s. At the boost clock the
     * model gives it MAMF 3,615.6 times its shape efficiency on 148 SMs: 128×128 tiles,
     * 16,384 of them in 111 waves, 128 FP8 k-blocks each and one prologue slot per SM:
     * 16384·128 / (148·(111·128 + 1)) = 2,097,152 / 2,102,932 (the best tile). */
    struct spsim_hardware *gb = testutil_hardware("gb200-nvl72");
    ck_assert_double_eq_tol(gb->clock_scale, 2906.9 / (3615.6 * 2097152.0 / 2102932.0), 1e-9);
    ck_assert_double_eq_tol(gemm_s(gb, SPSIM_DTYPE_FP8, 16384, 16384, 16384),
                            2.0 * 16384.0 * 16384.0 * 16384.0 / 2906.9e12, 1e-12);
    spsim_hardware_destroy(gb);
    /* B300, and B200 on B300's measurement: the four TE shapes take the published 1.071 +
     * 0.307 + 1.393 + 1.426 ms together. */
    static const char *const te[] = {"dgx-b300", "dgx-b200"};
    for (size_t i = 0; i < sizeof(te) / sizeof(te[0]); i++) {
        struct spsim_hardware *hw = testutil_hardware(te[i]);
        ck_assert_double_lt(hw->clock_scale, 0.9);
        ck_assert_double_eq_tol(te_fprop_s(hw), 4.197e-3, 1e-9);
        spsim_hardware_destroy(hw);
    }
    /* Every other shipped GPU has no sourced sustained figure and keeps its measured rates. */
    static const char *const others[] = {"dgx-a100-40g", "dgx-a100-80g", "hgx-h200"};
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        struct spsim_hardware *hw = testutil_hardware(others[i]);
        ck_assert(hw->clock_scale == 1.0);
        spsim_hardware_destroy(hw);
    }
}
END_TEST

static Suite *
gemm_suite(void)
{
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("shape");
    tcase_add_test(tc, tiles_and_waves);
    tcase_add_test(tc, k_blocks_and_prologue);
    tcase_add_test(tc, split_k_for_small_outputs);
    suite_add_tcase(s, tc);
    tc = tcase_create("profile");
    tcase_add_test(tc, fp8_gemms_and_the_sustained_clock);
    tcase_add_test(tc, sustained_clock_errors);
    tcase_add_test(tc, sustained_gemm_points);
    tcase_add_test(tc, sustained_gemm_errors);
    tcase_add_test(tc, attention_table_errors);
    tcase_add_test(tc, shipped_clocks);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(gemm_suite());
}
