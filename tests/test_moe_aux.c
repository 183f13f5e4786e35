/*
 * The router's auxiliary terms (issue 11: Megatron-Core router.py TopKRouter, moe_utils.py
 * switch_load_balancing_loss_func, sequence_load_balancing_loss_func, z_loss_func,
 * get_tokens_per_expert_and_token_count), each row's time worked by hand on the synthetic
 * profile of tests/test_moe_terms.c (tests/data/terms/terms-hw.json: HBM 1 TB/s achieved,
 * NVLink busbw 50 GB/s for every collective, latencies 0): a memory-bound row takes its bytes
 * over HBM, an AllReduce of S bytes on n ranks 2·S·(n−1)/n over the busbw (nccl-tests
 * PERFORMANCE.md: busbw = algbw·2(n−1)/n). The bytes per [T, E]
 * element are the ones argued beside add_router_losses in src/engine/layer.c from the kernels
 * Megatron runs; the profile fields' rules are doc/profiles.md's.
 *
 * The model: h = 1024, s = 1024, E = 128 routed experts, top 8, every layer MoE.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define HBM 1e12 /* B/s */
#define NV  50e9 /* busbw, B/s */

static const double E = 128;

#define terms_hw testutil_terms_hw

static struct spsim_model_shape
aux_shape(enum spsim_moe_balancing lb, bool z, bool bias)
{
    return (struct spsim_model_shape){
        TESTUTIL_MOE_SHAPE,
        .load_balancing = lb,
        .z_loss = z,
        .expert_bias = bias,
    };
}

/* tp 2 with SP (cp given), ep 4, alltoall, micro-batch b. */
static struct spsim_parallel
aux_config(uint32_t cp, uint32_t mbs)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 2;
    p.sp = true;
    p.cp = cp;
    p.ep = 4;
    p.dp = 4 / cp;
    p.mbs = mbs;
    p.gbs = p.dp * mbs;
    p.moe_dispatcher = SPSIM_MOE_ALLTOALL;
    return p;
}

static size_t
schedule(const struct spsim_model_shape *s, const struct spsim_parallel *p,
         struct spsim_schedule_step *st)
{
    struct spsim_model *m = testutil_model(s);
    struct spsim_hardware *hw = terms_hw();
    size_t n = 0;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_layer_schedule(m, hw, p, st, SPSIM_MAX_SCHEDULE_STEPS, &n, &err) ==
                      SPSIM_OK,
                  "%s", err.message);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
    return n;
}

static const struct spsim_schedule_step *
find(const struct spsim_schedule_step *st, size_t n, enum spsim_phase ph, const char *op,
     const char *pass)
{
    for (size_t i = 0; i < n; i++)
        if (st[i].phase == ph && strcmp(st[i].op, op) == 0 && strcmp(st[i].pass, pass) == 0)
            return &st[i];
    return NULL;
}

static const struct spsim_schedule_step *
step(const struct spsim_schedule_step *st, size_t n, enum spsim_phase ph, const char *op,
     const char *pass)
{
    const struct spsim_schedule_step *s = find(st, n, ph, op, pass);
    ck_assert_msg(s != NULL, "no step '%s' %s", op, pass);
    return s;
}

#define EQ(got, want) ck_assert_double_eq_tol((got), (want), 1e-9 * fabs(want))

static const enum spsim_phase F = SPSIM_PHASE_FORWARD, B = SPSIM_PHASE_BACKWARD;

/* The forward's tokens-per-expert AllReduce `name`: S bytes on g ranks, 2·S·(g−1)/g over the
 * busbw. */
static void
assert_counts_allreduce(const struct spsim_schedule_step *st, size_t n, const char *name,
                        uint64_t bytes, uint32_t g)
{
    const struct spsim_schedule_step *ar = step(st, n, F, name, "");
    ck_assert_uint_eq(ar->message_bytes, bytes);
    ck_assert_uint_eq(ar->group_size, g);
    EQ(ar->time_s, 2.0 * (double)bytes * (g - 1) / g / NV);
}

/*
 * aux_loss, z-loss and expert bias at tp 2, cp 1, b 1: T = 1024/2 = 512 tokens, T·E = 65 536.
 * Aux-loss scores 11·T·E B forward, 16·T·E backward; the loss 5·T·E and 4·T·E; the counts
 * 8·E = 1024 B all-reduced over the 2 TP ranks (2·1024·1/2 B over 50 GB/s), forward only;
 * z-loss 2·T·E and 10·T·E; expert bias 9·T·E forward.
 */
