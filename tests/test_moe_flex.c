/*
 * The flex token dispatcher (src/engine/moe_flex.c) against closed forms worked here by hand
 * from its sources: Megatron-Core token_dispatcher.py (MoEFlexTokenDispatcher: one group of
 * etp·ep ranks, the routing map widened over etp), fused_a2a.py (bf16 dispatch for both
 * backends), DeepEP main csrc/kernels/legacy/internode.cu (get_num_bytes_per_token: hidden,
 * an 8-byte SourceMeta, int32 top-k indices and fp32 weights, 16-byte aligned; one RDMA send per
 * destination node, forwarded over NVLink) and DeepEP hybrid-ep csrc/hybrid_ep/config.cuh
 * (dispatch: bf16 token and the destination domain's fp32 probabilities; combine bf16).
 *
 * Uniform top-k over E experts without replacement: a set of S experts receives a token with
 * probability 1 − C(E − S, k)/C(E, k). Per source rank (T tokens, n ranks in N domains):
 * NVLink bytes T·B·p_rank·(n − N), RDMA bytes T·B·p_domain·(N − 1).
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "engine/collective_model.h"
#include "engine/eval.h"
#include "engine/moe.h"
#include "testutil.h"

#define H 1024.0

/* h = 1024, 8 heads, SwiGLU, every layer MoE with E experts of 1024, top-2, s = 4096. */
static struct spsim_model_shape
flex_shape(uint32_t experts)
{
    struct spsim_model_shape m = testutil_gpt_shape(2, 1024, 8, 4096, 32768);
    m.mlp = SPSIM_MLP_SWIGLU;
    m.norm = SPSIM_NORM_RMSNORM;
    m.position = SPSIM_POSITION_ROPE;
    m.linear_bias = false;
    m.dropout = false;
    m.experts = experts;
    m.experts_per_token = 2;
    m.expert_ffn_hidden = 1024;
    m.moe_layer_freq = 1;
    return m;
}

/* tp 1, ep = dp = n (expert DP 1), the flex dispatcher on `backend`. */
static struct spsim_parallel
flex_config(uint32_t ep, uint32_t etp, enum spsim_moe_flex_backend backend)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 1;
    p.sp = false;
    p.ep = ep;
    p.etp = etp;
    p.dp = ep * etp;
    p.gbs = p.dp;
    p.moe_dispatcher = SPSIM_MOE_FLEX;
    p.moe_routing = SPSIM_MOE_ROUTING_BALANCED; /* these values pin the balanced mean */
    p.moe_flex_backend = backend;
    return p;
}

static struct spsim_moe_flex_traffic
traffic(const struct spsim_model_shape *m, const struct spsim_parallel *p, uint32_t per_domain)
{
    struct spsim_layer_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    spsim_layer_config_from(m, p, &cfg);
    cfg.flex_per_domain = per_domain;
    struct spsim_moe_traffic tr;
    bool ok = true;
    spsim_moe_traffic(m, &cfg, &tr, &ok);
    ck_assert(ok);
    return tr.flex;
}

static void
assert_bytes(uint64_t got, double want)
{
    ck_assert_msg(fabs((double)got - want) <= 1.0, "got %llu, want %.3f", (unsigned long long)got,
                  want);
}

/*
 * One domain, ep 4, E = 4 (one expert a rank), T = 4096: p_rank = 1 − C(3,2)/C(4,2) = 1/2, so
 * each rank sends T·p_rank·(n − 1) = 4096·1/2·3 = 6144 records over NVLink, none over RDMA.
 * DeepEP records: dispatch ⌈2048 + 8 + 8·2⌉₁₆ = 2080 B, combine and the dispatch's backward
 * ⌈2048 + 8 + 4·2⌉₁₆ = 2064 B, the combine's backward ⌈2048 + 8⌉₁₆ = 2064 B.
 * HybridEP: dispatch 2048 + 4·L·g = 2048 + 4·1·4 = 2064 B (and its backward), combine 2048 B.
 */
