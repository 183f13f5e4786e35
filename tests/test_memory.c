/*
 * The memory engine against the closed forms of Korthikanti et al. 2022 (Table 2, §4.2.3,
 * §4.3, §5), computed here independently of the engine in 128-bit integers.
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

typedef unsigned __int128 u128;

struct shape {
    uint32_t h, a, s, b, t;
};

/* Table 2, bytes per layer, exact. The divisions are exact because a and h are multiples of
 * t and (for SP) s is too. */
static void
table2(const struct shape *x, u128 out[SPSIM_MODE_COUNT])
{
    u128 sbh = (u128)x->s * x->b * x->h;
    u128 as2b = (u128)x->a * x->s * x->s * x->b;
    out[SPSIM_MODE_NONE] = sbh * 34 + 5 * as2b; /* sbh(34 + 5as/h) */
    out[SPSIM_MODE_TP] =
        sbh * 10 + 24 * sbh / x->t + 5 * as2b / x->t;          /* sbh(10 + 24/t + 5as/(ht)) */
    out[SPSIM_MODE_TP_SP] = 34 * sbh / x->t + 5 * as2b / x->t; /* sbh(34/t + 5as/(ht)) */
    out[SPSIM_MODE_TP_SELECTIVE] = sbh * 10 + 24 * sbh / x->t; /* sbh(10 + 24/t) */
    out[SPSIM_MODE_TP_SP_SELECTIVE] = 34 * sbh / x->t;         /* 34sbh/t */
    out[SPSIM_MODE_FULL] = 2 * sbh;                            /* 2sbh */
}

static const struct shape shapes[] = {
    {6144, 64, 2048, 4, 8},    /* paper 22B, Table 3 (b = 4) */
    {12288, 96, 2048, 1, 8},   /* 175B */
    {20480, 128, 2048, 1, 8},  /* 530B */
    {25600, 160, 2048, 1, 8},  /* 1T */
    {12288, 96, 3072, 2, 3},   /* odd t */
    {25600, 160, 4000, 3, 5},  /* odd t, odd b */
    {12288, 96, 2048, 1, 1},   /* t = 1: every row collapses to no parallelism */
    {8192, 64, 1048576, 1, 8}, /* s = 2^20: the s² term alone is 3.5e14 bytes */
    {16384, 128, 262144, 16, 16},
};

static void
evaluate(const struct shape *x, enum spsim_recompute rec, bool sp, struct spsim_result *r)
{
    struct spsim_model_shape ms = testutil_gpt_shape(8, x->h, x->a, x->s, 51200);
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = x->t;
    p.sp = sp && x->t > 1;
    p.recompute = rec;
    p.mbs = x->b;
    p.gbs = x->b;
    struct spsim_error err = {0};
    int rc = spsim_evaluate(m, NULL, &p, r, &err);
    ck_assert_msg(rc == SPSIM_OK, "evaluate: %s", err.message);
    spsim_model_destroy(m);
}

static void
check_u128(const char *what, const struct shape *x, uint64_t got, u128 want)
{
    ck_assert_msg((u128)got == want, "%s (h=%u a=%u s=%u b=%u t=%u): got %llu, want %llu", what,
                  x->h, x->a, x->s, x->b, x->t, (unsigned long long)got, (unsigned long long)want);
}

START_TEST(table2_rows_match_closed_forms)
{
    const struct shape *x = &shapes[_i];
    struct spsim_result r;
    evaluate(x, SPSIM_RECOMPUTE_NONE, false, &r);
    u128 want[SPSIM_MODE_COUNT];
    table2(x, want);
    for (int mode = 0; mode < SPSIM_MODE_COUNT; mode++)
        check_u128(spsim_act_mode_name(mode), x, r.memory.activation_modes_bytes[mode], want[mode]);
}
END_TEST

