/* FP8 as Transformer Engine runs it (engine/fp8.c), worked by hand on the paper's GPT layer
 * (testutil_gpt_shape: GeLU MLP of 4h, LayerNorm, dropout, standard attention, biases) with
 * s = 1280, b = 1, h = 2560, a = 20 (d = 128): sbh = 3,276,800, 5as/h = 50. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/eval.h"
#include "engine/layer.h"
#include "testutil.h"

#define S   1280
#define H   2560
#define A   20
#define SBH (1280.0 * 2560.0)

static struct spsim_model_shape
shape(void)
{
    return testutil_gpt_shape(8, H, A, S, 51200);
}

static struct spsim_parallel
config(enum spsim_dtype dtype, enum spsim_fp8_recipe recipe, uint32_t t)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = t;
    p.sp = t > 1;
    p.dtype = dtype;
    p.fp8_recipe = recipe;
    return p;
}

static struct spsim_result
evaluate(const struct spsim_parallel *p)
{
    struct spsim_model_shape ms = shape();
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_result r;
    struct spsim_error err = {0};
    int rc = spsim_evaluate(m, NULL, p, &r, &err);
    ck_assert_msg(rc == SPSIM_OK, "evaluate: %s", err.message);
    spsim_model_destroy(m);
    return r;
}

START_TEST(saved_inputs_in_fp8)
{
    /* Korthikanti et al. 2022 Table 2, no parallelism: sbh(34 + 5as/h) = 84 sbh in BF16. FP8
     * saves the four linear inputs (QKV sbh, projection sbh, FC1 sbh, FC2 4sbh: 14 sbh in
     * BF16) in 1 B: 7 sbh less, 77 sbh. MXFP8 and blockwise add one scale byte per 32. */
    struct spsim_parallel p = config(SPSIM_DTYPE_BF16, SPSIM_FP8_DELAYED, 1);
    ck_assert_uint_eq(evaluate(&p).memory.activation_modes_bytes[SPSIM_MODE_NONE], 84 * SBH);
    p.dtype = SPSIM_DTYPE_FP8;
    ck_assert_uint_eq(evaluate(&p).memory.activation_modes_bytes[SPSIM_MODE_NONE], 77 * SBH);
    p.fp8_recipe = SPSIM_FP8_CURRENT;
    ck_assert_uint_eq(evaluate(&p).memory.activation_modes_bytes[SPSIM_MODE_NONE], 77 * SBH);
    p.fp8_recipe = SPSIM_FP8_MXFP8;
    ck_assert_uint_eq(evaluate(&p).memory.activation_modes_bytes[SPSIM_MODE_NONE],
                      77 * SBH + 7 * SBH / 32);
    p.fp8_recipe = SPSIM_FP8_BLOCKWISE;
    ck_assert_uint_eq(evaluate(&p).memory.activation_modes_bytes[SPSIM_MODE_NONE],
                      77 * SBH + 7 * SBH / 32);
    /* t = 4 with SP: every term over t, sbh/t·(27 + 5as/h) = 77 sbh/4. */
    p = config(SPSIM_DTYPE_FP8, SPSIM_FP8_DELAYED, 4);
    ck_assert_uint_eq(evaluate(&p).memory.activation_modes_bytes[SPSIM_MODE_TP_SP], 77 * SBH / 4);
}
END_TEST

START_TEST(weight_copies)
{
    /* One stage of 8 layers, t = 1: the linear weights are 12h² per layer (QKV 3h², projection
     * h², FC1 and FC2 4h² each); TE keeps a rowwise and a columnwise FP8 copy, 2 B per
     * weight, beside the BF16 weights; MXFP8 adds its two scale bytes per 32. */
    struct spsim_parallel p = config(SPSIM_DTYPE_BF16, SPSIM_FP8_DELAYED, 1);
    uint64_t bf16 = evaluate(&p).memory.weights_bytes;
    double w = 8.0 * 12 * H * (double)H;
    p.dtype = SPSIM_DTYPE_FP8;
    ck_assert_uint_eq(evaluate(&p).memory.weights_bytes - bf16, 2 * w);
    p.fp8_recipe = SPSIM_FP8_MXFP8;
    ck_assert_uint_eq(evaluate(&p).memory.weights_bytes - bf16, 2 * w + w / 16);
    /* --fp8-param-gather: the FP8 tensors are the weights, no copy beside them. */
    p.fp8_recipe = SPSIM_FP8_DELAYED;
    p.fp8_param_gather = true;
    p.distributed_optimizer = true;
    uint64_t gathered = evaluate(&p).memory.weights_bytes;
    p.dtype = SPSIM_DTYPE_BF16;
    p.fp8_param_gather = false;
    ck_assert_uint_eq(gathered, evaluate(&p).memory.weights_bytes);
}
END_TEST

/* The synthetic profile as a GPU named `model` (spsim_nccl_arch_of reads the name). */
static struct spsim_hardware *
synthetic_gpu(const char *model)
{
    static const char at[] = "\"model\": \"X\"";
    const char *cut = strstr(testutil_synthetic_hw, at);
    char text[sizeof(testutil_synthetic_hw) + 64];
    snprintf(text, sizeof(text), "%.*s\"model\": \"%s\"%s", (int)(cut - testutil_synthetic_hw),
             testutil_synthetic_hw, model, cut + strlen(at));
    return testutil_hardware_text(text);
}

