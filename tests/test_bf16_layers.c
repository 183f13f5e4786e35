/* FP8 training with the first and last decoder layers in BF16 (engine/bf16_layers.c; Megatron-Core
 * --first-last-layers-bf16, fp8_utils.py is_first_last_bf16_layer), worked by hand on the paper's
 * GPT layer (testutil_gpt_shape: GeLU MLP of 4h, LayerNorm, dropout, standard attention) with
 * s = 1280, b = 1, h = 2560, a = 20, t = 1, FP8 current scaling (Megatron refuses delayed):
 * sbh = 3,276,800. Four layers over pp 2: rank 0 builds layers 0 and 1, rank 1 layers 2 and 3,
 * so with N = M = 1 each rank holds one BF16 layer and one FP8 layer. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/eval.h"
#include "engine/layer.h"
#include "engine/stages.h"
#include "spsim/megatron.h"
#include "testutil.h"

#define S   1280
#define H   2560
#define A   20
#define SBH (1280.0 * 2560.0)

static struct spsim_model_shape
shape(uint32_t layers)
{
    return testutil_gpt_shape(layers, H, A, S, 51200);
}

static struct spsim_parallel
config(uint32_t pp, uint32_t start, uint32_t end)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.pp = pp;
    p.gbs = 4; /* four micro-batches: both ranks' 1F1B warm-ups are full */
    p.dtype = SPSIM_DTYPE_FP8;
    p.fp8_recipe = SPSIM_FP8_CURRENT;
    p.first_last_layers_bf16 = start || end;
    p.bf16_layers_start = start;
    p.bf16_layers_end = end;
    return p;
}

static struct spsim_result
evaluate(const struct spsim_hardware *hw, uint32_t layers, const struct spsim_parallel *p)
{
    struct spsim_model_shape ms = shape(layers);
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, p, &r, &err) == SPSIM_OK, "evaluate: %s", err.message);
    spsim_model_destroy(m);
    return r;
}

/* The plan of `layers` over pp·vpp (or a layout) with N, M BF16 layers; chunk c of rank r's
 * BF16 layers must be want[c·p + r]. */
static void
check_counts(uint32_t layers, uint32_t pp, uint32_t vpp, const char *layout, uint32_t n, uint32_t m,
             const uint32_t *want)
{
    struct spsim_model_shape ms = shape(layers);
    struct spsim_parallel p = config(pp, n, m);
    p.vpp = vpp;
    p.pipeline_layout = layout;
    struct spsim_stage_plan pl;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_stage_plan_make(&ms, &p, &pl, &err) == SPSIM_OK, "%s", err.message);
    pl.bf16_start = n;
    pl.bf16_end = m;
    for (uint32_t c = 0; c < pl.v; c++)
        for (uint32_t r = 0; r < pp; r++)
            ck_assert_msg(spsim_stage_chunk_bf16_layers(&pl, layers, r, c) == want[c * pp + r],
                          "L %u pp %u vpp %u: chunk %u of rank %u has %u, not %u", layers, pp, vpp,
                          c, r, spsim_stage_chunk_bf16_layers(&pl, layers, r, c), want[c * pp + r]);
}

START_TEST(bf16_layers_by_global_index)
{
    /* pp 2: layers {0, 1} | {2, 3}; N = M = 1 puts layer 0 on rank 0 and layer 3 on rank 1. */
    check_counts(4, 2, 1, NULL, 1, 1, (const uint32_t[]){1, 1});
    /* N = 2, M = 0: both of rank 0's, none of rank 1's. */
    check_counts(4, 2, 1, NULL, 2, 0, (const uint32_t[]){2, 0});
    /* pp 2, vpp 2, 8 layers: virtual stages (r0 c0) {0, 1}, (r1 c0) {2, 3}, (r0 c1) {4, 5},
     * (r1 c1) {6, 7} (get_transformer_layer_offset). N = 3 reaches rank 1's first chunk; M = 1
     * is layer 7 on rank 1's second chunk: rank 1 holds two BF16 layers, rank 0 two. */
    check_counts(8, 2, 2, NULL, 3, 1, (const uint32_t[]){2, 1, 0, 1});
    /* A layout "Ettt|tL": rank 0 builds layers 0-2, rank 1 layer 3; N = M = 2 is layers 0, 1
     * and 2, 3: all three of rank 0's. */
    check_counts(4, 2, 1, "Ettt|tL", 2, 2, (const uint32_t[]){3, 1});
    /* NVFP4 has no range check: N + M beyond the model counts each layer once. */
    check_counts(4, 2, 1, NULL, 3, 3, (const uint32_t[]){2, 2});
    ck_assert_uint_eq(spsim_bf16_layers_total(4, 3, 3), 4);
    ck_assert_uint_eq(spsim_bf16_layers_total(8, 3, 1), 4);
}
END_TEST

