/*
 * Expert-parallel communication: the token exchanges' bytes over the stage that runs the most
 * MoE layers, against closed forms worked by hand (Megatron-Core token_dispatcher.py and
 * nccl-tests' alltoall size convention, as tests/test_moe.c), and the EP all-to-all overlap
 * (--overlap-moe-expert-parallel-comm) against the combined 1F1B schedule written out by hand
 * from Megatron-Core's models/common/model_chunk_schedule_plan.py
 * (TransformerLayerSchedulePlan.run), models/gpt/fine_grained_callables.py (the four nodes) and
 * pipeline_parallel/schedules.py (the warm-up count).
 */
#include <math.h>
#include <string.h>

#include "testutil.h"

/*
 * DeepSeek-V3 (61 layers, the first 3 dense, one MTP depth of an MoE layer; h = 7168, E = 256,
 * top-8; models/deepseek-v3.json) at tp 2 with SP, pp 16 (rank 0 builds one layer, the other 15
 * ranks 60/15 = 4), ep 8 (etp = tp = 2), dp 8, mbs 1, gbs 64: 8 micro-batches.
 * T = s/t = 2048 tokens per rank; every rank receives T·k = 16 384 token copies. Forward, per
 * MoE layer and rank: the EP dispatch all-to-all's buffer 16 384·(2·7168 + 4) = 234 946 560 B,
 * 7/8 of it sent (205 578 240); the ETP AllGather of twice that, half sent (234 946 560); the
 * ETP ReduceScatter of 2·16 384·14 336 = 469 762 048 B, half sent (234 881 024); the combine
 * all-to-all 7/8 of 234 881 024 (205 520 896): 880 926 720 B, the backward the same.
 * Rank 0 holds only the dense layer 0 (the defect: 0 B), rank 1 layers 1-4 (two MoE), ranks
 * 2-15 four MoE layers and rank 15 the MTP depth besides: 5 MoE layers, 5·2·880 926 720·8 B.
 */
START_TEST(ep_bytes_of_the_busiest_stage)
{
    struct spsim_parallel p = testutil_config(2, 16, 1, 1, 64, true, SPSIM_RECOMPUTE_NONE);
    p.dp = 8;
    p.ep = 8;
    p.first_stage_layers = 1;
    p.moe_dispatcher = SPSIM_MOE_ALLTOALL;
    p.moe_routing = SPSIM_MOE_ROUTING_BALANCED; /* these values pin the balanced mean */
    struct spsim_result r = testutil_evaluate_config("deepseek-v3", "dgx-h100", &p);
    ck_assert_uint_eq(r.comm.ep_forward_wire_bytes_per_layer, 880926720ull);
    ck_assert_uint_eq(r.comm.ep_backward_wire_bytes_per_layer, 880926720ull);
    ck_assert_uint_eq(r.comm.ep_wire_bytes_per_iteration, 5ull * 2 * 880926720ull * 8);
    /* The time terms count the same stage: it is the critical one. */
    ck_assert_uint_eq(r.time.critical_stage, 15);
}
END_TEST

/* A round-number MoE model: L = 4, h = 1024, 8 heads of 128, SwiGLU, RMSNorm, RoPE, flash
 * attention, v = 32768, s = 4096; E = 16 experts, top-2, of FFN fe, a shared expert of FFN 1024;
 * every layer MoE. */
static struct spsim_model_shape
moe_shape(uint32_t fe)
{
    struct spsim_model_shape m = {
        .layers = 4,
        .hidden = 1024,
        .heads = 8,
        .kv_heads = 8,
        .head_dim = 128,
        .ffn_hidden = 4096,
        .vocab = 32768,
        .seq_len = 4096,
        .mlp = SPSIM_MLP_SWIGLU,
        .norm = SPSIM_NORM_RMSNORM,
        .attention = SPSIM_ATTENTION_FLASH,
        .position = SPSIM_POSITION_ROPE,
        .experts = 16,
        .experts_per_token = 2,
        .expert_ffn_hidden = fe,
        .shared_expert_ffn_hidden = 1024,
        .moe_layer_freq = 1,
    };
    return m;
}

static struct spsim_model *
moe_model(uint32_t fe)
{
    struct spsim_model_shape m = moe_shape(fe);
    return testutil_model(&m);
}