static uint64_t
weights_on(const struct spsim_hardware *hw, const struct spsim_parallel *p)
{
    struct spsim_model_shape ms = shape();
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, p, &r, &err) == SPSIM_OK, "evaluate: %s", err.message);
    spsim_model_destroy(m);
    return r.memory.weights_bytes;
}

/* On Blackwell (compute capability 10.x) TE runs FP8 GEMMs in every layout, so a per-tensor
 * FP8 weight (delayed or current scaling) keeps one 1-B copy for both usages and no transpose
 * (quantizer.cpp:363,375 and :679,689 at TE d0067d0da): the 8 layers' 12h² weights each add
 * w = 8·12·2560² = 629,145,600 B beside BF16, not 2w. Hopper keeps 2w; MXFP8's rowwise and
 * columnwise copies differ in their scales' direction and stay 2w + w/16 on either GPU. */
START_TEST(weight_copies_blackwell)
{
    struct spsim_hardware *b200 = synthetic_gpu("B200"), *h100 = synthetic_gpu("H100");
    struct spsim_parallel p = config(SPSIM_DTYPE_BF16, SPSIM_FP8_DELAYED, 1);
    uint64_t bf16 = weights_on(b200, &p);
    ck_assert_uint_eq(bf16, weights_on(h100, &p));
    double w = 8.0 * 12 * H * (double)H;
    ck_assert_uint_eq((uint64_t)w, 629145600);
    p.dtype = SPSIM_DTYPE_FP8;
    ck_assert_uint_eq(weights_on(b200, &p) - bf16, w);
    ck_assert_uint_eq(weights_on(h100, &p) - bf16, 2 * w);
    p.fp8_recipe = SPSIM_FP8_CURRENT;
    ck_assert_uint_eq(weights_on(b200, &p) - bf16, w);
    ck_assert_uint_eq(weights_on(h100, &p) - bf16, 2 * w);
    p.fp8_recipe = SPSIM_FP8_MXFP8;
    ck_assert_uint_eq(weights_on(b200, &p) - bf16, 2 * w + w / 16);
    ck_assert_uint_eq(weights_on(h100, &p) - bf16, 2 * w + w / 16);
    spsim_hardware_destroy(b200);
    spsim_hardware_destroy(h100);
}
END_TEST

/* A mixture of experts (TESTUTIL_MOE_SHAPE: 2 layers, h 1024, 8 heads of 128, E = 128 experts
 * of f_e = 128, SwiGLU, no shared experts), tp 1, ep 8: each rank's 16 local experts are 16
 * TE GroupedLinear weights, each quantized with its copies (spsim counted one expert of the
 * grouped GEMM before issue 23); the router's [E, h] is a torch matmul outside the FP8
 * autocast (moe_utils.py router_gating_linear) and has none. Delayed: 2 B a weight, per layer
 * QKV 3h² + projection h² + 16 · 3·h·f_e. */