/*
 * The synthetic GEMM model (testutil_synthetic_hw, as test_fp8.c gemm_dtypes_and_cast_time
 * works it): 128×128 output tiles over 100 SMs in waves, the K loop in blocks of 128 bytes
 * (64 BF16 values, 128 FP8 ones) plus one prologue slot: useful tiles·kb of 100·(waves·kb + 1)
 * slots at the dtype's achieved rate (BF16 50, FP8 100 TFLOP/s).
 */
static double
gemm_s(double m, double n, double k, bool fp8)
{
    double tiles = ceil(m / 128) * ceil(n / 128), waves = ceil(tiles / 100);
    double kb = k / (fp8 ? 128 : 64), rate = fp8 ? 100e12 : 50e12;
    return 2 * m * n * k / (rate * tiles * kb / (100 * (waves * kb + 1)));
}

/* The four linears (QKV 3h, projection h, FC1 4h, FC2 back to h): fprop Y[s, n] = X[s, k]·Wᵀ,
 * dgrad dX[s, k] = dY[s, n]·W, wgrad dW[n, k] = dYᵀ·X over s. */
static const double linear_nk[4][2] = {{3 * H, H}, {H, H}, {4 * H, H}, {H, 4 * H}};

static double
fprop_s(bool fp8)
{
    double t = 0;
    for (int i = 0; i < 4; i++)
        t += gemm_s(S, linear_nk[i][0], linear_nk[i][1], fp8);
    return t;
}

static double
dgrad_wgrad_s(bool fp8)
{
    double t = 0;
    for (int i = 0; i < 4; i++)
        t += gemm_s(S, linear_nk[i][1], linear_nk[i][0], fp8) +
             gemm_s(linear_nk[i][0], linear_nk[i][1], S, fp8);
    return t;
}

static const struct spsim_layer_eval *
layer_on(const struct spsim_hardware *hw)
{
    struct spsim_error err = {0};
    struct spsim_model_shape ms = shape(4);
    struct spsim_parallel p = config(2, 1, 1);
    struct spsim_layer_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    spsim_layer_config_from(&ms, &p, &cfg);
    ck_assert(cfg.bf16_ends);
    static struct spsim_layer_eval le;
    ck_assert_int_eq(spsim_layer_evaluate(&ms, hw, &cfg, 51200, &le, &err), SPSIM_OK);
    return &le;
}

