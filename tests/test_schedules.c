/*
 * The pipeline schedules beyond Megatron-Core's (engine/pp_schedule.c), worked by hand against
 * each one's paper and reference code:
 * - ZB-H1: bubble (p − 1)(T_F + T_B − T_W), T_B the input gradient alone, memory p·M_B (Qi et
 *   al. 2024, ICLR, §3.1 and Table 1; 1F1B's (p − 1)(T_F + T_B + T_W) with the same memory); at
 *   T_F = T_B = T_W a third of 1F1B's (the repository README's table: ZB1P "B/3"); the drawn
 *   order's dependencies give the same (tests/test_trace.c, against the paper's
 *   get_hand_schedule);
 * - ZB-V: p − 1 chunk slots of f + b − 2w, (p − 1)(T_F + T_B − 2T_W)/2 of the stage's times,
 *   zero at equal times (README: ZBV "0"), what the reference's greedy scheduler
 *   (scheduler/zbv.py try_v_schedule, run at 39f2c186) gives at w = 0 and w = f with f = b;
 *   memory capped at 2p chunk activations = 1F1B's (zbv.py:23; README "1x");
 * - DualPipe: (PP/2 − 1)(F&B + B − 3W), parameters 2x, activations PP + 1 (deepseek-ai/DualPipe
 *   README table), the overlapped pairs of dualpipe.py's steps 4 and 5;
 * - DualPipeV: the same row for PP = 2p stages on p ranks, its pairs from dualpipev.py;
 * - the rules of dualpipe.py:332-333 and dualpipev.py:318, and each schedule's chunk count.
 * F, B, W: a stage's forward, whole backward and weight-gradient times per micro-batch.
 */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ep_overlap.h"
#include "engine/pp_schedule.h"
#include "testutil.h"

#define TOL 1e-12

/*
 * Zero bubble. At T_F = T_B = T_W = 1 (F = 1, B = T_B + T_W = 2, W = 1) and p = 4, 1F1B's bubble
 * is (p − 1)(F + B) = 9: ZB-H1 leaves 3 (B/3), ZB-V 0. Unequal times, T_F = 2, T_B = 3, T_W =
 * 1.5 (F + B = 6.5, W = 1.5): ZB-H1 (p − 1)(T_F + T_B − T_W) = 3 · 3.5 = 10.5, ZB-V (p − 1)(T_F
 * + T_B − 2T_W)/2 = 3 · 1 = 3 (p − 1 half-stage chunks of 1 each). Each send adds two per
 * chunk slot: 3 slots × 2 × 0.25. W beyond the bound: no negative idle time. The reference's
 * try_v_schedule (chunk times f = b = 10): w = 0 leaves 60 on p 4 and 140 on p 8, w = 10
 * none; a stage is two chunks, F + B = 2(f + b + w), W = 2w.
 * DualPipe on the README's 8 ranks: F = 1, B = 2, W = 0.5, F&B = F + B − 0.3 (the EP exchange a
 * pair hides): (8/2 − 1)(2.7 + 2 − 1.5) = 9.6; with a send of 0.1, 3 × 0.2 more. DualPipeV on
 * the README's 4 ranks (8 stages of half a rank's layers): a rank's F + B = 6, B = 4, W = 1,
 * hidden 0.6 make chunks of half: (8/2 − 1)((6 − 0.6 + 4 − 3)/2) = 9.6. pp 2: DualPipe has no
 * bubble; Megatron's schedules are not this function's.
 */