START_TEST(one_domain_bytes)
{
    struct spsim_model_shape m = flex_shape(4);
    struct spsim_parallel p = flex_config(4, 1, SPSIM_FLEX_DEEPEP);
    struct spsim_moe_flex_traffic f = traffic(&m, &p, 4);
    ck_assert(f.ranks == 4 && f.domains == 1);
    ck_assert(fabs(f.p_rank - 0.5) < 1e-12);
    ck_assert_uint_eq(f.dispatch_nvlink[0], 6144ull * 2080);
    ck_assert_uint_eq(f.dispatch_nvlink[1], 6144ull * 2064);
    ck_assert_uint_eq(f.combine_nvlink[0], 6144ull * 2064);
    ck_assert_uint_eq(f.combine_nvlink[1], 6144ull * 2064);
    ck_assert_uint_eq(f.dispatch_rdma[0] + f.combine_rdma[0], 0);
    /* Each rank receives n·T·p_rank = 4·4096/2 = 8192 tokens for its T·k = 8192 copies. */
    ck_assert_uint_eq(f.received, 8192);
    p.moe_flex_backend = SPSIM_FLEX_HYBRIDEP;
    f = traffic(&m, &p, 4);
    ck_assert_uint_eq(f.dispatch_nvlink[0], 6144ull * 2064);
    ck_assert_uint_eq(f.dispatch_nvlink[1], 6144ull * 2064);
    ck_assert_uint_eq(f.combine_nvlink[0], 6144ull * 2048);
    ck_assert_uint_eq(f.combine_nvlink[1], 6144ull * 2048);
}
END_TEST

/*
 * Two domains of 8: ep 16, E = 16, T = 3840. p_rank = 1 − C(15,2)/C(16,2) = 1/8; a domain holds
 * 8 experts: p_domain = 1 − C(8,2)/C(16,2) = 1 − 28/120 = 23/30. NVLink: 3840·1/8·(16 − 2) =
 * 6720 records; RDMA: 3840·23/30·1 = 2944 records. HybridEP dispatch record 2048 + 4·1·8 =
 * 2080 B.
 */
START_TEST(two_domain_bytes)
{
    struct spsim_model_shape m = flex_shape(16);
    m.seq_len = 3840;
    struct spsim_parallel p = flex_config(16, 1, SPSIM_FLEX_HYBRIDEP);
    struct spsim_moe_flex_traffic f = traffic(&m, &p, 8);
    ck_assert(f.ranks == 16 && f.per_domain == 8 && f.domains == 2);
    ck_assert(fabs(f.p_domain - 23.0 / 30.0) < 1e-12);
    ck_assert_uint_eq(f.dispatch_nvlink[0], 6720ull * 2080);
    ck_assert_uint_eq(f.dispatch_rdma[0], 2944ull * 2080);
    ck_assert_uint_eq(f.combine_nvlink[0], 6720ull * 2048);
    ck_assert_uint_eq(f.combine_rdma[0], 2944ull * 2048);
    ck_assert_uint_eq(f.combine_rdma[1], 2944ull * 2048);
    /* On GB200 NVL72 (72 GPUs of one NVLink domain) HybridEP keeps the 16 ranks in one domain,
     * DeepEP's RDMA ranks are at most 8 NVLink peers: two. */
    struct spsim_hardware *hw = testutil_hardware("gb200-nvl72");
    struct spsim_layer_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    spsim_layer_config_from(&m, &p, &cfg);
    ck_assert_uint_eq(spsim_moe_flex_per_domain(hw, &cfg), 16);
    p.moe_flex_backend = SPSIM_FLEX_DEEPEP;
    spsim_layer_config_from(&m, &p, &cfg);
    ck_assert_uint_eq(spsim_moe_flex_per_domain(hw, &cfg), 8);
    spsim_hardware_destroy(hw);
}
END_TEST

/*
 * Group-limited routing, E = 16 in G = 4 groups of 4, M = 2 kept, k = 2 (ep 16, two domains
 * of 8 experts = two whole groups). A rank's expert: kept with 2/4, then hit with
 * 1 − C(7,2)/C(8,2) = 1/4: p_rank = 1/8 (k/E, as without groups). A domain: i of its 2 groups
 * kept with C(2,i)·C(2,2−i)/C(4,2) = 1/6, 4/6, 1/6; then missed with C(8 − 4i, 2)/C(8,2) = 1,
 * 6/28, 0: miss = 1/6 + 4/6·6/28 = 13/42, p_domain = 29/42 (23/30 without groups). RDMA
 * records 3840·29/42 = 2651.43.
 */