START_TEST(selected_mode_matches_its_row)
{
    const struct shape *x = &shapes[_i];
    static const struct {
        bool sp;
        enum spsim_recompute rec;
        int mode;
    } cases[] = {{false, SPSIM_RECOMPUTE_NONE, SPSIM_MODE_TP},
                 {true, SPSIM_RECOMPUTE_NONE, SPSIM_MODE_TP_SP},
                 {false, SPSIM_RECOMPUTE_SELECTIVE, SPSIM_MODE_TP_SELECTIVE},
                 {true, SPSIM_RECOMPUTE_SELECTIVE, SPSIM_MODE_TP_SP_SELECTIVE},
                 {false, SPSIM_RECOMPUTE_FULL, SPSIM_MODE_FULL}};
    u128 want[SPSIM_MODE_COUNT];
    table2(x, want);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (cases[i].sp && x->t == 1)
            continue;
        struct spsim_result r;
        evaluate(x, cases[i].rec, cases[i].sp, &r);
        check_u128(spsim_act_mode_name(cases[i].mode), x, r.memory.activation_per_layer_bytes,
                   want[cases[i].mode]);
    }
}
END_TEST

START_TEST(full_recompute_with_sp_keeps_the_input_shard)
{
    /* With SP the checkpointed layer input is already [s/t, b, h]: 2sbh/t. */
    const struct shape x = {12288, 96, 2048, 1, 8};
    struct spsim_result r;
    evaluate(&x, SPSIM_RECOMPUTE_FULL, true, &r);
    ck_assert_uint_eq(r.memory.activation_per_layer_bytes, 2ull * 2048 * 12288 / 8);
}
END_TEST

START_TEST(flash_attention_drops_the_s2_terms)
{
    /* 34sbh/t (TP+SP) plus FlashAttention-2's fp32 log-sum-exp, b·(a/t)·s·4 bytes. */
    struct spsim_model_shape ms = testutil_gpt_shape(8, 12288, 96, 2048, 51200);
    ms.attention = SPSIM_ATTENTION_FLASH;
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 8;
    p.sp = true;
    struct spsim_result r;
    ck_assert_int_eq(spsim_evaluate(m, NULL, &p, &r, NULL), SPSIM_OK);
    uint64_t sbh = 2048ull * 12288;
    ck_assert_uint_eq(r.memory.activation_per_layer_bytes, 34 * sbh / 8 + 96 / 8 * 2048ull * 4);
    spsim_model_destroy(m);
}
END_TEST

START_TEST(llama_layer_inventory)
{
    /* Llama-style layer, derived by hand (tensors in layer.c's table): s=4096, b=1, h=8192,
     * a=64, kv=8, d=128, ffn=28672, t=8, SP, no dropout, RMSNorm, SwiGLU, RoPE, flash.
     * SP region: 2 norm inputs + 2 GEMM-input shards = 4 · s/t·b·h · 2 B;
     * TP region: Q+K (h + kv·d)/t, V kv·d/t, projection input h/t (2 B each), SwiGLU input
     * 2·ffn/t and FC2 input ffn/t (2 B each), log-sum-exp a/t·s fp32. */
    struct spsim_model_shape ms = {.layers = 8,
                                   .hidden = 8192,
                                   .heads = 64,
                                   .kv_heads = 8,
                                   .head_dim = 128,
                                   .ffn_hidden = 28672,
                                   .vocab = 32000,
                                   .seq_len = 4096,
                                   .mlp = SPSIM_MLP_SWIGLU,
                                   .norm = SPSIM_NORM_RMSNORM,
                                   .dropout = false,
                                   .attention = SPSIM_ATTENTION_FLASH,
                                   .position = SPSIM_POSITION_ROPE,
                                   .linear_bias = false,
                                   .tied_embeddings = false};
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 8;
    p.sp = true;
    struct spsim_result r;
    ck_assert_int_eq(spsim_evaluate(m, NULL, &p, &r, NULL), SPSIM_OK);
    uint64_t s = 4096, h = 8192, kvd = 8 * 128, ffn = 28672, t = 8;
    uint64_t want = 4 * (s / t) * h * 2                                       /* SP region */
                    + s * (h + kvd) / t * 2 + s * kvd / t * 2 + s * h / t * 2 /* attention */
                    + s * 2 * ffn / t * 2 + s * ffn / t * 2                   /* MLP */
                    + 64 / t * s * 4;                                         /* LSE */
    ck_assert_uint_eq(r.memory.activation_per_layer_bytes, want);
    /* Selective recompute drops only the log-sum-exp (flash keeps no s² tensor). */
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    ck_assert_int_eq(spsim_evaluate(m, NULL, &p, &r, NULL), SPSIM_OK);
    ck_assert_uint_eq(r.memory.activation_per_layer_bytes, want - 64 / t * s * 4);
    spsim_model_destroy(m);
}
END_TEST