START_TEST(aux_loss_rows)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    struct spsim_model_shape s = aux_shape(SPSIM_BALANCE_AUX_LOSS, true, true);
    struct spsim_parallel p = aux_config(1, 1);
    size_t n = schedule(&s, &p, st);
    double te = 512 * E;
    EQ(step(st, n, F, "aux-loss scores and routing map", "forward")->time_s, 11 * te / HBM);
    EQ(step(st, n, B, "aux-loss scores and routing map", "backward")->time_s, 16 * te / HBM);
    EQ(step(st, n, F, "load-balancing loss", "forward")->time_s, 5 * te / HBM);
    EQ(step(st, n, B, "load-balancing loss", "backward")->time_s, 4 * te / HBM);
    assert_counts_allreduce(st, n, "tokens-per-expert AllReduce (TP×CP)", 8 * 128, 2);
    ck_assert(find(st, n, B, "tokens-per-expert AllReduce (TP×CP)", "") == NULL);
    EQ(step(st, n, F, "router z-loss", "forward")->time_s, 2 * te / HBM);
    EQ(step(st, n, B, "router z-loss", "backward")->time_s, 10 * te / HBM);
    EQ(step(st, n, F, "expert bias and tokens-per-expert count", "forward")->time_s, 9 * te / HBM);
}
END_TEST

/*
 * seq_aux_loss at tp 2, cp 2, b 2: T = 1024/2/2·2 = 512 tokens; one count per sequence and
 * expert, 8·b·E = 2048 B, all-reduced over the TP×CP group of 4 ranks (2·2048·3/4 B).
 */
START_TEST(seq_aux_loss_rows)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    struct spsim_model_shape s = aux_shape(SPSIM_BALANCE_SEQ_AUX_LOSS, false, false);
    struct spsim_parallel p = aux_config(2, 2);
    size_t n = schedule(&s, &p, st);
    double te = 512 * E;
    EQ(step(st, n, F, "aux-loss scores and routing map", "forward")->time_s, 11 * te / HBM);
    EQ(step(st, n, F, "sequence load-balancing loss", "forward")->time_s, 5 * te / HBM);
    assert_counts_allreduce(st, n, "tokens-per-expert AllReduce (TP×CP)", 8 * 2 * 128, 4);
    ck_assert(find(st, n, F, "router z-loss", "forward") == NULL);
    ck_assert(find(st, n, F, "expert bias and tokens-per-expert count", "forward") == NULL);
}
END_TEST

/* The aux-loss scores are kept for the backward: 4·T·E = 262 144 B more per layer at tp 2,
 * b 1 (T = 512); the z-loss and the expert bias keep nothing new. */