START_TEST(group_limited_bytes)
{
    struct spsim_model_shape m = flex_shape(16);
    m.seq_len = 3840;
    m.router_num_groups = 4;
    m.router_group_topk = 2;
    struct spsim_parallel p = flex_config(16, 1, SPSIM_FLEX_HYBRIDEP);
    struct spsim_moe_flex_traffic f = traffic(&m, &p, 8);
    ck_assert(fabs(f.p_rank - 1.0 / 8.0) < 1e-12);
    ck_assert(fabs(f.p_domain - 29.0 / 42.0) < 1e-12);
    assert_bytes(f.dispatch_rdma[0], 3840.0 * 29.0 / 42.0 * 2080.0);
    assert_bytes(f.combine_rdma[0], 3840.0 * 29.0 / 42.0 * 2048.0);
    ck_assert_uint_eq(f.dispatch_nvlink[0], 6720ull * 2080);
    /* Ranks of two experts inside a group of 4: E = 16, ep 8, G = 4, M = 2: kept with 1/2,
     * hit with 1 − C(6,2)/C(8,2) = 13/28; p_rank = 13/56. */
    p = flex_config(8, 1, SPSIM_FLEX_HYBRIDEP);
    f = traffic(&m, &p, 8);
    ck_assert(fabs(f.p_rank - 13.0 / 56.0) < 1e-12);
}
END_TEST

/*
 * etp 2, ep 2 (n = 4, one domain), E = 4, T = 4096: each EP rank holds 2 experts, p_rank =
 * 1 − C(2,2)/C(4,2) = 5/6, and a token goes to both etp ranks of each chosen EP rank:
 * 4096·5/6·3 = 10240 records; DeepEP's top-k' = etp·k = 4: ⌈2048 + 8 + 8·4⌉₁₆ = 2096 B.
 */
START_TEST(etp_bytes)
{
    struct spsim_model_shape m = flex_shape(4);
    struct spsim_parallel p = flex_config(2, 2, SPSIM_FLEX_DEEPEP);
    struct spsim_moe_flex_traffic f = traffic(&m, &p, 4);
    ck_assert(f.ranks == 4 && f.domains == 1);
    ck_assert_uint_eq(f.dispatch_nvlink[0], 10240ull * 2096);
    ck_assert_uint_eq(f.combine_nvlink[0], 10240ull * ((2048 + 8 + 16 + 15) / 16 * 16));
}
END_TEST

/* The step of the layer schedule named `name` in `phase`; fails if absent. */
static struct spsim_schedule_step
find_step(const struct spsim_schedule_step *steps, size_t n, const char *name, int phase)
{
    for (size_t i = 0; i < n; i++)
        if (strstr(steps[i].op, name) && (int)steps[i].phase == phase)
            return steps[i];
    ck_abort_msg("no step '%s'", name);
    return steps[0];
}

/*
 * Times on the synthetic profile (NVLink all-to-all busbw 200 GB/s, base latency 5 us; 8 NICs
 * of 40 GB/s for 8 GPUs, base latency 10 us; HBM 1000 GB/s), two domains as above (ep 16 on
 * 16 GPUs): the HybridEP dispatch moves 6720·2080 B on NVLink (69.888 us) and 2944·2080 B over
 * RDMA (153.088 us) together: 10 + 153.088 us. The combine: 10 + 2944·2048/40e9 s. The
 * receiver's permute: each rank receives 16·3840/8 = 7680 tokens for its T·k = 7680 copies,
 * reading and writing 2h each: 2·1024·(7680 + 7680) B / 1000 GB/s = 31.457 us.
 */