START_TEST(first_stage_interleaving_factor)
{
    /* Paper §4.2.3: L(1 + (p−1)/(p·m)) layers in flight on stage 0 with enough micro-batches.
     * 175B: L=96, p=8, m=3 → 96·(1 + 7/24) = 124 layers = 31 chunks of 4. */
    struct spsim_model_shape ms = testutil_gpt_shape(96, 12288, 96, 2048, 51200);
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 8;
    p.pp = 8;
    p.vpp = 3;
    p.sp = true;
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    p.gbs = 64;
    struct spsim_result r;
    ck_assert_int_eq(spsim_evaluate(m, NULL, &p, &r, NULL), SPSIM_OK);
    uint64_t sbh = 2048ull * 12288;
    ck_assert_uint_eq(r.memory.inflight_chunks_first_stage, 31);
    ck_assert_double_eq_tol(r.memory.interleave_factor, 1.0 + 7.0 / 24.0, 1e-12);
    ck_assert_uint_eq(r.memory.activation_layers_bytes, 124 * (34 * sbh / 8));
    /* Embedding dropout masks (sbh/t each, 1 byte per element) of the micro-batches whose
     * chunk-0 forward has run and chunk-0 backward has not: interleaved, rank 0's 2(p − 1) +
     * (v − 1)p warm-up forwards and the first steady-state one cover chunk 0 of micro-batches
     * 0..2p−1 (groups of p, schedules.py) before the first chunk-0 backward: 2p = 16. */
    ck_assert_uint_eq(r.memory.activation_embedding_bytes, sbh * 16 / 8);
    ck_assert_uint_eq(r.memory.activation_output_bytes, 0); /* p > 1 */

    /* Fewer micro-batches than stages (1F1B, no interleaving): min(p, m) in flight. */
    p.vpp = 1;
    p.gbs = 3;
    ck_assert_int_eq(spsim_evaluate(m, NULL, &p, &r, NULL), SPSIM_OK);
    ck_assert_uint_eq(r.memory.activation_layers_bytes, 3 * 12 * (34 * sbh / 8));
    ck_assert_uint_eq(r.memory.activation_embedding_bytes, sbh * 3 / 8);
    spsim_model_destroy(m);
}
END_TEST

START_TEST(output_layer_terms_when_p_is_1)
{
    /* Paper §4.3, p = 1: 4sbh/t·(1 + v/h) for the final LayerNorm, the output-layer input and
     * the fp32 logits (with SP). 22B: s=2048, b=4, h=6144, v=51200, t=8. */
    struct spsim_model_shape ms = testutil_gpt_shape(48, 6144, 64, 2048, 51200);
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 8;
    p.sp = true;
    p.mbs = 4;
    p.gbs = 4;
    struct spsim_result r;
    ck_assert_int_eq(spsim_evaluate(m, NULL, &p, &r, NULL), SPSIM_OK);
    uint64_t sbh = 2048ull * 4 * 6144;
    ck_assert_uint_eq(r.memory.activation_output_bytes, 4 * sbh / 8 + 4 * 2048ull * 4 * 51200 / 8);
    spsim_model_destroy(m);
}
END_TEST