START_TEST(bf16_layer_block)
{
    struct spsim_hardware *hw = testutil_synthetic("");
    const struct spsim_layer_eval *le = layer_on(hw);
    ck_assert(le->has_dense);
    /* Korthikanti et al. 2022 Table 2, no parallelism: sbh(34 + 5as/h) = 84 sbh in BF16; the
     * FP8 layer saves its four linear inputs (14 sbh in BF16) in 1 B: 77 sbh. */
    ck_assert_uint_eq(le->dense.saved_bytes, 84 * SBH);
    ck_assert_uint_eq(le->layer.saved_bytes, 77 * SBH);
    /* No quantized GEMM, no cast kernel in the BF16 layer. */
    double casts = 0;
    for (uint32_t i = 0; i < le->dense.block.nops; i++) {
        ck_assert(!le->dense.block.ops[i].fp8);
        casts += le->dense.block.ops[i].cast_fwd_bytes + le->dense.block.ops[i].cast_bwd_bytes;
    }
    ck_assert(casts == 0);
    /* Forward: the four fprop GEMMs at the BF16 rate instead of FP8, and the current-scaling
     * casts the FP8 layer runs and this one skips: the norms' outputs quantized after them
     * (4 B on 2 sbh) and an amax pass with the cast on the projection and FC2 inputs (6 B on
     * 5 sbh), 38 sbh through 1000 GB/s. Backward: dgrad and wgrad at the BF16 rate, and the dY
     * casts (QKV 3 sbh, projection sbh, FC1 4 sbh, FC2 sbh at 6 B: 54 sbh). */
    ck_assert_double_eq_tol(le->dense.fwd_compute_s - le->layer.fwd_compute_s,
                            fprop_s(false) - fprop_s(true) - 38 * SBH / 1e12, 1e-12);
    ck_assert_double_eq_tol(le->dense.bwd_compute_s - le->layer.bwd_compute_s,
                            dgrad_wgrad_s(false) - dgrad_wgrad_s(true) - 54 * SBH / 1e12, 1e-12);
    /* The projection alone, 1280 × 2560 × 2560 in BF16: 200 tiles in 2 waves of 40 k-blocks of
     * 64 + 1: 8000 useful of 100·81, at 50 TFLOP/s. */
    double proj = 2.0 * S * H * H / (50e12 * 8000.0 / 8100.0);
    ck_assert_double_eq_tol(gemm_s(S, H, H, false), proj, 1e-18);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(each_rank_its_own_mix)
{
    struct spsim_hardware *hw = testutil_synthetic("");
    struct spsim_parallel p = config(2, 1, 1);
    struct spsim_result bf = evaluate(hw, 4, &p);
    p.first_last_layers_bf16 = false;
    struct spsim_result q = evaluate(hw, 4, &p);
    /* Activations (1F1B, 4 micro-batches): rank 0 holds 2 in flight of its 2 layers, rank 1
     * one; one of each rank's layers saves 84 sbh instead of 77. */
    ck_assert_uint_eq(bf.memory.activation_first_stage_bytes -
                          q.memory.activation_first_stage_bytes,
                      2 * 7 * SBH);
    ck_assert_uint_eq(bf.memory.activation_last_stage_bytes - q.memory.activation_last_stage_bytes,
                      7 * SBH);
    /* TE's FP8 weight copies: rowwise and columnwise, 2 B for each of a layer's 12h² linear
     * weights; the peak rank (0: the embedding, more activations) keeps one layer's fewer. */
    ck_assert_uint_eq(q.memory.peak_stage, 0);
    ck_assert_uint_eq(bf.memory.peak_stage, 0);
    ck_assert_uint_eq(q.memory.weights_bytes - bf.memory.weights_bytes, 2 * 12.0 * H * H);
    /* Time: the critical rank (the last: the output layer) runs one BF16 layer instead of an
     * FP8 one in each of the 4 micro-batches. */
    ck_assert_uint_eq(bf.time.critical_stage, q.time.critical_stage);
    ck_assert_double_eq_tol(bf.time.forward_s - q.time.forward_s,
                            4 * (fprop_s(false) - fprop_s(true) - 38 * SBH / 1e12), 1e-11);
    ck_assert_double_eq_tol(bf.time.backward_s - q.time.backward_s,
                            4 * (dgrad_wgrad_s(false) - dgrad_wgrad_s(true) - 54 * SBH / 1e12),
                            1e-11);
    /* N = 2, M = 0: both BF16 layers on rank 0 (2 in flight), none on rank 1; rank 0 keeps
     * no FP8 copy at all, rank 1 both of its layers' (48h²). Rank 1 less rank 0: activations
     * 2·77 sbh + the output block's 4 sbh + 4·s·v (fp32 logits) + 2·s·v (16-bit logits at the
     * loss) against 2·2·84 sbh + 2 sbh (dropout masks); parameters rank 0's s·h positions
     * against rank 1's 2h final LayerNorm, 18·(sh − 2h) = 18·3,271,680:
     * −180·3,276,800 + 6·1280·51200 + 48·2560² − 58,890,240 = 59,074,560 B > 0, so the peak is
     * rank 1 (without the 16-bit logits, 2·s·v = 131,072,000 B, it would be rank 0). */
    p = config(2, 2, 0);
    bf = evaluate(hw, 4, &p);
    ck_assert_uint_eq(bf.memory.activation_first_stage_bytes -
                          q.memory.activation_first_stage_bytes,
                      2 * 2 * 7 * SBH);
    ck_assert_uint_eq(bf.memory.activation_last_stage_bytes, q.memory.activation_last_stage_bytes);
    ck_assert_uint_eq(bf.memory.peak_stage, 1);
    /* Both peak ranks keep 48h² of FP8 copies: their weights differ by 2·(sh − 2h). */
    ck_assert_uint_eq(q.memory.weights_bytes - bf.memory.weights_bytes, 2 * (S * H - 2 * H));
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(middle_rank_critical)
{
    /* pp 3, vpp 2, 12 layers: virtual stages of 2 layers in c·p + r order, (r0 c0) {0, 1},
     * (r1 c0) {2, 3}, (r2 c0) {4, 5}, (r0 c1) {6, 7}, (r1 c1) {8, 9}, (r2 c1) {10, 11}. N = M = 4
     * (layers 0-3 and 8-11) makes all four of rank 1's layers BF16 and two of each other rank's.
     * With a vocabulary of 512 the embedding and output layer weigh next to nothing: the middle
     * rank sets the pace, four BF16 layers in each of the 6 micro-batches' forwards. */
    struct spsim_hardware *hw = testutil_synthetic("");
    struct spsim_model_shape ms = testutil_gpt_shape(12, H, A, S, 512);
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_parallel p = config(3, 4, 4);
    p.vpp = 2;
    p.gbs = 6;
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(r.time.critical_stage, 1);
    const struct spsim_layer_eval *le = layer_on(hw);
    ck_assert_double_eq_tol(r.time.forward_s, 6 * 4 * le->dense.fwd_compute_s, 1e-12);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(fp8_parameters_of_bf16_layers)
{
    /* --fp8-param-gather, dp 4, pp 1, 4 layers, N = M = 1: the distributed optimizer's
     * AllGather moves 3/4 of the weights per rank, the two FP8 layers' 12h² linear weights at
     * 1 B, the two BF16 layers' at 2 B (fp8_model_init is skipped for them). */
    struct spsim_hardware *hw = testutil_synthetic("");
    struct spsim_parallel p = config(1, 1, 1);
    p.dp = 4;
    p.gbs = 4;
    p.distributed_optimizer = true;
    p.fp8_param_gather = true;
    struct spsim_result r = evaluate(hw, 4, &p);
    uint64_t params = r.memory.parameters_per_gpu, linear = 12ull * H * H;
    ck_assert_uint_eq(r.comm.dp_ag_wire_bytes_per_rank, 3 * (2 * params - 2 * linear) / 4);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(megatron_rules)
{
    struct spsim_model_shape ms = shape(4);
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_error err = {0};
    struct spsim_parallel p = config(2, 1, 1);
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_OK);
    /* transformer_config.py __post_init__ (messages verbatim). */
    p.fp8_recipe = SPSIM_FP8_DELAYED;
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, "Delayed scaling does not support first / last layer in "
                                      "BF16."),
                  "%s", err.message);
    p = config(2, 3, 1);
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, "num_layers_at_start_in_bf16 (3) must be between 0 and "
                                      "number of layers per pipeline stage (2)."),
                  "%s", err.message);
    p = config(2, 0, 3);
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, "num_layers_at_end_in_bf16 (3)"), "%s", err.message);
    /* NVFP4 (config.fp4) has neither check. */
    p = config(2, 3, 3);
    p.dtype = SPSIM_DTYPE_NVFP4;
    p.fp8_recipe = SPSIM_FP8_DELAYED;
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_OK);
    /* spsim's limits. */
    p = config(2, 1, 1);
    p.recompute = SPSIM_RECOMPUTE_FULL;
    p.recompute_method = SPSIM_RECOMPUTE_METHOD_BLOCK;
    p.recompute_layers = 1;
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, "not modelled"), "%s", err.message);
    spsim_model_destroy(m);
    p = config(2, 1, 1);
    testutil_expect_rule("mixtral-8x7b", &p, "BF16 layers in a mixture-of-experts model");
    /* BF16 training: Megatron ignores the flag, and so does spsim. */
    struct spsim_hardware *hw = testutil_synthetic("");
    p = config(2, 1, 1);
    p.dtype = SPSIM_DTYPE_BF16;
    p.fp8_recipe = SPSIM_FP8_DELAYED;
    struct spsim_result on = evaluate(hw, 4, &p);
    p.first_last_layers_bf16 = false;
    struct spsim_result off = evaluate(hw, 4, &p);
    ck_assert(on.time.iteration_s == off.time.iteration_s);
    ck_assert_uint_eq(on.memory.total_bytes, off.memory.total_bytes);
    spsim_hardware_destroy(hw);
}
END_TEST