static const struct {
    enum spsim_pp_schedule s;
    uint32_t p;
    double stage, bwd, wgrad, hidden, send, want;
} bubbles[] = {
    {SPSIM_PP_SCHEDULE_ZB_H1, 4, 3, 2, 1, 0, 0, 9.0 / 3},
    {SPSIM_PP_SCHEDULE_ZB_V, 4, 3, 2, 1, 0, 0, 0},
    {SPSIM_PP_SCHEDULE_ZB_H1, 4, 6.5, 4.5, 1.5, 0, 0, 10.5},
    {SPSIM_PP_SCHEDULE_ZB_V, 4, 6.5, 4.5, 1.5, 0, 0, 3},
    {SPSIM_PP_SCHEDULE_ZB_V, 4, 40, 20, 0, 0, 0, 60},
    {SPSIM_PP_SCHEDULE_ZB_V, 8, 40, 20, 0, 0, 0, 140},
    {SPSIM_PP_SCHEDULE_ZB_V, 8, 60, 40, 20, 0, 0, 0},
    {SPSIM_PP_SCHEDULE_ZB_H1, 4, 6.5, 4.5, 1.5, 0, 0.25, 12},
    {SPSIM_PP_SCHEDULE_ZB_V, 4, 6.5, 4.5, 1.5, 0, 0.25, 4.5},
    {SPSIM_PP_SCHEDULE_ZB_V, 4, 3, 2, 2, 0, 0, 0},
    {SPSIM_PP_SCHEDULE_DUALPIPE, 8, 3, 2, 0.5, 0.3, 0, 9.6},
    {SPSIM_PP_SCHEDULE_DUALPIPE, 8, 3, 2, 0.5, 0.3, 0.1, 10.2},
    {SPSIM_PP_SCHEDULE_DUALPIPEV, 4, 6, 4, 1, 0.6, 0, 9.6},
    {SPSIM_PP_SCHEDULE_DUALPIPE, 2, 3, 2, 0.5, 0.3, 0.1, 0},
    {SPSIM_PP_SCHEDULE_MEGATRON, 8, 3, 2, 0.5, 0.3, 0.1, 0},
};

START_TEST(bubbles_by_hand)
{
    ck_assert_double_eq_tol(
        spsim_pp_schedule_bubble(bubbles[_i].s, bubbles[_i].p, bubbles[_i].stage, bubbles[_i].bwd,
                                 bubbles[_i].wgrad, bubbles[_i].hidden, bubbles[_i].send),
        bubbles[_i].want, TOL);
}
END_TEST

/* In-flight chunk activations: ZB-H1 1F1B's p − r (Table 1, p·M_B); ZB-V 2p half-stage chunks
 * on every rank (zbv.py:23); DualPipe PP + 1 stages; DualPipeV PP + 1 = 2p + 1 chunks; never
 * more than the iteration's. */
START_TEST(inflight)
{
    ck_assert_uint_eq(spsim_pp_schedule_inflight(SPSIM_PP_SCHEDULE_ZB_H1, 8, 0, 64), 8);
    ck_assert_uint_eq(spsim_pp_schedule_inflight(SPSIM_PP_SCHEDULE_ZB_H1, 8, 5, 64), 3);
    ck_assert_uint_eq(spsim_pp_schedule_inflight(SPSIM_PP_SCHEDULE_ZB_H1, 8, 0, 2), 2);
    ck_assert_uint_eq(spsim_pp_schedule_inflight(SPSIM_PP_SCHEDULE_ZB_V, 8, 0, 64), 16);
    ck_assert_uint_eq(spsim_pp_schedule_inflight(SPSIM_PP_SCHEDULE_ZB_V, 8, 7, 64), 16);
    ck_assert_uint_eq(spsim_pp_schedule_inflight(SPSIM_PP_SCHEDULE_ZB_V, 8, 0, 3), 6);
    ck_assert_uint_eq(spsim_pp_schedule_inflight(SPSIM_PP_SCHEDULE_DUALPIPE, 8, 0, 20), 9);
    ck_assert_uint_eq(spsim_pp_schedule_inflight(SPSIM_PP_SCHEDULE_DUALPIPEV, 4, 0, 10), 9);
}
END_TEST

/* Forward-backward pairs counted by hand from the reference code. DualPipe, 8 ranks and 20
 * micro-batches (the README's figure): rank 0 (h = 0) runs step_4 = 10 − 8 + 0 + 1 = 3
 * iterations of two pairs and step_5 = 4 − 0 − 1 = 3 of one: 9; the middle rank 3 (h = 3)
 * step_4 = 6 of two, less its first unoverlapped one, and no step 5: 11; rank 7 mirrors rank 0.
 * DualPipeV, 4 ranks and 10 micro-batches: rank 0 step_4 = 10 − 8 + 0 + 1 = 3, step_5 = 3: 9
 * chunk pairs, 4.5 micro-batches; the last rank step_4 = 6, less one: 11, 5.5. */