/* ep over dp ranks (tp 1), alltoall, mbs 1, 4 micro-batches per pipeline. */
static struct spsim_parallel
a2a_config(uint32_t pp, uint32_t vpp, uint32_t ep, uint32_t dp)
{
    struct spsim_parallel p =
        testutil_config(1, pp, vpp, 1, 4ull * dp, false, SPSIM_RECOMPUTE_NONE);
    p.dp = dp;
    p.ep = ep;
    p.moe_dispatcher = SPSIM_MOE_ALLTOALL;
    p.moe_routing = SPSIM_MOE_ROUTING_BALANCED; /* these values pin the balanced mean */
    return p;
}

enum { A, D, M, C };

/* The node of a step by its op (fine_grained_callables.py): D the dispatch all-to-all, M the
 * experts, C the combine all-to-all with the unpermutation and the residual add after it, A
 * the rest (attention, pre-MLP norm, router, permutation). */
static int
node_of(const char *op)
{
    /* the tokens' all-to-all and the probabilities' (token_dispatch: both in the D node) */
    if (strncmp(op, "dispatch all-to-all", 19) == 0 || strncmp(op, "flex dispatch", 13) == 0)
        return D;
    /* flex: the permutation of the received tokens and the unpermutation before the combine
     * run between the two exchanges, with the experts. */
    if (strncmp(op, "experts", 7) == 0 || strncmp(op, "permute (received", 17) == 0 ||
        strncmp(op, "unpermute (sum of the rank's", 28) == 0)
        return M;
    if (strncmp(op, "flex combine", 12) == 0)
        return C;
    if (strcmp(op, "combine all-to-all (EP)") == 0 ||
        strcmp(op, "unpermute (sum of each token's copies)") == 0 ||
        strcmp(op, "residual add (MoE)") == 0)
        return C;
    return A;
}

/* Node times (forward, backward data gradient, weight gradient), the walls of the steps that
 * are no token exchange, and the exchanges' whole time. */
static void
nodes(const struct spsim_schedule_step *steps, size_t n, double t[4][3], double *other, double *ep)
{
    memset(t, 0, 12 * sizeof(double));
    *other = *ep = 0;
    for (size_t i = 0; i < n; i++) {
        int dir = steps[i].phase == SPSIM_PHASE_FORWARD ? 0
                  : strcmp(steps[i].pass, "wgrad") == 0 ? 2
                                                        : 1;
        t[node_of(steps[i].op)][dir] += steps[i].time_s;
        if (strcmp(steps[i].operator_name, "moe") == 0)
            *ep += steps[i].time_s;
        else
            *other += steps[i].time_s;
    }
}

/*
 * One layer's pair, forward f of one micro-batch beside backward b of another, as
 * TransformerLayerSchedulePlan.run issues it on the two streams:
 *   comm: C_b, then D_f (after A_f), D_b (after M_b, or with delayed wgrad after M_b's data
 *         gradient only), C_f (after M_f);
 *   comp: A_f, M_b (after C_b), its wgrad, M_f (after D_f), A_b (after D_b).
 * NCCL holds k = 10/100 of the synthetic GPU's SMs while an exchange runs beside computation.
 */
static double k_sms = 0.1; /* the share of SMs the exchanges hold (NCCL: 10 of 100) */

static double
pair_by_hand(double t[4][3], bool delay, double *wall_out)
{
    double t1 = fmax(t[A][0], t[C][1] + t[C][2]);
    double mbd = t1 + t[M][1], mbw = mbd + t[M][2], df = t1 + t[D][0];
    double db = fmax(df, delay ? mbd : mbw) + t[D][1] + t[D][2];
    double mf = fmax(mbw, df) + t[M][0];
    double wall = fmax(mf, db) + fmax(t[A][1] + t[A][2], t[C][0]);
    double comp = t[A][0] + t[A][1] + t[A][2] + t[M][0] + t[M][1] + t[M][2];
    double comm = t[D][0] + t[D][1] + t[D][2] + t[C][0] + t[C][1] + t[C][2];
    double stall = fmax(0, wall - comp);
    *wall_out = wall;
    return wall + k_sms * (comm - stall);
}