START_TEST(moe_weight_copies)
{
    struct spsim_model_shape ms = {TESTUTIL_MOE_SHAPE};
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_parallel p = config(SPSIM_DTYPE_BF16, SPSIM_FP8_DELAYED, 1);
    p.ep = 8;
    p.dp = 8;
    p.gbs = 8;
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, NULL, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    uint64_t bf16 = r.memory.weights_bytes;
    p.dtype = SPSIM_DTYPE_FP8;
    ck_assert_msg(spsim_evaluate(m, NULL, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    double h = 1024, fe = 128, w = 2 * (4 * h * h + 16 * 3 * h * fe);
    ck_assert_uint_eq(r.memory.weights_bytes - bf16, (uint64_t)(2 * w));
    spsim_model_destroy(m);
}
END_TEST

START_TEST(fp8_parameter_gather)
{
    /* dp 4 with the distributed optimizer, t = 1, one stage of the 8 layers, FP8 delayed: the
     * AllGather of the updated weights moves 3/4 of their bytes per rank, 2 per parameter;
     * with FP8 parameters the 8·12h² linear weights travel at 1 B. */
    struct spsim_model_shape ms = shape();
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_hardware *hw = testutil_synthetic("");
    struct spsim_parallel p = config(SPSIM_DTYPE_FP8, SPSIM_FP8_DELAYED, 1);
    p.dp = 4;
    p.gbs = 4;
    p.distributed_optimizer = true;
    struct spsim_result copies, gathered;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, &p, &copies, &err) == SPSIM_OK, "%s", err.message);
    p.fp8_param_gather = true;
    ck_assert_msg(spsim_evaluate(m, hw, &p, &gathered, &err) == SPSIM_OK, "%s", err.message);
    /* Every count here is a multiple of 4 (h, V and s are), so the 3/4 is exact. */
    uint64_t params = copies.memory.parameters_per_gpu, linear = 8ull * 12 * H * H;
    ck_assert_uint_eq(copies.comm.dp_ag_wire_bytes_per_rank, 3 * (2 * params) / 4);
    ck_assert_uint_eq(gathered.comm.dp_ag_wire_bytes_per_rank, 3 * (2 * params - linear) / 4);
    /* Not overlapped, the exposed DP time is the ReduceScatter plus the AllGather, which on 4
     * GPUs of one NVLink domain takes 5 + 3·1 µs + 3/4·bytes / 200 GB/s (testutil_synthetic_hw):
     * FP8 parameters shorten it by 3/4·8·12h² / 200e9. */
    ck_assert_double_eq_tol(copies.time.dp_exposed_s - gathered.time.dp_exposed_s,
                            0.75 * (double)linear / 200e9, 1e-12);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

static void
build_as(enum spsim_dtype dtype, enum spsim_fp8_recipe recipe, uint32_t t, struct spsim_layer *L)
{
    struct spsim_model_shape ms = shape();
    struct spsim_parallel p = config(dtype, recipe, t);
    struct spsim_layer_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    spsim_layer_config_from(&ms, &p, &cfg);
    spsim_layer_build(&ms, &cfg, L);
}

static void
build(enum spsim_fp8_recipe recipe, uint32_t t, struct spsim_layer *L)
{
    build_as(SPSIM_DTYPE_FP8, recipe, t, L);
}

static void
cast_sums(enum spsim_fp8_recipe recipe, uint32_t t, double *fwd, double *bwd)
{
    static struct spsim_layer L;
    build(recipe, t, &L);
    *fwd = *bwd = 0;
    for (uint32_t i = 0; i < L.nops; i++) {
        *fwd += L.ops[i].cast_fwd_bytes;
        *bwd += L.ops[i].cast_bwd_bytes;
    }
}

START_TEST(cast_bytes_per_recipe)
{
    /* Forward, t = 1: the QKV and FC1 inputs come out of the norm (fused for delayed
     * scaling), the projection input sbh and the FC2 input 4sbh are cast at 4 B each:
     * 20 sbh. Backward: dY of QKV 3sbh, projection sbh, FC1 4sbh, FC2 sbh, 9 sbh at 4 B. */
    double f, b;
    cast_sums(SPSIM_FP8_DELAYED, 1, &f, &b);
    ck_assert_double_eq_tol(f, 20 * SBH, 1e-6);
    ck_assert_double_eq_tol(b, 36 * SBH, 1e-6);
    /* Current scaling: the norm's output quantized after it (4 B on 2 sbh) and an amax pass
     * on the others (6 B on 5 sbh): 38 sbh; dY 9 sbh at 6 B. */
    cast_sums(SPSIM_FP8_CURRENT, 1, &f, &b);
    ck_assert_double_eq_tol(f, 38 * SBH, 1e-6);
    ck_assert_double_eq_tol(b, 54 * SBH, 1e-6);
    /* MXFP8: every input (7 sbh) and dY (9 sbh) at 4 + 2/32 B. */
    cast_sums(SPSIM_FP8_MXFP8, 1, &f, &b);
    ck_assert_double_eq_tol(f, 7 * 4.0625 * SBH, 1e-6);
    ck_assert_double_eq_tol(b, 9 * 4.0625 * SBH, 1e-6);
    /* t = 4 with SP: the column inputs are cast as sequence shards, the row-parallel outputs'
     * dY too: everything over 4. */
    cast_sums(SPSIM_FP8_DELAYED, 4, &f, &b);
    ck_assert_double_eq_tol(f, 20 * SBH / 4, 1e-6);
    ck_assert_double_eq_tol(b, 36 * SBH / 4, 1e-6);
}
END_TEST

/* t = 4 with SP, M = 2sbh: every AllGather of the layer carries ag_bytes, every
 * ReduceScatter BF16 partial sums, 2sbh; forward 2 AG + 2 RS, backward 2 AG (ḡ) + 2 AG (the
 * wgrad re-gathers) + 2 RS (g). */
static void
check_gathers(enum spsim_dtype dtype, uint64_t ag_bytes)
{
    static struct spsim_layer L;
    static struct spsim_schedule sched;
    build_as(dtype, SPSIM_FP8_DELAYED, 4, &L);
    spsim_schedule_build(&L, &sched);
    uint32_t ag = 0, rs = 0;
    for (uint32_t i = 0; i < sched.nsteps; i++) {
        const struct spsim_step *st = &sched.steps[i];
        if (st->coll == SPSIM_COLL_ALL_GATHER) {
            ck_assert_uint_eq(st->message_bytes, ag_bytes);
            ag++;
        } else if (st->coll == SPSIM_COLL_REDUCE_SCATTER) {
            ck_assert_uint_eq(st->message_bytes, 2 * SBH);
            rs++;
        }
    }
    ck_assert_uint_eq(ag, 6);
    ck_assert_uint_eq(rs, 4);
}

START_TEST(fp8_all_gathers)
{
    /* The AllGathers carry FP8, sbh. */
    check_gathers(SPSIM_DTYPE_FP8, SBH);
}
END_TEST

static double
step_s(const struct spsim_block_eval *be, const char *op, enum spsim_pass pass)
{
    for (uint32_t i = 0; i < be->sched.nsteps; i++)
        if (be->sched.steps[i].pass == pass && strcmp(be->sched.steps[i].op->name, op) == 0 &&
            be->sched.steps[i].phase != SPSIM_PHASE_RECOMPUTE)
            return be->cost[i].compute_s;
    ck_abort_msg("no step %s", op);
    return 0;
}

/* The layer at t = 1 in `dtype` on `hw`, timed. */
static const struct spsim_layer_eval *
layer_on(const struct spsim_hardware *hw, enum spsim_dtype dtype)
{
    struct spsim_error err = {0};
    struct spsim_model_shape ms = shape();
    struct spsim_parallel p = config(dtype, SPSIM_FP8_DELAYED, 1);
    struct spsim_layer_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    spsim_layer_config_from(&ms, &p, &cfg);
    static struct spsim_layer_eval le;
    ck_assert_int_eq(spsim_layer_evaluate(&ms, hw, &cfg, 51200, &le, &err), SPSIM_OK);
    return &le;
}

START_TEST(gemm_dtypes_and_cast_time)
{
    /* testutil_synthetic_hw: 100 SMs, bf16 50 TFLOP/s, fp8 100 TFLOP/s, HBM 1000 GB/s. */
    struct spsim_hardware *hw = testutil_synthetic("");
    const struct spsim_layer_eval *le = layer_on(hw, SPSIM_DTYPE_FP8);
    /* The projection, 1280 × 2560 × 2560 in FP8: 128×128 tiles, 200 in two waves of 20
     * k-blocks of 128 + one prologue slot: 4000 useful of 100·41, at 100 TFLOP/s; then the
     * cast of its input, sbh elements at 4 B through 1000 GB/s. Its dgrad (the same shape)
     * casts dY, sbh elements. */
    double gemm = 2.0 * S * H * H / (100e12 * 4000.0 / 4100.0);
    ck_assert_double_eq_tol(
        step_s(&le->layer, "attention projection GEMM (row-parallel)", SPSIM_PASS_FWD),
        gemm + 4 * SBH / 1e12, 1e-15);
    ck_assert_double_eq_tol(
        step_s(&le->layer, "attention projection GEMM (row-parallel)", SPSIM_PASS_DGRAD),
        gemm + 4 * SBH / 1e12, 1e-15);
    /* QKᵀ stays BF16: a batch of 20 of 1280 × 1280 × 128, 128×128 tiles, 2000 in 20 waves of
     * 2 k-blocks of 64 + 1: 4000 useful of 100·41, at 50 TFLOP/s. */
    ck_assert_double_eq_tol(step_s(&le->layer, "QK^T (batched)", SPSIM_PASS_FWD),
                            2.0 * S * S * 128 * A / (50e12 * 4000.0 / 4100.0), 1e-15);
    /* The output layer stays BF16 too (outside TE's FP8 autocast). */
    for (uint32_t i = 0; i < le->output.block.nops; i++)
        ck_assert(!le->output.block.ops[i].fp8);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(fp8_rules)
{
    struct spsim_parallel p = config(SPSIM_DTYPE_BF16, SPSIM_FP8_DELAYED, 1);
    p.fp8_param_gather = true;
    testutil_expect_rule("paper-22b", &p, "field 'fp8_param_gather': FP8 parameters need dtype");
    p.dtype = SPSIM_DTYPE_FP8;
    testutil_expect_rule("paper-22b", &p, "needs the distributed optimizer");
    p.fp8_param_gather = false;
    p.fp8_recipe = SPSIM_FP8_RECIPE_COUNT;
    testutil_expect_rule("paper-22b", &p, "field 'fp8_recipe'");
    enum spsim_fp8_recipe r;
    ck_assert_int_eq(spsim_fp8_recipe_parse("tensorwise", &r), SPSIM_OK);
    ck_assert_int_eq(r, SPSIM_FP8_CURRENT);
    ck_assert_int_eq(spsim_fp8_recipe_parse("mxfp8", &r), SPSIM_OK);
    ck_assert_int_eq(r, SPSIM_FP8_MXFP8);
    ck_assert_int_eq(spsim_fp8_recipe_parse("nvfp4", &r), SPSIM_EINVAL);
    ck_assert_str_eq(spsim_fp8_recipe_name(SPSIM_FP8_BLOCKWISE), "blockwise");
}
END_TEST

START_TEST(megatron_flags)
{
    static const char head[] = "--num-layers 2 --hidden-size 64 --num-attention-heads 4 "
                               "--seq-length 32 --vocab-size 100 --bf16 ";
    static const struct {
        const char *tail;
        enum spsim_dtype dtype;
        enum spsim_fp8_recipe recipe;
        bool gather;
    } cases[] = {
        {"--fp8-format hybrid", SPSIM_DTYPE_FP8, SPSIM_FP8_DELAYED, false}, /* Megatron's default */
        {"--fp8-format e4m3 --fp8-recipe tensorwise --fp8-param-gather "
         "--use-distributed-optimizer",
         SPSIM_DTYPE_FP8, SPSIM_FP8_CURRENT, true},
        {"--fp8-format hybrid --fp8-recipe mxfp8", SPSIM_DTYPE_FP8, SPSIM_FP8_MXFP8, false},
        {"--fp8-format hybrid --fp8-recipe blockwise", SPSIM_DTYPE_FP8, SPSIM_FP8_BLOCKWISE, false},
        /* Without --fp8-format Megatron trains in BF16 and the recipe does nothing. */
        {"--fp8-recipe mxfp8 --fp8-param-gather", SPSIM_DTYPE_BF16, SPSIM_FP8_DELAYED, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text), "%s%s\n", head, cases[i].tail);
        struct spsim_megatron_config mc;
        struct spsim_error err = {0};
        ck_assert_msg(spsim_megatron_parse(text, strlen(text), "l.sh", &mc, &err) == SPSIM_OK, "%s",
                      err.message);
        ck_assert_int_eq(mc.par.dtype, cases[i].dtype);
        ck_assert_int_eq(mc.par.fp8_recipe, cases[i].recipe);
        ck_assert_int_eq(mc.par.fp8_param_gather, cases[i].gather);
        /* Written back, the flags read the same. */
        char out[8192];
        spsim_megatron_format(mc.model, &mc.par, 8, out, sizeof(out));
        struct spsim_megatron_config back;
        ck_assert_msg(spsim_megatron_parse(out, strlen(out), "out.sh", &back, &err) == SPSIM_OK,
                      "%s", err.message);
        ck_assert_int_eq(back.par.fp8_recipe, cases[i].recipe);
        ck_assert_int_eq(back.par.fp8_param_gather, cases[i].gather);
        spsim_model_destroy(back.model);
        spsim_model_destroy(mc.model);
    }
    char bad[512];
    snprintf(bad, sizeof(bad), "%s--fp8-format hybrid --fp8-recipe custom\n", head);
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_megatron_parse(bad, strlen(bad), "l.sh", &mc, &err), SPSIM_EFIELD);
    ck_assert_msg(strstr(err.message, "--fp8-recipe: 'custom' is not modelled"), "%s", err.message);
}
END_TEST