START_TEST(full_recompute_adds_one_layer_working_set)
{
    struct spsim_model_shape ms = testutil_gpt_shape(48, 6144, 64, 2048, 51200);
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 8;
    p.mbs = 4;
    p.gbs = 4;
    p.recompute = SPSIM_RECOMPUTE_FULL;
    struct spsim_result r;
    ck_assert_int_eq(spsim_evaluate(m, NULL, &p, &r, NULL), SPSIM_OK);
    uint64_t sbh = 2048ull * 4 * 6144, as2b = 64ull * 2048 * 2048 * 4;
    ck_assert_uint_eq(r.memory.activation_recompute_working_bytes,
                      10 * sbh + 24 * sbh / 8 + 5 * as2b / 8);
    ck_assert_uint_eq(r.memory.activation_layers_bytes, 48 * 2 * sbh);
    spsim_model_destroy(m);
}
END_TEST

START_TEST(overflow_is_refused)
{
    struct spsim_model_shape ms = testutil_gpt_shape(8, 1048576, 65536, 16777216, 51200);
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.mbs = 65536;
    p.gbs = 65536;
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_evaluate(m, NULL, &p, &r, &err), SPSIM_ERANGE);
    ck_assert_ptr_nonnull(strstr(err.message, "64 bits"));
    spsim_model_destroy(m);
}
END_TEST

START_TEST(weights_and_optimizer_bytes)
{
    /* 18 bytes per parameter, or 6 + 12/d with the distributed optimizer (Megatron). */
    struct spsim_model_shape ms = testutil_gpt_shape(48, 6144, 64, 2048, 51200);
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 8;
    p.dp = 4;
    p.gbs = 4;
    struct spsim_result r;
    ck_assert_int_eq(spsim_evaluate(m, NULL, &p, &r, NULL), SPSIM_OK);
    uint64_t n = r.memory.parameters_per_gpu;
    ck_assert_uint_eq(r.memory.weights_bytes + r.memory.gradients_bytes + r.memory.optimizer_bytes,
                      18 * n);
    p.distributed_optimizer = true;
    ck_assert_int_eq(spsim_evaluate(m, NULL, &p, &r, NULL), SPSIM_OK);
    ck_assert_uint_eq(r.memory.optimizer_bytes, (12 * n + 3) / 4);
    /* Parameter count by hand, one TP rank of the only stage: per layer
     * (3h² + 3h + h² + 4h² + 4h + 4h² + h)/t sharded... written out: column weights and
     * biases /t, row weights /t, row biases (2h) and LayerNorms (4h) replicated. */
    uint64_t h = 6144, t = 8;
    uint64_t layer =
        (3 * h * h + 3 * h + h * h + 4 * h * h + 4 * h + 4 * h * h) / t + 2 * h + 4 * h;
    uint64_t embed = 51200 * h / t + 2048 * h;
    uint64_t final_norm = 2 * h;
    ck_assert_uint_eq(n, 48 * layer + embed + final_norm);
    spsim_model_destroy(m);
}
END_TEST

static Suite *
memory_suite(void)
{
    Suite *s = suite_create("memory");
    TCase *tc = tcase_create("table2");
    tcase_add_loop_test(tc, table2_rows_match_closed_forms, 0, sizeof(shapes) / sizeof(shapes[0]));
    tcase_add_loop_test(tc, selected_mode_matches_its_row, 0, sizeof(shapes) / sizeof(shapes[0]));
    tcase_add_test(tc, full_recompute_with_sp_keeps_the_input_shard);
    tcase_add_test(tc, flash_attention_drops_the_s2_terms);
    tcase_add_test(tc, llama_layer_inventory);
    suite_add_tcase(s, tc);
    tc = tcase_create("pipeline");
    tcase_add_test(tc, first_stage_interleaving_factor);
    tcase_add_test(tc, output_layer_terms_when_p_is_1);
    tcase_add_test(tc, full_recompute_adds_one_layer_working_set);
    tcase_add_test(tc, overflow_is_refused);
    tcase_add_test(tc, weights_and_optimizer_bytes);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(memory_suite());
}