static double
pair_exposed(const struct spsim_model *m, const struct spsim_hardware *hw,
             const struct spsim_parallel *p, bool delay, double *whole)
{
    static struct spsim_schedule_step steps[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = 0;
    ck_assert_int_eq(spsim_layer_schedule(m, hw, p, steps, SPSIM_MAX_SCHEDULE_STEPS, &n, NULL),
                     SPSIM_OK);
    double t[4][3], other, wall;
    nodes(steps, n, t, &other, whole);
    return fmax(0, pair_by_hand(t, delay, &wall) - other);
}

static struct spsim_result
eval_ok(const struct spsim_model *m, const struct spsim_hardware *hw,
        const struct spsim_parallel *p)
{
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, p, &r, &err) == SPSIM_OK, "%s", err.message);
    return r;
}

/*
 * Without pipelining (combined_1f1b_schedule_for_no_pipelining) the first forward and the last
 * backward run alone: of m = 4 micro-batches 3 pair up, so the 4 MoE layers leave
 * 4·(1·whole + 3·pair) exposed. EP 16 spans the synthetic profile's two nodes, here with 2 GB/s
 * NICs: each exchange (about 4 ms) is longer than the computation beside it and stays partly
 * exposed. With delayed wgrad the dispatch backward leaves after the experts' data gradient
 * and hides under their wgrad too: less stays exposed.
 */