START_TEST(dualpipe_pairs)
{
    ck_assert_double_eq_tol(spsim_pp_schedule_paired(SPSIM_PP_SCHEDULE_DUALPIPE, 20, 8, 0), 9, TOL);
    ck_assert_double_eq_tol(spsim_pp_schedule_paired(SPSIM_PP_SCHEDULE_DUALPIPE, 20, 8, 3), 11,
                            TOL);
    ck_assert_double_eq_tol(spsim_pp_schedule_paired(SPSIM_PP_SCHEDULE_DUALPIPE, 20, 8, 7), 9, TOL);
    ck_assert_double_eq_tol(spsim_pp_schedule_paired(SPSIM_PP_SCHEDULE_DUALPIPEV, 10, 4, 0), 4.5,
                            TOL);
    ck_assert_double_eq_tol(spsim_pp_schedule_paired(SPSIM_PP_SCHEDULE_DUALPIPEV, 10, 4, 3), 5.5,
                            TOL);
}
END_TEST

/* Llama 3 8B on DGX H100, tp 1 (no TP exchanges: walls are computation), pp 4, 16 micro-
 * batches. */
static struct spsim_result
evaluate(enum spsim_pp_schedule s, uint32_t vpp)
{
    struct spsim_parallel p = testutil_config(1, 4, vpp, 1, 16, false, SPSIM_RECOMPUTE_SELECTIVE);
    p.pp_schedule = s;
    /* No loss checks: the host's calls after their device-to-host wait would show beside the
     * GPU's walls (engine/mb_host.c); the rest of the host's work hides under an 8B layer. */
    p.no_check_for_nan_in_loss_and_grad = true;
    return testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
}

/* The mean stage's terms per micro-batch, read from a Megatron schedule's result at the same
 * chunks (its bubble is (p − 1)/v·(avg + 2v·send), Narayanan et al. 2021) and the critical
 * stage's split: F + B, B, W scaled to the mean, one whole send. */
struct mean_stage {
    double stage, bwd, wgrad, send, host;
};

static struct mean_stage
mean_stage(const struct spsim_result *r)
{
    const struct spsim_time_report *t = &r->time;
    double p = r->config.pp, v = r->config.vpp, m = r->comm.microbatches;
    ck_assert_double_eq_tol(t->tp_exposed_s + t->cp_exposed_s + t->ep_exposed_s, 0, TOL);
    ck_assert(t->host_exposed_s < 1e-12);
    struct mean_stage s;
    s.send = (t->pp_p2p_s + t->pp_p2p_hidden_s) / (2 * v * m);
    /* the host's calls per transfer (log_host.c, Megatron's 1F1B only), in the send and the
     * bubble alike */
    s.host = t->pp_p2p_host_s / (2 * v * (m + (p - 1) / v));
    s.stage = t->pp_bubble_s * v / (p - 1) - 2 * v * s.send;
    double wall = t->microbatch_s - t->pp_p2p_s / m, k = s.stage / wall;
    s.bwd = k * (t->backward_s + t->recompute_s) / m;
    s.wgrad = k * t->wgrad_s / m;
    return s;
}