/* Rank's amax all-reduces of one layer at t = 4 with SP (current scaling, NVFP4): each
 * `bytes`, on the critical path, and on testutil_synthetic_hw's 4-GPU NVLink ring 5 µs +
 * 2·3 steps · 1 µs + 2·3/4·bytes / 200 GB/s. Returns how many there are per phase. */
static void
amax_steps(enum spsim_dtype dtype, enum spsim_fp8_recipe recipe, enum spsim_recompute rec,
           uint32_t bytes, uint32_t count[3])
{
    struct spsim_hardware *hw = testutil_synthetic("");
    struct spsim_error err = {0};
    struct spsim_model_shape ms = shape();
    struct spsim_parallel p = config(dtype, recipe, 4);
    p.recompute = rec;
    struct spsim_layer_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    spsim_layer_config_from(&ms, &p, &cfg);
    static struct spsim_layer_eval le;
    ck_assert_int_eq(spsim_layer_evaluate(&ms, hw, &cfg, 51200, &le, &err), SPSIM_OK);
    count[0] = count[1] = count[2] = 0;
    for (uint32_t i = 0; i < le.layer.sched.nsteps; i++) {
        const struct spsim_step *st = &le.layer.sched.steps[i];
        if (st->coll != SPSIM_COLL_ALL_REDUCE)
            continue;
        ck_assert_str_eq(st->coll_operator, "amax");
        ck_assert_uint_eq(st->message_bytes, bytes);
        ck_assert_double_eq_tol(le.layer.cost[i].exposed_comm_s, 11e-6 + 1.5 * bytes / 200e9,
                                1e-15);
        count[st->phase]++;
    }
    spsim_hardware_destroy(hw);
}