START_TEST(pairs_without_pipelining)
{
    struct spsim_model *m = moe_model(2048);
    struct spsim_hardware *hw = testutil_hardware_text(TESTUTIL_SYNTHETIC_HW("2"));
    struct spsim_parallel p = a2a_config(1, 1, 16, 16);
    struct spsim_result off = eval_ok(m, hw, &p);
    double whole, pair = pair_exposed(m, hw, &p, false, &whole);
    ck_assert_double_eq_tol(off.time.ep_exposed_s, 4 * 4 * whole, 1e-12 * whole);
    ck_assert(pair > 0 && pair < whole);
    p.moe_a2a_overlap = true;
    struct spsim_result on = eval_ok(m, hw, &p);
    double expect = 4 * (1 * whole + 3 * pair);
    ck_assert_double_eq_tol(on.time.ep_exposed_s, expect, 1e-12 * expect);
    ck_assert_double_eq_tol(on.time.ep_a2a_hidden_s, 4 * 4 * whole - expect, 1e-12 * whole);
    ck_assert_double_eq_tol(off.time.iteration_s - on.time.iteration_s, on.time.ep_a2a_hidden_s,
                            1e-9 * off.time.iteration_s);
    p.delay_wgrad_compute = true;
    double delayed = pair_exposed(m, hw, &p, true, &whole);
    ck_assert(delayed < pair);
    on = eval_ok(m, hw, &p);
    expect = 4 * (1 * whole + 3 * delayed);
    ck_assert_double_eq_tol(on.time.ep_exposed_s, expect, 1e-12 * expect);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * The flex dispatcher's kernels hold their own SMs while they run beside computation:
 * --moe-flex-dispatcher-num-sms 30 of the synthetic GPU's 100 (k = 0.3); without it the
 * backend's default, DeepEP 20 (0.2) and HybridEP 8 (0.08) for EP 16 across the profile's two
 * NVLink domains (DeepEP hybrid-ep config.cuh: 24 in one node, 8 across). 4·(whole + 3·pair)
 * as for alltoall.
 */
START_TEST(flex_kernels_hold_their_sms)
{
    struct spsim_model *m = moe_model(2048);
    struct spsim_hardware *hw = testutil_hardware_text(TESTUTIL_SYNTHETIC_HW("2"));
    struct spsim_parallel p = a2a_config(1, 1, 16, 16);
    p.moe_dispatcher = SPSIM_MOE_FLEX;
    p.moe_a2a_overlap = true;
    static const struct {
        enum spsim_moe_flex_backend backend;
        uint32_t sms;
        double k;
    } cases[] = {
        {SPSIM_FLEX_DEEPEP, 30, 0.3}, {SPSIM_FLEX_DEEPEP, 0, 0.2}, {SPSIM_FLEX_HYBRIDEP, 0, 0.08}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        p.moe_flex_backend = cases[i].backend;
        p.moe_flex_sms = cases[i].sms;
        k_sms = cases[i].k;
        double whole, pair = pair_exposed(m, hw, &p, false, &whole);
        struct spsim_result on = eval_ok(m, hw, &p);
        double expect = 4 * (1 * whole + 3 * pair);
        ck_assert_double_eq_tol(on.time.ep_exposed_s, expect, 1e-12 * expect);
    }
    k_sms = 0.1;
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * Interleaved, pp 2 and vpp 2 (one layer a chunk), m = 4: the last rank (the output layer's)
 * is critical; its warm-up runs 2(p − r − 1) + (v − 1)·p = 2 chunk forwards and one more for
 * the overlap, w = 3, so of its m·v = 8 chunk forwards 5 pair up: (8 − 3)/2 = 2.5 micro-batches
 * of its 2 MoE layers, the other 1.5 alone: 2·(1.5·whole + 2.5·pair).
 */
START_TEST(pairs_interleaved)
{
    struct spsim_model *m = moe_model(2048);
    struct spsim_hardware *hw = testutil_hardware_text(TESTUTIL_SYNTHETIC_HW("2"));
    struct spsim_parallel p = a2a_config(2, 2, 16, 16);
    p.moe_a2a_overlap = true;
    double whole, pair = pair_exposed(m, hw, &p, false, &whole);
    struct spsim_result r = eval_ok(m, hw, &p);
    ck_assert_uint_eq(r.time.critical_stage, 1);
    double expect = 2 * (1.5 * whole + 2.5 * pair);
    ck_assert_double_eq_tol(r.time.ep_exposed_s, expect, 1e-12 * expect);
    ck_assert_double_eq_tol(r.time.ep_a2a_hidden_s, 2 * 4 * whole - expect, 1e-12 * whole);
    /* 1F1B without interleaving: Megatron refuses the overlap. */
    p.vpp = 1;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_parallel_check(m, hw, &p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_str_eq(err.message, "parallel config: field 'vpp': If enabling EP A2A overlap, "
                                  "virtual_pipeline_model_parallel_size must be specified when "
                                  "pipeline_model_parallel_size > 1");
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

static void
refused(const struct spsim_model *m, const struct spsim_parallel *p, const char *text)
{
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_parallel_check(m, NULL, p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, text), "'%s' lacks '%s'", err.message, text);
}

/* Megatron's rules (transformer_config.py __post_init__), its messages. */
START_TEST(rules)
{
    struct spsim_model *m = moe_model(1024);
    struct spsim_parallel p = a2a_config(1, 1, 8, 8);
    p.moe_a2a_overlap = true;
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, NULL), SPSIM_OK);
    struct spsim_parallel q = p;
    q.ep = 1;
    refused(m, &q,
            "overlap_moe_expert_parallel_comm is only supported with expert model "
            "parallelism");
    q = p;
    q.moe_dispatcher = SPSIM_MOE_ALLGATHER;
    refused(m, &q,
            "overlap_moe_expert_parallel_comm is supported with alltoall/flex token "
            "dispatcher");
    q = p;
    q.recompute = SPSIM_RECOMPUTE_FULL;
    refused(m, &q, "disable full recomputation when enabling overlap_moe_expert_parallel_comm");
    q = p;
    q.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    q.recompute_modules = SPSIM_RMOD_MOE;
    refused(m, &q, "disable moe in recompute_modules when enabling");
    q.recompute_modules = SPSIM_RMOD_MOE_ACT;
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &q, NULL, NULL), SPSIM_OK);
    q = p;
    q.moe_a2a_overlap = false;
    q.delay_wgrad_compute = true;
    refused(m, &q,
            "overlap_moe_expert_parallel_comm must be enabled when enabling "
            "delay_wgrad_compute");
    spsim_model_destroy(m);
    /* A dense model: no expert parallelism to overlap. */
    struct spsim_model_shape g = testutil_gpt_shape(4, 1024, 8, 4096, 32768);
    m = testutil_model(&g);
    q = testutil_config(1, 1, 1, 1, 8, false, SPSIM_RECOMPUTE_NONE);
    q.dp = 8;
    q.moe_a2a_overlap = true;
    refused(m, &q,
            "overlap_moe_expert_parallel_comm is only supported with expert model "
            "parallelism");
    spsim_model_destroy(m);
    /* More than one MTP depth. */
    struct spsim_model_shape s = moe_shape(1024);
    s.mtp_layers = 2;
    m = testutil_model(&s);
    refused(m, &p,
            "MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm.");
    spsim_model_destroy(m);
}
END_TEST