START_TEST(schedules_in_the_composition)
{
    struct spsim_result one = evaluate(SPSIM_PP_SCHEDULE_MEGATRON, 1);
    struct spsim_result two = evaluate(SPSIM_PP_SCHEDULE_MEGATRON, 2);
    struct mean_stage a = mean_stage(&one), b = mean_stage(&two);
    double p = 4, tol = 1e-9 * one.time.iteration_s;
    struct spsim_result zbh1 = evaluate(SPSIM_PP_SCHEDULE_ZB_H1, 1);
    struct spsim_result zbv = evaluate(SPSIM_PP_SCHEDULE_ZB_V, 2);
    struct spsim_result dual = evaluate(SPSIM_PP_SCHEDULE_DUALPIPE, 1);
    struct spsim_result dualv = evaluate(SPSIM_PP_SCHEDULE_DUALPIPEV, 2);
    ck_assert_double_eq_tol(zbh1.time.pp_bubble_s,
                            (p - 1) * (a.stage - 2 * a.wgrad + 2 * (a.send - a.host)), tol);
    ck_assert_double_eq_tol(zbv.time.pp_bubble_s,
                            (p - 1) * ((b.stage - 3 * b.wgrad) / 2 + 2 * b.send), tol);
    /* a dense model: F&B = F + B */
    ck_assert_double_eq_tol(dual.time.pp_bubble_s,
                            (p / 2 - 1) * (a.stage + a.bwd - 3 * a.wgrad + 2 * (a.send - a.host)),
                            tol);
    ck_assert_double_eq_tol(dualv.time.pp_bubble_s,
                            (p - 1) * ((b.stage + b.bwd - 3 * b.wgrad) / 2 + 2 * b.send), tol);
    /* everything but the bubble as Megatron's schedule at the same chunks, but ZB-V's sends,
     * blocking as 1F1B's (the interleaved schedule's overlap_p2p_comm hides some), and its
     * optimizer step, of the last rank (its peak, beside the output layer's logits) */
    ck_assert_double_eq_tol(
        zbh1.time.iteration_s - zbh1.time.pp_bubble_s,
        one.time.iteration_s - one.time.pp_bubble_s - 2 * one.comm.microbatches * a.host, tol);
    ck_assert_double_eq_tol(zbv.time.pp_p2p_s, two.time.pp_p2p_s + two.time.pp_p2p_hidden_s, tol);
    ck_assert_double_eq_tol(
        zbv.time.iteration_s - zbv.time.pp_bubble_s - zbv.time.pp_p2p_s - zbv.time.optimizer_s,
        two.time.iteration_s - two.time.pp_bubble_s - two.time.pp_p2p_s - two.time.optimizer_s,
        tol);
    /* Memory: ZB-H1 and ZB-V hold 1F1B's activations (2p chunks of L/(2p) layers = p stages),
     * DualPipe (p + 1)/p of them, DualPipeV (2p + 1)/(2p); DualPipe's rank 0 holds stages 0 and
     * p − 1. */
    uint64_t act = one.memory.activation_layers_bytes;
    ck_assert_uint_eq(zbh1.memory.activation_layers_bytes, act);
    ck_assert_uint_eq(zbv.memory.activation_layers_bytes, act);
    ck_assert_uint_eq(dual.memory.activation_layers_bytes, act / 4 * 5);
    ck_assert_uint_eq(dualv.memory.activation_layers_bytes, act / 8 * 9);
    ck_assert_uint_eq(dual.memory.parameters_per_gpu,
                      one.memory.parameters_first_stage + one.memory.parameters_last_stage);
    ck_assert_uint_eq(zbh1.memory.parameters_per_gpu, one.memory.parameters_per_gpu);
}
END_TEST

/* Uneven stages (--decoder-first-pipeline-num-layers 5, the other ranks 9): rank 0 holds its 5
 * layers for 1F1B's 4 micro-batches in flight and DualPipe's 5. */
START_TEST(uneven_inflight)
{
    struct spsim_parallel p = testutil_config(1, 4, 1, 1, 16, false, SPSIM_RECOMPUTE_SELECTIVE);
    p.first_stage_layers = 5;
    struct spsim_result one = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    p.pp_schedule = SPSIM_PP_SCHEDULE_DUALPIPE;
    struct spsim_result dual = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_uint_eq(one.memory.activation_layers_bytes % 20, 0);
    ck_assert_uint_eq(dual.memory.activation_layers_bytes,
                      one.memory.activation_layers_bytes / 20 * 25);
}
END_TEST