START_TEST(amax_all_reduces)
{
    /* Current scaling: one fp32 amax before each quantized AllGather whose tensor TE scales
     * from itself: the QKV and FC1 inputs (forward), the projection and FC2 output gradients
     * (backward); the wgrad re-gathers move the already quantized shard. Full recompute
     * replays the forward's two. NVFP4 coalesces the rowwise and columnwise amax: 8 B. */
    uint32_t n[3];
    amax_steps(SPSIM_DTYPE_FP8, SPSIM_FP8_CURRENT, SPSIM_RECOMPUTE_SELECTIVE, 4, n);
    ck_assert_uint_eq(n[SPSIM_PHASE_FORWARD], 2);
    ck_assert_uint_eq(n[SPSIM_PHASE_BACKWARD], 2);
    ck_assert_uint_eq(n[SPSIM_PHASE_RECOMPUTE], 0);
    amax_steps(SPSIM_DTYPE_FP8, SPSIM_FP8_CURRENT, SPSIM_RECOMPUTE_FULL, 4, n);
    ck_assert_uint_eq(n[SPSIM_PHASE_RECOMPUTE], 2);
    amax_steps(SPSIM_DTYPE_NVFP4, SPSIM_FP8_DELAYED, SPSIM_RECOMPUTE_SELECTIVE, 8, n);
    ck_assert_uint_eq(n[SPSIM_PHASE_FORWARD] + n[SPSIM_PHASE_BACKWARD], 4);
    /* Delayed scaling reduces per pass (dp_time.c), MXFP8 and blockwise scales are local. */
    for (enum spsim_fp8_recipe r = SPSIM_FP8_DELAYED; r < SPSIM_FP8_RECIPE_COUNT; r++) {
        if (r == SPSIM_FP8_CURRENT)
            continue;
        amax_steps(SPSIM_DTYPE_FP8, r, SPSIM_RECOMPUTE_FULL, 0, n);
        ck_assert_uint_eq(n[0] + n[1] + n[2], 0);
    }
}
END_TEST