/* The launch line's and a Megatron-Bridge YAML's flags (TransformerConfig
 * overlap_moe_expert_parallel_comm and delay_wgrad_compute; Bridge's performance configs call
 * the first moe_a2a_overlap). */
START_TEST(imported)
{
    static const char line[] =
        "pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 8 "
        "--seq-length 512 --vocab-size 1000 --bf16 --num-experts 8 --moe-router-topk 2 "
        "--expert-model-parallel-size 4 --moe-token-dispatcher-type alltoall "
        "--overlap-moe-expert-parallel-comm --delay-wgrad-compute";
    static const char yaml[] =
        "model:\n  num_layers: 4\n  hidden_size: 256\n  num_attention_heads: 8\n"
        "  seq_length: 512\n  vocab_size: 1000\n  bf16: true\n  num_moe_experts: 8\n"
        "  moe_router_topk: 2\n  expert_model_parallel_size: 4\n"
        "  moe_token_dispatcher_type: alltoall\n  moe_a2a_overlap: true\n"
        "  delay_wgrad_compute: true\n";
    const char *texts[] = {line, yaml}, *names[] = {"launch.sh", "bridge.yaml"};
    for (int i = 0; i < 2; i++) {
        struct spsim_megatron_config mc;
        struct spsim_error err = {0};
        ck_assert_msg(spsim_megatron_parse(texts[i], strlen(texts[i]), names[i], &mc, &err) ==
                          SPSIM_OK,
                      "%s", err.message);
        ck_assert(mc.par.moe_a2a_overlap && mc.par.delay_wgrad_compute);
        ck_assert_str_eq(mc.unmodelled, "");
        spsim_model_destroy(mc.model);
    }
}
END_TEST

/*
 * The router with TP and SP (router.py): each TP rank routes its own sequence shard, so the
 * logits, the top-k and (without auxiliary losses, Megatron's default) the routing need no TP
 * collective; the router weight, replicated and marked sequence_parallel, gets a partial
 * gradient on each rank, summed over TP once per iteration with the other such gradients
 * (finalize_model_grads._allreduce_non_tensor_model_parallel_grads). tp 2 with SP, ep 2,
 * etp 1, dp 1 (expert DP 1, no DP reduction, untied embeddings): dp_exposed_s is that one
 * AllReduce of 4 layers · E·h = 16·1024 fp32 gradients, 262 144 B, over the 2 TP GPUs.
 */
START_TEST(router_gradient_over_tp)
{
    struct spsim_model *m = moe_model(1024);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = testutil_config(2, 1, 1, 1, 1, true, SPSIM_RECOMPUTE_NONE);
    p.ep = 2;
    p.etp = 1;
    p.moe_dispatcher = SPSIM_MOE_ALLTOALL;
    p.moe_routing = SPSIM_MOE_ROUTING_BALANCED; /* these values pin the balanced mean */
    struct spsim_collective_prediction ar;
    ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_REDUCE, 2, 1, 262144, &ar, NULL),
                     SPSIM_OK);
    struct spsim_result r = eval_ok(m, hw, &p);
    ck_assert_uint_eq(r.comm.expert_dp_ranks, 1);
    ck_assert_double_eq_tol(r.time.dp_exposed_s, ar.time_s, 1e-15);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

static Suite *
ep_overlap_suite(void)
{
    Suite *s = suite_create("ep_overlap");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, ep_bytes_of_the_busiest_stage);
    tcase_add_test(tc, pairs_without_pipelining);
    tcase_add_test(tc, flex_kernels_hold_their_sms);
    tcase_add_test(tc, pairs_interleaved);
    tcase_add_test(tc, rules);
    tcase_add_test(tc, imported);
    tcase_add_test(tc, router_gradient_over_tp);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(ep_overlap_suite());
}