/* W, the weight-gradient GEMMs, from their FLOPs: dW = dYᵀ·X costs the forward GEMM's 2·s·k·n.
 * Llama 3 8B's layer (h 4096, 8 KV heads of 128, SwiGLU FFN 14336) has 4096·6144 + 4096² +
 * 4096·28672 + 14336·4096 = 218,103,808 GEMM weights, the output layer 4096·128,256; the
 * critical (last) stage 8 layers and the output layer: 2·8192·(8·218,103,808 + 525,336,576) =
 * 37.19 TFLOP per micro-batch, which the dense BF16 peak (989 TFLOP/s, NVIDIA H100 datasheet)
 * bounds below by 37.6 ms; large GEMMs run at more than 60 % of it. */
START_TEST(weight_gradient_from_flops)
{
    struct spsim_result r = evaluate(SPSIM_PP_SCHEDULE_ZB_H1, 1);
    double flops = 2.0 * 8192 * (8.0 * 218103808 + 4096.0 * 128256);
    double w = r.time.wgrad_s / r.comm.microbatches, floor = flops / 989e12;
    ck_assert_msg(w >= floor && w <= floor / 0.6, "W %g s against %g s at peak", w, floor);
    ck_assert(r.time.wgrad_s < r.time.backward_s);
}
END_TEST

/* Qwen3-30B-A3B (48 MoE layers), tp 1, ep 8, pp 4, dp 8, 8 micro-batches, all-to-all. Megatron's
 * combined 1F1B (interleaved, as it needs) with the delayed wgrad hides (whole − pair) per MoE
 * layer on each of its spsim_ep_overlap_paired pairs (ep_overlap.c); DualPipe hides the same
 * per pair on its own pairs (the critical rank 3 is h = 0 from its end: 8 − 6 + 0 + 1 = 3),
 * DualPipeV on (2·8 − 12 + 3 + 1 − 1)/2 = 3.5. 1F1B hides none. */
static struct spsim_result
moe(enum spsim_pp_schedule s, uint32_t vpp, bool combined)
{
    struct spsim_parallel p = testutil_config(1, 4, vpp, 1, 64, false, SPSIM_RECOMPUTE_SELECTIVE);
    p.dp = 8;
    p.ep = 8;
    p.moe_dispatcher = SPSIM_MOE_ALLTOALL;
    p.pp_schedule = s;
    p.moe_a2a_overlap = p.delay_wgrad_compute = combined;
    return testutil_evaluate_config("qwen3-30b-a3b", "dgx-h100", &p);
}

START_TEST(dualpipe_hides_the_exchanges)
{
    struct spsim_result plain = moe(SPSIM_PP_SCHEDULE_MEGATRON, 1, false);
    struct spsim_result combined = moe(SPSIM_PP_SCHEDULE_MEGATRON, 2, true); /* needs vpp */
    struct spsim_result dual = moe(SPSIM_PP_SCHEDULE_DUALPIPE, 1, false);
    struct spsim_result dualv = moe(SPSIM_PP_SCHEDULE_DUALPIPEV, 2, false);
    ck_assert_uint_eq(dual.time.critical_stage, 3);
    ck_assert_double_eq_tol(plain.time.ep_a2a_hidden_s, 0, TOL);
    double per_pair = combined.time.ep_a2a_hidden_s /
                      spsim_ep_overlap_paired(8, 4, 2, combined.time.critical_stage);
    ck_assert(per_pair > 0);
    double tol = 1e-9 * plain.time.iteration_s;
    ck_assert_double_eq_tol(dual.time.ep_a2a_hidden_s, 3 * per_pair, tol);
    /* a V's chunk holds half the rank's MoE layers: per pair half, 7 chunk pairs */
    ck_assert_double_eq_tol(dualv.time.ep_a2a_hidden_s, 3.5 * per_pair, tol);
    ck_assert_double_eq_tol(dual.time.ep_exposed_s + dual.time.ep_a2a_hidden_s,
                            plain.time.ep_exposed_s, tol);
}
END_TEST

static struct spsim_parallel
rule_config(enum spsim_pp_schedule s, uint32_t pp, uint32_t vpp, uint64_t gbs)
{
    struct spsim_parallel p = testutil_config(1, pp, vpp, 1, gbs, false, SPSIM_RECOMPUTE_SELECTIVE);
    p.pp_schedule = s;
    return p;
}