START_TEST(delayed_amax_allreduces)
{
    /* Delayed scaling, t = 2, dp = 4, one stage of the 8 layers, gbs 8 (2 micro-batches a
     * rank): after each micro-batch's forward one AllReduce over the 8 ranks of TP×DP of 3
     * fp32 amaxes for each of the 4·8 FP8 GEMMs (384 B), after its backward one of 2 (256 B).
     * On testutil_synthetic_hw's 8-GPU NVLink ring each is 5 + 14·1 µs + 2·7/8·bytes / 200
     * GB/s. Current scaling has none of these (its amaxes are per tensor, amax_all_reduces). */
    struct spsim_model_shape ms = shape();
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_hardware *hw = testutil_synthetic("");
    struct spsim_parallel p = config(SPSIM_DTYPE_FP8, SPSIM_FP8_DELAYED, 2);
    p.dp = 4;
    p.gbs = 8;
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    double ar = 2 * (19e-6 + 1.75 * 384 / 200e9) + 2 * (19e-6 + 1.75 * 256 / 200e9);
    ck_assert_double_eq_tol(r.time.fp8_amax_allreduce_s, ar, 1e-15);
    double others = r.time.forward_s + r.time.backward_s + r.time.recompute_s +
                    r.time.tp_exposed_s + r.time.pp_bubble_s + r.time.pp_p2p_s +
                    r.time.dp_exposed_s + r.time.optimizer_s;
    ck_assert_double_eq_tol(r.time.iteration_s - others, ar, 1e-12);
    /* cp 2 (flash attention, which CP needs), dp 2: the same 8 ranks of TP×DP×CP, the same 2
     * micro-batches a rank; attention stays BF16, so the same FP8 GEMMs. */
    p.dp = 2;
    p.cp = 2;
    p.flash_attn = 1;
    p.gbs = 4;
    ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_double_eq_tol(r.time.fp8_amax_allreduce_s, ar, 1e-15);
    p.fp8_recipe = SPSIM_FP8_CURRENT;
    ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert(r.time.fp8_amax_allreduce_s == 0);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/* NVFP4 as Transformer Engine's NVFP4BlockScaling runs it (engine/fp8.c), on the same layer.
 * Per value NVFP4 stores 1/2 B and an E4M3 scale per 16 (1/16 B): 9/16 B (TE
 * docs/features/low_precision_training/nvfp4/nvfp4.rst). */

START_TEST(saved_inputs_in_nvfp4)
{
    /* Korthikanti et al. 2022 Table 2, no parallelism: 84 sbh in BF16, of which the four
     * linear inputs (QKV sbh, projection sbh, FC1 sbh, FC2 4sbh values) are 14 sbh. In NVFP4
     * they take 7 sbh · 9/16: 84 − 14 + 63/16 = 73.9375 sbh. */
    struct spsim_parallel p = config(SPSIM_DTYPE_NVFP4, SPSIM_FP8_DELAYED, 1);
    ck_assert_uint_eq(evaluate(&p).memory.activation_modes_bytes[SPSIM_MODE_NONE], 73.9375 * SBH);
    /* t = 4 with SP: every term over t. */
    p = config(SPSIM_DTYPE_NVFP4, SPSIM_FP8_DELAYED, 4);
    ck_assert_uint_eq(evaluate(&p).memory.activation_modes_bytes[SPSIM_MODE_TP_SP],
                      73.9375 * SBH / 4);
}
END_TEST

/* The NVFP4 copies of one [out, in] weight as TE stores them (pytorch/tensor/nvfp4_tensor.py,
 * NVFP4Quantizer.get_scale_shape and inner_tensor_specs, TE d0067d0), worked here: each usage
 * (rowwise [out, in], columnwise [in, out]) holds its data two values a byte, one E4M3 scale
 * byte per 1×16 block in an array of round_up(rows, 128) × round_up(ceil(cols/16), 4) (also
 * for 2D-quantized weights, whose 16×16 scales repeat over the rows), and one fp32 amax. */
static double
nvfp4_weight(double out, double in)
{
    double r128_out = ceil(out / 128) * 128, r128_in = ceil(in / 128) * 128;
    double row = out * in / 2 + r128_out * ceil(ceil(in / 16) / 4) * 4 + 4;
    double col = in * out / 2 + r128_in * ceil(ceil(out / 16) / 4) * 4 + 4;
    return row + col;
}

START_TEST(nvfp4_weight_copies)
{
    /* 8 layers of 12h² linear weights (h = 2560: every dimension a multiple of 128, so no
     * padding): per weight 2 · (1/2 + 1/16) B = 9/8 B, and 2 amaxes of 4 B for each of the 4
     * linears of a layer: w + w/8 + 8·32 B beside the BF16 weights (spsim counted w + w/128,
     * a scale per 16×16 block, before issue 23). */
    struct spsim_parallel p = config(SPSIM_DTYPE_BF16, SPSIM_FP8_DELAYED, 1);
    uint64_t bf16 = evaluate(&p).memory.weights_bytes;
    double w = 8.0 * 12 * H * (double)H;
    p.dtype = SPSIM_DTYPE_NVFP4;
    ck_assert_uint_eq(evaluate(&p).memory.weights_bytes - bf16, w + w / 8 + 8 * 32);
    /* The same from the per-weight rule: QKV [3h, h], projection [h, h], FC1 [4h, h], FC2
     * [h, 4h]. */
    ck_assert_double_eq(8 * (nvfp4_weight(3 * H, H) + nvfp4_weight(H, H) + nvfp4_weight(4 * H, H) +
                             nvfp4_weight(H, 4 * H)),
                        w + w / 8 + 8 * 32);
}
END_TEST

/* Llama 3 70B at tp 8 (h 8192, 64 heads and 8 KV heads of 128, SwiGLU 28672, 80 layers), one
 * stage: QKV [1280, 8192], projection [8192, 1024], FC1 [7168, 8192], FC2 [8192, 3584] a rank.
 * 80 · (9/8 · 8192 · 13056 + 32) = 9,625,930,240 B, 1.00 GB more than w + w/128 (the issue's
 * figure). And a shape that leaves padding: h = 320, 5 heads of 64, FC 1280: QKV [960, 320]
 * has rowwise scales 1024 × 20 (960 rows padded to 1024) and columnwise 384 × 60. */
START_TEST(nvfp4_weight_copies_padded)
{
    struct spsim_model *m = testutil_model_named("llama3-70b");
    struct spsim_parallel p = config(SPSIM_DTYPE_BF16, SPSIM_FP8_DELAYED, 8);
    p.gbs = 1;
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, NULL, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    uint64_t bf16 = r.memory.weights_bytes;
    p.dtype = SPSIM_DTYPE_NVFP4;
    ck_assert_msg(spsim_evaluate(m, NULL, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(r.memory.weights_bytes - bf16, 9625930240ull);
    ck_assert_double_eq(80 * (nvfp4_weight(1280, 8192) + nvfp4_weight(8192, 1024) +
                              nvfp4_weight(7168, 8192) + nvfp4_weight(8192, 3584)),
                        9625930240.0);
    spsim_model_destroy(m);

    struct spsim_model_shape small = testutil_gpt_shape(2, 320, 5, 128, 1024);
    m = testutil_model(&small);
    p = config(SPSIM_DTYPE_BF16, SPSIM_FP8_DELAYED, 1);
    p.gbs = 1;
    ck_assert_msg(spsim_evaluate(m, NULL, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    bf16 = r.memory.weights_bytes;
    p.dtype = SPSIM_DTYPE_NVFP4;
    ck_assert_msg(spsim_evaluate(m, NULL, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    double qkv = 960 * 320 / 2 + 1024 * 20 + 4 + 320 * 960 / 2 + 384 * 60 + 4;
    ck_assert_double_eq(nvfp4_weight(960, 320), qkv);
    ck_assert_uint_eq(r.memory.weights_bytes - bf16,
                      (uint64_t)(2 * (nvfp4_weight(960, 320) + nvfp4_weight(320, 320) +
                                      nvfp4_weight(1280, 320) + nvfp4_weight(320, 1280))));
    spsim_model_destroy(m);
}
END_TEST

START_TEST(nvfp4_cast_bytes)
{
    /* Every linear input (7 sbh values) and every dY (QKV 3sbh, projection sbh, FC1 4sbh,
     * FC2 sbh: 9 sbh) is read for its amax (with the Hadamard-transformed columnwise amax,
     * 2 B), read again and written into both copies with their scales (2 + 2·9/16): 5.125 B,
     * after the norm as well. With t = 4 and SP the casts are of sequence shards: over 4. */
    static struct spsim_layer L;
    for (uint32_t t = 1; t <= 4; t *= 4) {
        build_as(SPSIM_DTYPE_NVFP4, SPSIM_FP8_DELAYED, t, &L);
        double f = 0, b = 0;
        for (uint32_t i = 0; i < L.nops; i++) {
            f += L.ops[i].cast_fwd_bytes;
            b += L.ops[i].cast_bwd_bytes;
        }
        ck_assert_double_eq_tol(f, 7 * 5.125 * SBH / t, 1e-6);
        ck_assert_double_eq_tol(b, 9 * 5.125 * SBH / t, 1e-6);
    }
}
END_TEST

START_TEST(nvfp4_all_gathers)
{
    /* The AllGathers carry the NVFP4 shard, sbh · 9/16 = 1,843,200 B. */
    check_gathers(SPSIM_DTYPE_NVFP4, 1843200);
}
END_TEST

START_TEST(nvfp4_gemm_rate_and_cast_time)
{
    /* testutil_synthetic_hw: 100 SMs, bf16 50, nvfp4 200 TFLOP/s achieved, HBM 1000 GB/s.
     * The projection, 1280 × 2560 × 2560 in FP4: 128×128 tiles, 200 in two waves of 10
     * k-blocks of 256 (128 B of K) + one prologue slot: 2000 useful of 100·21, at 200 TFLOP/s;
     * then the cast of its input, sbh values at 5.125 B through 1000 GB/s. */
    struct spsim_hardware *hw = testutil_synthetic("");
    const struct spsim_layer_eval *le = layer_on(hw, SPSIM_DTYPE_NVFP4);
    double gemm = 2.0 * S * H * H / (200e12 * 2000.0 / 2100.0);
    const char *proj = "attention projection GEMM (row-parallel)";
    ck_assert_double_eq_tol(step_s(&le->layer, proj, SPSIM_PASS_FWD), gemm + 5.125 * SBH / 1e12,
                            1e-15);
    ck_assert_double_eq_tol(step_s(&le->layer, proj, SPSIM_PASS_DGRAD), gemm + 5.125 * SBH / 1e12,
                            1e-15);
    /* QKᵀ stays BF16 (NVFP4BlockScaling: fp8_dpa off): 20 × 1280 × 1280 × 128 at 50 TFLOP/s,
     * 4000 useful of 100·41 (as test_fp8.c). */
    ck_assert_double_eq_tol(step_s(&le->layer, "QK^T (batched)", SPSIM_PASS_FWD),
                            2.0 * S * S * 128 * A / (50e12 * 4000.0 / 4100.0), 1e-15);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(nvfp4_parameter_gather)
{
    /* As fp8_parameter_gather: dp 4, the distributed optimizer, t = 1, the 8 layers. With
     * --fp4-param-gather the 8·12h² linear weights travel as NVFP4, 1/2 B and a scale byte
     * per 16×16 block: 2 − 1/2 − 1/256 B a weight less than BF16. */
    struct spsim_model_shape ms = shape();
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_parallel p = config(SPSIM_DTYPE_NVFP4, SPSIM_FP8_DELAYED, 1);
    p.dp = 4;
    p.gbs = 4;
    p.distributed_optimizer = true;
    p.fp8_param_gather = true;
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, NULL, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    uint64_t params = r.memory.parameters_per_gpu, linear = 8ull * 12 * H * H;
    ck_assert_uint_eq(r.comm.dp_ag_wire_bytes_per_rank,
                      3 * (2 * params - (linear + linear / 2 - linear / 256)) / 4);
    spsim_model_destroy(m);
}
END_TEST

START_TEST(nvfp4_rules)
{
    /* TE trains NVFP4 on SM 10.0/10.3 only: the H100 profile has no FP4 peak. */
    struct spsim_model *m = testutil_model_named("paper-22b");
    struct spsim_hardware *h100 = testutil_hardware("dgx-h100");
    struct spsim_parallel p = config(SPSIM_DTYPE_NVFP4, SPSIM_FP8_DELAYED, 8);
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_parallel_check(m, h100, &p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, "nvfp4 needs FP4 tensor cores"), "%s", err.message);
    spsim_hardware_destroy(h100);
    spsim_model_destroy(m);
    /* The FP8 recipes and FP8 parameters are FP8's. */
    p.fp8_recipe = SPSIM_FP8_MXFP8;
    testutil_expect_rule("paper-22b", &p, "mxfp8 scaling needs dtype fp8");
    p.fp8_recipe = SPSIM_FP8_DELAYED;
    p.fp8_param_gather = true; /* --fp4-param-gather, which needs sharded parameters too */
    testutil_expect_rule("paper-22b", &p, "needs the distributed optimizer");
    enum spsim_dtype d;
    ck_assert_int_eq(spsim_dtype_parse("nvfp4", &d), SPSIM_OK);
    ck_assert_int_eq(d, SPSIM_DTYPE_NVFP4);
}
END_TEST

START_TEST(nvfp4_megatron_flags)
{
    static const char head[] = "--num-layers 2 --hidden-size 64 --num-attention-heads 4 "
                               "--seq-length 32 --vocab-size 100 --bf16 ";
    static const char *const good[] = {"--fp4-format e2m1", "--fp4-format e2m1 --fp4-recipe nvfp4",
                                       "--fp4-format e2m1 --fp4-param-gather "
                                       "--use-distributed-optimizer"};
    for (size_t i = 0; i < 3; i++) {
        char text[512];
        snprintf(text, sizeof(text), "%s%s\n", head, good[i]);
        struct spsim_megatron_config mc, back;
        struct spsim_error err = {0};
        ck_assert_msg(spsim_megatron_parse(text, strlen(text), "l.sh", &mc, &err) == SPSIM_OK, "%s",
                      err.message);
        ck_assert_int_eq(mc.par.dtype, SPSIM_DTYPE_NVFP4);
        char out[8192];
        spsim_megatron_format(mc.model, &mc.par, 8, out, sizeof(out));
        ck_assert_msg(strstr(out, "--fp4-format e2m1"), "%s", out);
        ck_assert_msg(spsim_megatron_parse(out, strlen(out), "out.sh", &back, &err) == SPSIM_OK,
                      "%s", err.message);
        ck_assert_int_eq(back.par.dtype, SPSIM_DTYPE_NVFP4);
        ck_assert_int_eq(mc.par.fp8_param_gather, i == 2);
        ck_assert_int_eq(back.par.fp8_param_gather, i == 2);
        spsim_model_destroy(back.model);
        spsim_model_destroy(mc.model);
    }
    static const struct {
        const char *tail, *message;
    } bad[] = {
        {"--fp4-format e2m1 --fp4-recipe custom", "--fp4-recipe: 'custom' is not modelled"},
        {"--fp4-format e2m1 --fp8-format hybrid", "--fp4-format: given with --fp8-format"},
        {"--fp4-format e3m0", "--fp4-format: 'e3m0' is not modelled"},
        {"--fp4-param-gather --use-distributed-optimizer",
         "--fp4-param-gather: needs --fp4-format"},
        {"--fp4-format e2m1 --fp8-dot-product-attention", "FP8 attention is not modelled"},
        {"--fp8-format hybrid --fp8-multi-head-attention", "FP8 attention is not modelled"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text), "%s%s\n", head, bad[i].tail);
        struct spsim_megatron_config mc;
        struct spsim_error err = {0};
        ck_assert_int_eq(spsim_megatron_parse(text, strlen(text), "l.sh", &mc, &err), SPSIM_EFIELD);
        ck_assert_msg(strstr(err.message, bad[i].message), "%s", err.message);
    }
}
END_TEST

static Suite *
fp8_suite(void)
{
    Suite *s = suite_create("fp8");
    TCase *tc = tcase_create("te");
    tcase_add_test(tc, saved_inputs_in_fp8);
    tcase_add_test(tc, weight_copies);
    tcase_add_test(tc, weight_copies_blackwell);
    tcase_add_test(tc, fp8_parameter_gather);
    tcase_add_test(tc, cast_bytes_per_recipe);
    tcase_add_test(tc, fp8_all_gathers);
    tcase_add_test(tc, gemm_dtypes_and_cast_time);
    tcase_add_test(tc, fp8_rules);
    tcase_add_test(tc, megatron_flags);
    tcase_add_test(tc, amax_all_reduces);
    tcase_add_test(tc, delayed_amax_allreduces);
    tcase_add_test(tc, saved_inputs_in_nvfp4);
    tcase_add_test(tc, nvfp4_weight_copies);
    tcase_add_test(tc, nvfp4_weight_copies_padded);
    tcase_add_test(tc, moe_weight_copies);
    tcase_add_test(tc, nvfp4_cast_bytes);
    tcase_add_test(tc, nvfp4_all_gathers);
    tcase_add_test(tc, nvfp4_gemm_rate_and_cast_time);
    tcase_add_test(tc, nvfp4_parameter_gather);
    tcase_add_test(tc, nvfp4_rules);
    tcase_add_test(tc, nvfp4_megatron_flags);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(fp8_suite());
}