static struct spsim_parallel
parsed(const char *tail, const char *origin)
{
    char text[512];
    snprintf(text, sizeof(text),
             "--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 32 "
             "--vocab-size 100 --bf16 --fp8-format hybrid --fp8-recipe tensorwise %s\n",
             tail);
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_parse(text, strlen(text), origin, &mc, &err) == SPSIM_OK, "%s",
                  err.message);
    /* Written back, the flags read the same. */
    char out[8192];
    spsim_megatron_format(mc.model, &mc.par, 8, out, sizeof(out));
    struct spsim_megatron_config back;
    ck_assert_msg(spsim_megatron_parse(out, strlen(out), "out.sh", &back, &err) == SPSIM_OK, "%s",
                  err.message);
    ck_assert_int_eq(back.par.first_last_layers_bf16, mc.par.first_last_layers_bf16);
    ck_assert_uint_eq(back.par.bf16_layers_start, mc.par.bf16_layers_start);
    ck_assert_uint_eq(back.par.bf16_layers_end, mc.par.bf16_layers_end);
    spsim_model_destroy(back.model);
    spsim_model_destroy(mc.model);
    return mc.par;
}

START_TEST(megatron_flags)
{
    /* Megatron's defaults: 1 and 1 (transformer_config.py). */
    struct spsim_parallel p = parsed("--first-last-layers-bf16", "l.sh");
    ck_assert(p.first_last_layers_bf16);
    ck_assert_uint_eq(p.bf16_layers_start, 1);
    ck_assert_uint_eq(p.bf16_layers_end, 1);
    p = parsed("--first-last-layers-bf16 --num-layers-at-start-in-bf16 0 "
               "--num-layers-at-end-in-bf16 2",
               "l.sh");
    ck_assert_uint_eq(p.bf16_layers_start, 0);
    ck_assert_uint_eq(p.bf16_layers_end, 2);
    p = parsed("", "l.sh");
    ck_assert(!p.first_last_layers_bf16);
}
END_TEST