START_TEST(flex_step_times)
{
    struct spsim_model_shape s = flex_shape(16);
    s.seq_len = 3840;
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = testutil_synthetic("");
    struct spsim_parallel p = flex_config(16, 1, SPSIM_FLEX_HYBRIDEP);
    struct spsim_schedule_step steps[256];
    size_t n = 0;
    struct spsim_error err = {0};
    int rc = spsim_layer_schedule(m, hw, &p, steps, 256, &n, &err);
    ck_assert_msg(rc == SPSIM_OK, "%s", err.message);
    struct spsim_schedule_step d = find_step(steps, n, "flex dispatch", SPSIM_PHASE_FORWARD);
    ck_assert_int_eq(d.tier, SPSIM_TIER_HIERARCHICAL);
    ck_assert_uint_eq(d.wire_bytes, (6720ull + 2944) * 2080);
    ck_assert_double_eq_tol(d.time_s, 10e-6 + 2944.0 * 2080 / 40e9, 1e-12);
    struct spsim_schedule_step c = find_step(steps, n, "flex combine", SPSIM_PHASE_FORWARD);
    ck_assert_double_eq_tol(c.time_s, 10e-6 + 2944.0 * 2048 / 40e9, 1e-12);
    struct spsim_schedule_step b = find_step(steps, n, "flex dispatch", SPSIM_PHASE_BACKWARD);
    ck_assert_double_eq_tol(b.time_s, 10e-6 + 2944.0 * 2080 / 40e9, 1e-12);
    struct spsim_schedule_step pm = find_step(steps, n, "permute (received", SPSIM_PHASE_FORWARD);
    ck_assert_double_eq_tol(pm.time_s, 2.0 * H * (7680 + 7680) / 1000e9, 1e-12);
    /* The unpermute back: the copies read, the received tokens written, the same bytes. */
    pm = find_step(steps, n, "unpermute (sum of the rank", SPSIM_PHASE_FORWARD);
    ck_assert_double_eq_tol(pm.time_s, 2.0 * H * (7680 + 7680) / 1000e9, 1e-12);
    /* One domain (ep 8, E = 16, T = 3840, 2 experts a rank): NVLink-bound at 200 GB/s.
     * p_rank = 1 − C(14,2)/C(16,2) = 29/120; 3840·29/120·7 = 6496 DeepEP records of 2080 B. */
    p = flex_config(8, 1, SPSIM_FLEX_DEEPEP);
    rc = spsim_layer_schedule(m, hw, &p, steps, 256, &n, &err);
    ck_assert_msg(rc == SPSIM_OK, "%s", err.message);
    d = find_step(steps, n, "flex dispatch", SPSIM_PHASE_FORWARD);
    ck_assert_int_eq(d.tier, SPSIM_TIER_NVLINK);
    ck_assert_uint_eq(d.wire_bytes, 6496ull * 2080);
    ck_assert_double_eq_tol(d.time_s, 5e-6 + 6496.0 * 2080 / 200e9, 1e-12);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * HybridEP's measured rates (gpu.hybridep_dispatch_GBps / _combine_GBps: DeepEP hybrid-ep
 * docs/README_Hybrid-EP.md, counted as tests/test_hybrid_ep.py counts them: the hidden rows a
 * rank receives, its own included, 2h bytes each, over the API call's time). One domain, ep 4,
 * E = 4, T = 4096 as one_domain_bytes: a rank receives n·T·p_rank = 4·4096·1/2 = 8192 rows,
 * 8192·2·1024 = 16777216 B. At 100 GB/s dispatch and 150 GB/s combine the kernels take
 * 167.772 us and 111.848 us, above the links' 5 + 6144·2064/200e3 = 68.405 us (dispatch) and
 * 5 + 6144·2048/200e3 = 67.915 us (combine): the call is max(latency + links, kernel). The
 * forward dispatch and the combine's backward run the dispatch kernel; the combine and the
 * dispatch's backward the combine kernel. DeepEP keeps the links' rates.
 */
/* The time of the step `name` in `phase` of the layer schedule of (m, hw, p). */
static double
step_time(const struct spsim_model *m, const struct spsim_hardware *hw,
          const struct spsim_parallel *p, const char *name, int phase)
{
    struct spsim_schedule_step steps[256];
    size_t n = 0;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_layer_schedule(m, hw, p, steps, 256, &n, &err) == SPSIM_OK, "%s",
                  err.message);
    return find_step(steps, n, name, phase).time_s;
}

START_TEST(hybridep_kernel_rates)
{
    struct spsim_model_shape s = flex_shape(4);
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw =
        testutil_synthetic("\"hybridep_dispatch_GBps\": {\"value\": 100, \"source\": \"t\"},"
                           "\"hybridep_combine_GBps\": {\"value\": 150, \"source\": \"t\"},");
    struct spsim_parallel p = flex_config(4, 1, SPSIM_FLEX_HYBRIDEP);
    double recv = 8192.0 * 2 * H, disp = recv / 100e9, comb = recv / 150e9;
    ck_assert(disp > 5e-6 + 6144.0 * 2064 / 200e9 && comb > 5e-6 + 6144.0 * 2048 / 200e9);
    ck_assert_double_eq_tol(step_time(m, hw, &p, "flex dispatch", SPSIM_PHASE_FORWARD), disp,
                            1e-12);
    ck_assert_double_eq_tol(step_time(m, hw, &p, "flex combine", SPSIM_PHASE_FORWARD), comb, 1e-12);
    ck_assert_double_eq_tol(step_time(m, hw, &p, "flex dispatch", SPSIM_PHASE_BACKWARD), comb,
                            1e-12);
    ck_assert_double_eq_tol(step_time(m, hw, &p, "flex combine", SPSIM_PHASE_BACKWARD), disp,
                            1e-12);
    /* DeepEP: the links (the records of one_domain_bytes). */
    p = flex_config(4, 1, SPSIM_FLEX_DEEPEP);
    ck_assert_double_eq_tol(step_time(m, hw, &p, "flex dispatch", SPSIM_PHASE_FORWARD),
                            5e-6 + 6144.0 * 2080 / 200e9, 1e-12);
    spsim_hardware_destroy(hw);
    /* Faster kernels than the links: the links' time stays. */
    hw = testutil_synthetic("\"hybridep_dispatch_GBps\": {\"value\": 1000, \"source\": \"t\"},");
    p = flex_config(4, 1, SPSIM_FLEX_HYBRIDEP);
    ck_assert_double_eq_tol(step_time(m, hw, &p, "flex dispatch", SPSIM_PHASE_FORWARD),
                            5e-6 + 6144.0 * 2064 / 200e9, 1e-12);
    spsim_hardware_destroy(hw);
    testutil_synthetic_refused("\"hybridep_combine_GBps\": {\"value\": 0, \"source\": \"t\"},",
                               "hybridep_combine_GBps");
    spsim_model_destroy(m);
}
END_TEST