START_TEST(aux_loss_activations)
{
    struct spsim_hardware *hw = terms_hw();
    struct spsim_parallel p = aux_config(1, 1);
    struct spsim_result r0, r1;
    struct spsim_error err = {0};
    struct spsim_model_shape s = aux_shape(SPSIM_BALANCE_NONE, true, true);
    struct spsim_model *off = testutil_model(&s);
    s.load_balancing = SPSIM_BALANCE_AUX_LOSS;
    struct spsim_model *on = testutil_model(&s);
    s = aux_shape(SPSIM_BALANCE_NONE, false, false);
    struct spsim_model *none = testutil_model(&s);
    ck_assert_msg(spsim_evaluate(off, hw, &p, &r0, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_msg(spsim_evaluate(on, hw, &p, &r1, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(r1.memory.activation_per_layer_bytes - r0.memory.activation_per_layer_bytes,
                      4 * 512 * 128);
    ck_assert_msg(spsim_evaluate(none, hw, &p, &r1, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(r1.memory.activation_per_layer_bytes, r0.memory.activation_per_layer_bytes);
    spsim_model_destroy(off);
    spsim_model_destroy(on);
    spsim_model_destroy(none);
    spsim_hardware_destroy(hw);
}
END_TEST

/* The iteration's lines (result.h): each term once. */
static double
breakdown(const struct spsim_time_report *t)
{
    return t->forward_s + t->backward_s + t->recompute_s + t->tp_exposed_s + t->cp_exposed_s +
           t->pp_bubble_s + t->pp_p2p_s + t->dp_exposed_s + t->tied_embedding_allreduce_s +
           t->optimizer_s + t->offload_exposed_s + t->ep_exposed_s + t->fp8_amax_allreduce_s +
           t->host_exposed_s + t->moe_aux_allreduce_s + t->moe_expert_bias_allreduce_s;
}

static struct spsim_result
evaluate(const struct spsim_model_shape *s, const struct spsim_parallel *p)
{
    struct spsim_model *m = testutil_model(s);
    struct spsim_hardware *hw = terms_hw();
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, p, &r, &err) == SPSIM_OK, "%s", err.message);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
    return r;
}

/*
 * The tokens-per-expert AllReduces in their own line, time.moe_aux_allreduce_s, and not in
 * cp_exposed_s: 2 MoE layers × m micro-batches (gbs / (dp·b)) × one AllReduce each (no
 * recomputation). aux_loss at tp 2, cp 1, b 1, gbs 8 (m = 2): 2·2·(2·1024·1/2 B / 50 GB/s),
 * and nothing else is a CP exchange; seq_aux_loss at tp 2, cp 2, b 2, gbs 8 (dp 2, m = 2):
 * 2·2·(2·2048·3/4 B / 50 GB/s), the attention's CP exchanges staying in cp_exposed_s.
 */
START_TEST(aux_loss_allreduce_line)
{
    struct spsim_model_shape s = aux_shape(SPSIM_BALANCE_AUX_LOSS, false, false);
    struct spsim_parallel p = aux_config(1, 1);
    p.gbs = 8;
    struct spsim_result r = evaluate(&s, &p);
    EQ(r.time.moe_aux_allreduce_s, 2 * 2 * (2 * 1024.0 / 2 / NV));
    ck_assert(r.time.cp_exposed_s == 0);
    EQ(r.time.iteration_s, breakdown(&r.time));

    s = aux_shape(SPSIM_BALANCE_SEQ_AUX_LOSS, false, false);
    p = aux_config(2, 2);
    p.gbs = 8;
    r = evaluate(&s, &p);
    EQ(r.time.moe_aux_allreduce_s, 2 * 2 * (2 * 2048.0 * 3 / 4 / NV));
    ck_assert(r.time.cp_exposed_s > 0);
    EQ(r.time.iteration_s, breakdown(&r.time));
    /* The CP exchanges alone: the same configuration without the loss has no aux line. */
    double cp = r.time.cp_exposed_s;
    s.load_balancing = SPSIM_BALANCE_NONE;
    r = evaluate(&s, &p);
    ck_assert(r.time.moe_aux_allreduce_s == 0);
    EQ(r.time.cp_exposed_s, cp);
}
END_TEST

/*
 * Expert bias (finalize_model_grads _update_router_expert_bias, moe_utils.py
 * get_updated_expert_bias): once per iteration, whatever the micro-batches, one AllReduce over
 * TP×DP×CP of the stage's routers' fp32 counts, 4·E = 512 B per MoE layer. tp 2, cp 1, dp 4,
 * pp 1: 2 layers, 1024 B over 8 ranks, 2·1024·7/8 B over 50 GB/s; gbs 16 (4 micro-batches)
 * changes nothing. tp 2, cp 2, dp 2: 8 ranks again. pp 2 (dp 4): the stage holds 1 layer,
 * 512 B. tp 2, dp 2, cp 1 (ep 2): 4 ranks, 2·1024·3/4 B.
 */
START_TEST(expert_bias_allreduce)
{
    struct spsim_model_shape s = aux_shape(SPSIM_BALANCE_NONE, false, true);
    struct spsim_parallel p = aux_config(1, 1);
    struct spsim_result r = evaluate(&s, &p);
    EQ(r.time.moe_expert_bias_allreduce_s, 2 * 1024.0 * 7 / 8 / NV);
    EQ(r.time.iteration_s, breakdown(&r.time));
    p.gbs = 16;
    EQ(evaluate(&s, &p).time.moe_expert_bias_allreduce_s, 2 * 1024.0 * 7 / 8 / NV);
    p = aux_config(2, 1);
    EQ(evaluate(&s, &p).time.moe_expert_bias_allreduce_s, 2 * 1024.0 * 7 / 8 / NV);
    p = aux_config(1, 1);
    p.pp = 2;
    EQ(evaluate(&s, &p).time.moe_expert_bias_allreduce_s, 2 * 512.0 * 7 / 8 / NV);
    p = aux_config(1, 1);
    p.dp = 2;
    p.ep = 2;
    p.gbs = 2;
    EQ(evaluate(&s, &p).time.moe_expert_bias_allreduce_s, 2 * 1024.0 * 3 / 4 / NV);
    s.expert_bias = false;
    p = aux_config(1, 1);
    ck_assert(evaluate(&s, &p).time.moe_expert_bias_allreduce_s == 0);
}
END_TEST

/*
 * global_aux_loss (router.py _apply_global_aux_loss): aux_loss's rows, its tokens-per-expert
 * counts (8·E = 1024 B, per MoE layer and micro-batch, forward) all-reduced over TP×DP×CP
 * (reduce_group = tp_dp_cp_group) instead of TP×CP. tp 2, cp 1, dp 4: 8 ranks,
 * 2·1024·7/8 B over 50 GB/s; 2 layers × 2 micro-batches (gbs 8) in time.moe_aux_allreduce_s.
 * dp 2 (ep 2): 4 ranks, 2·1024·3/4 B. tp 2, cp 2, dp 2: 8 ranks.
 */
START_TEST(global_aux_loss_allreduce)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    struct spsim_model_shape s = aux_shape(SPSIM_BALANCE_GLOBAL_AUX_LOSS, false, false);
    struct spsim_parallel p = aux_config(1, 1);
    p.gbs = 8;
    size_t n = schedule(&s, &p, st);
    double te = 512 * E;
    EQ(step(st, n, F, "aux-loss scores and routing map", "forward")->time_s, 11 * te / HBM);
    EQ(step(st, n, F, "load-balancing loss", "forward")->time_s, 5 * te / HBM);
    assert_counts_allreduce(st, n, "tokens-per-expert AllReduce (TP×DP×CP)", 8 * 128, 8);
    ck_assert(find(st, n, F, "tokens-per-expert AllReduce (TP×CP)", "") == NULL);
    struct spsim_result r = evaluate(&s, &p);
    EQ(r.time.moe_aux_allreduce_s, 2 * 2 * (2 * 1024.0 * 7 / 8 / NV));
    EQ(r.time.iteration_s, breakdown(&r.time));
    p.dp = 2;
    p.ep = 2;
    p.gbs = 4;
    EQ(evaluate(&s, &p).time.moe_aux_allreduce_s, 2 * 2 * (2 * 1024.0 * 3 / 4 / NV));
    p = aux_config(2, 1);
    p.gbs = 4;
    EQ(evaluate(&s, &p).time.moe_aux_allreduce_s, 2 * 2 * (2 * 1024.0 * 7 / 8 / NV));
}
END_TEST

#define HEAD                                                                                       \
    "{\"schema\": \"spsim-model/1\", \"name\": \"t\", \"source\": \"test\", \"layers\": 2, "       \
    "\"hidden\": 1024, \"heads\": 8, \"kv_heads\": 8, \"ffn_hidden\": 4096, \"vocab\": 32768, "    \
    "\"seq_len\": 1024, "                                                                          \
    "\"mlp\": \"swiglu\", \"norm\": \"rmsnorm\", \"dropout\": false, \"attention\": \"flash\", "   \
    "\"position_embedding\": \"rope\", \"linear_bias\": false, \"tied_embeddings\": false"

static int
parse(const char *json, enum spsim_moe_balancing lb, struct spsim_error *err)
{
    struct spsim_model *m = NULL;
    int rc = spsim_model_parse(json, strlen(json), "aux.json", &m, err);
    if (rc == SPSIM_OK) {
        const struct spsim_model_shape *s = spsim_model_get_shape(m);
        ck_assert_int_eq(s->load_balancing, lb);
        ck_assert(s->z_loss == (lb == SPSIM_BALANCE_SEQ_AUX_LOSS));
        ck_assert(s->expert_bias == (lb == SPSIM_BALANCE_SEQ_AUX_LOSS));
    }
    spsim_model_destroy(m);
    return rc;
}

/* The profile keys: read on a MoE model (global_aux_loss too), refused on a dense one. */
START_TEST(aux_loss_profile)
{
    struct spsim_error err = {0};
    int rc = parse(HEAD ", \"experts\": 8, \"experts_per_token\": 2, \"load_balancing\": "
                        "\"seq_aux_loss\", \"z_loss\": true, \"expert_bias\": true}",
                   SPSIM_BALANCE_SEQ_AUX_LOSS, &err);
    ck_assert_msg(rc == SPSIM_OK, "%s", err.message);
    ck_assert_int_eq(parse(HEAD ", \"z_loss\": true}", SPSIM_BALANCE_NONE, &err), SPSIM_EFIELD);
    ck_assert_msg(strstr(err.message, "field 'z_loss'") != NULL, "%s", err.message);
    rc = parse(HEAD ", \"experts\": 8, \"experts_per_token\": 2, \"load_balancing\": "
                    "\"global_aux_loss\"}",
               SPSIM_BALANCE_GLOBAL_AUX_LOSS, &err);
    ck_assert_msg(rc == SPSIM_OK, "%s", err.message);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("moe_aux");
    TCase *tc = tcase_create("moe_aux");
    tcase_add_test(tc, aux_loss_rows);
    tcase_add_test(tc, seq_aux_loss_rows);
    tcase_add_test(tc, aux_loss_activations);
    tcase_add_test(tc, aux_loss_allreduce_line);
    tcase_add_test(tc, expert_bias_allreduce);
    tcase_add_test(tc, global_aux_loss_allreduce);
    tcase_add_test(tc, aux_loss_profile);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