START_TEST(bridge_recipe)
{
    /* A Megatron-Bridge recipe: MixedPrecisionConfig's counts default to 0 and overwrite the
     * model's (training/mixed_precision.py); the GPT-OSS NVFP4 perf recipe sets 0 and 4. */
    static const char yaml[] = "model:\n"
                               "  num_layers: 8\n"
                               "  hidden_size: 64\n"
                               "  num_attention_heads: 4\n"
                               "  seq_length: 32\n"
                               "  vocab_size: 100\n"
                               "mixed_precision:\n"
                               "  bf16: true\n"
                               "  fp8: hybrid\n"
                               "  fp8_recipe: tensorwise\n"
                               "  first_last_layers_bf16: true\n"
                               "  num_layers_at_end_in_bf16: 4\n";
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_parse(yaml, strlen(yaml), "r.yaml", &mc, &err) == SPSIM_OK, "%s",
                  err.message);
    ck_assert(mc.par.first_last_layers_bf16);
    ck_assert_uint_eq(mc.par.bf16_layers_start, 0);
    ck_assert_uint_eq(mc.par.bf16_layers_end, 4);
    spsim_model_destroy(mc.model);
}
END_TEST

static Suite *
bf16_layers_suite(void)
{
    Suite *s = suite_create("bf16_layers");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, bf16_layers_by_global_index);
    tcase_add_test(tc, bf16_layer_block);
    tcase_add_test(tc, each_rank_its_own_mix);
    tcase_add_test(tc, middle_rank_critical);
    tcase_add_test(tc, fp8_parameters_of_bf16_layers);
    tcase_add_test(tc, megatron_rules);
    tcase_add_test(tc, megatron_flags);
    tcase_add_test(tc, bridge_recipe);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(bf16_layers_suite());
}