/*
 * Across domains the IB rates (gpu.hybridep_rdma_*_GBps) count 2h bytes per destination domain
 * a token reaches, its own included (DeepEP hybrid-ep tests/utils.py
 * count_rdma_send_from_routing_map). Two domains as flex_step_times (ep 16 on 16 GPUs, E = 16,
 * T = 3840, p_domain = 23/30): 3840·23/30·2 = 5888 sends, 5888·2·1024 = 12058624 B. At 50 GB/s
 * the dispatch takes 241.172 us, above its links' 10 + 2944·2080/40e3 = 163.088 us; at 100 GB/s
 * the combine's 120.586 us stay below its links' 10 + 2944·2048/40e3 = 160.733 us.
 */
START_TEST(hybridep_rdma_rates)
{
    struct spsim_model_shape s = flex_shape(16);
    s.seq_len = 3840;
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw =
        testutil_synthetic("\"hybridep_rdma_dispatch_GBps\": {\"value\": 50, \"source\": \"t\"},"
                           "\"hybridep_rdma_combine_GBps\": {\"value\": 100, \"source\": \"t\"},");
    struct spsim_parallel p = flex_config(16, 1, SPSIM_FLEX_HYBRIDEP);
    double sends = 5888.0 * 2 * H;
    ck_assert_double_eq_tol(step_time(m, hw, &p, "flex dispatch", SPSIM_PHASE_FORWARD),
                            sends / 50e9, 1e-12);
    ck_assert_double_eq_tol(step_time(m, hw, &p, "flex combine", SPSIM_PHASE_FORWARD),
                            10e-6 + 2944.0 * 2048 / 40e9, 1e-12);
    /* The combine's backward runs the dispatch kernel. */
    ck_assert_double_eq_tol(step_time(m, hw, &p, "flex combine", SPSIM_PHASE_BACKWARD),
                            sends / 50e9, 1e-12);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/* The iteration sees the flex steps: per MoE layer forward, dispatch + combine on the wire
 * (one domain, ep 4, E = 4: 6144·(2080 + 2064) B), backward 6144·(2064 + 2064) B. */
START_TEST(flex_in_evaluate)
{
    struct spsim_model_shape s = flex_shape(4);
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = testutil_synthetic("");
    struct spsim_parallel p = flex_config(4, 1, SPSIM_FLEX_DEEPEP);
    struct spsim_result r;
    struct spsim_error err = {0};
    int rc = spsim_evaluate(m, hw, &p, &r, &err);
    ck_assert_msg(rc == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(r.comm.ep_forward_wire_bytes_per_layer, 6144ull * (2080 + 2064));
    ck_assert_uint_eq(r.comm.ep_backward_wire_bytes_per_layer, 6144ull * (2064 + 2064));
    ck_assert_int_eq(r.comm.ep_tier, SPSIM_TIER_NVLINK);
    /* Forward and backward of both, on each of the 2 layers, 1 micro-batch. */
    double step = 5e-6 + 6144.0 * 2080 / 200e9, comb = 5e-6 + 6144.0 * 2064 / 200e9;
    ck_assert_double_eq_tol(r.time.ep_exposed_s, 2 * (step + comb + comb + comb), 1e-9);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("moe-flex");
    TCase *tc = tcase_create("flex");
    tcase_add_test(tc, one_domain_bytes);
    tcase_add_test(tc, two_domain_bytes);
    tcase_add_test(tc, group_limited_bytes);
    tcase_add_test(tc, etp_bytes);
    tcase_add_test(tc, flex_step_times);
    tcase_add_test(tc, flex_in_evaluate);
    tcase_add_test(tc, hybridep_kernel_rates);
    tcase_add_test(tc, hybridep_rdma_rates);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