START_TEST(refusals)
{
    struct spsim_parallel p = rule_config(SPSIM_PP_SCHEDULE_DUALPIPE, 1, 1, 16);
    testutil_expect_rule("llama3-8b", &p, "needs pp >= 2");
    p = rule_config(SPSIM_PP_SCHEDULE_ZB_H1, 4, 2, 16);
    testutil_expect_rule("llama3-8b", &p, "zb-h1 runs one model chunk per rank (vpp 1)");
    p = rule_config(SPSIM_PP_SCHEDULE_ZB_V, 4, 1, 16);
    testutil_expect_rule("llama3-8b", &p, "zb-v runs two model chunks in a V per rank (vpp 2)");
    p = rule_config(SPSIM_PP_SCHEDULE_DUALPIPEV, 4, 4, 16);
    testutil_expect_rule("llama3-8b", &p, "not vpp 4");
    p = rule_config(SPSIM_PP_SCHEDULE_DUALPIPE, 4, 1, 6); /* 6 < 2·4 */
    testutil_expect_rule("llama3-8b", &p, "micro-batches >= 2·pp = 8");
    p = rule_config(SPSIM_PP_SCHEDULE_DUALPIPE, 4, 1, 9); /* odd */
    testutil_expect_rule("llama3-8b", &p, "an even count of micro-batches");
    p = rule_config(SPSIM_PP_SCHEDULE_DUALPIPEV, 4, 2, 7);
    testutil_expect_rule("llama3-8b", &p, "micro-batches >= 2·pp = 8");
    p = rule_config(SPSIM_PP_SCHEDULE_DUALPIPE, 2, 1, 8); /* pp 2 but 16 layers each: fine */
    struct spsim_model *m = testutil_model_named("llama3-8b");
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_OK);
    p.first_stage_layers = 12; /* uneven: modelled */
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_OK);
    p.first_stage_layers = 0;
    p.pipeline_layout = "Et*16|t*16L";
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "without a layout"));
    p = rule_config((enum spsim_pp_schedule)9, 2, 1, 8);
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_ECONFIG);
    spsim_model_destroy(m);
    /* ZB-V with micro-batches no multiple of pp: the interleaved groups do not apply */
    p = rule_config(SPSIM_PP_SCHEDULE_ZB_V, 4, 2, 10);
    m = testutil_model_named("llama3-8b");
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_OK);
    spsim_model_destroy(m);
    enum spsim_pp_schedule s;
    ck_assert_int_eq(spsim_pp_schedule_parse("dualpipev", &s), SPSIM_OK);
    ck_assert_int_eq(s, SPSIM_PP_SCHEDULE_DUALPIPEV);
    ck_assert_int_eq(spsim_pp_schedule_parse("interleaved", &s), SPSIM_OK);
    ck_assert_int_eq(s, SPSIM_PP_SCHEDULE_MEGATRON);
    ck_assert_int_eq(spsim_pp_schedule_parse("zb-h2", &s), SPSIM_EINVAL);
    ck_assert_str_eq(spsim_pp_schedule_name(SPSIM_PP_SCHEDULE_MEGATRON, 3), "interleaved");
    ck_assert_str_eq(spsim_pp_schedule_name(SPSIM_PP_SCHEDULE_ZB_H1, 1), "zb-h1");
}
END_TEST

static Suite *
schedules_suite(void)
{
    Suite *s = suite_create("schedules");
    TCase *tc = tcase_create("schedules");
    tcase_add_loop_test(tc, bubbles_by_hand, 0, sizeof(bubbles) / sizeof(bubbles[0]));
    tcase_add_test(tc, inflight);
    tcase_add_test(tc, dualpipe_pairs);
    tcase_add_test(tc, schedules_in_the_composition);
    tcase_add_test(tc, weight_gradient_from_flops);
    tcase_add_test(tc, uneven_inflight);
    tcase_add_test(tc, dualpipe_hides_the_exchanges);
    tcase_add_test(tc, refusals);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(schedules_suite());
}
