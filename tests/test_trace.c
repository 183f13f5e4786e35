/*
 * The timeline of one iteration (spsim_trace_json) against the query's terms and Megatron-Core's
 * schedule, worked independently of engine/trace.c:
 * - the document is Chrome trace-event JSON (object format: "traceEvents", each event with
 *   name, ph "X" (ts, dur in microseconds, pid, tid) or "M" metadata);
 * - every pipeline rank runs each (micro-batch, chunk) forward and backward once; the compute
 *   stream never overlaps itself; its forwards and backwards sum to forward_s + backward_s +
 *   recompute_s plus the exposed TP/CP/EP, offload, FP8-amax, aux-loss and host terms, its
 *   exposed sends to pp_p2p_s, the tail to dp_exposed + tied + expert-bias + optimizer;
 * - every rank idles, before the tail, for exactly pp_bubble_s (the composition's fill and
 *   drain: (p − 1)/v·(mean stage + whole sends), Narayanan et al. 2021, §2.2) and the trace
 *   ends at iteration_s, for 1F1B and interleaved, even and uneven stages, blocking and
 *   overlapped sends (a hop priced at the critical stage instead fails all of them but pp 1);
 * - schedules.py's warm-up: (p − r − 1)·2 + (v − 1)·p chunk forwards (interleaved), min(p − r −
 *   1, m) (1F1B); the k-th forward runs chunk (k / p) mod v of micro-batch (k / (p·v))·p + k mod p.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "spsim/spsim.h"
#include "testutil.h"

static struct spsim_result
result(uint32_t pp, uint32_t vpp, uint64_t gbs)
{
    struct spsim_parallel p = testutil_config(2, pp, vpp, 1, gbs, true, SPSIM_RECOMPUTE_SELECTIVE);
    return testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
}

static cJSON *
trace(const struct spsim_result *r)
{
    char *doc = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_trace_json(r, &doc, &err) == SPSIM_OK, "%s", err.message);
    cJSON *root = cJSON_Parse(doc);
    free(doc);
    ck_assert_ptr_nonnull(root);
    return root;
}

static double
num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    ck_assert_msg(cJSON_IsNumber(v), "field %s", k);
    return v->valuedouble;
}

struct sums {
    double compute, sends, tail, end;
    int fwd, bwd, wgrad;
};

/* Walk the events of rank `pid`, checking the format and that its compute stream is serial. */
static struct sums
walk(const cJSON *root, int pid, uint32_t m, uint32_t v)
{
    struct sums s = {0};
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    ck_assert(cJSON_IsArray(events));
    double last_end = 0;
    char *seen = calloc((size_t)3 * m * v, 1);
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        const char *ph = cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring;
        ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "name")));
        if (strcmp(ph, "M") == 0)
            continue;
        ck_assert_str_eq(ph, "X");
        double ts = num(e, "ts") * 1e-6, dur = num(e, "dur") * 1e-6;
        ck_assert(dur >= 0);
        if ((int)num(e, "pid") != pid)
            continue;
        int tid = (int)num(e, "tid");
        const char *cat = cJSON_GetObjectItemCaseSensitive(e, "cat")->valuestring;
        s.end = fmax(s.end, ts + dur);
        if (tid == 3)
            s.tail += dur;
        if (tid != 0)
            continue;
        ck_assert_msg(ts >= last_end - 1e-12, "compute stream overlaps at %g", ts);
        last_end = ts + dur;
        if (strcmp(cat, "p2p") == 0) {
            s.sends += dur;
            continue;
        }
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        int mb = (int)num(args, "microbatch"), chunk = (int)num(args, "chunk");
        int cls = strcmp(cat, "forward") == 0 ? 0 : strcmp(cat, "backward") == 0 ? 1 : 2;
        ck_assert(cls < 2 || strcmp(cat, "wgrad") == 0);
        ck_assert(mb >= 0 && (uint32_t)mb < m && chunk >= 0 && (uint32_t)chunk < v);
        size_t at = ((size_t)cls * m + (size_t)mb) * v + (size_t)chunk;
        ck_assert_msg(!seen[at], "twice: %s mb %d chunk %d", cat, mb, chunk);
        seen[at] = 1;
        s.compute += dur;
        *(cls == 0 ? &s.fwd : cls == 1 ? &s.bwd : &s.wgrad) += 1;
    }
    free(seen);
    return s;
}

static double
exposed_terms(const struct spsim_time_report *t)
{
    return t->forward_s + t->backward_s + t->recompute_s + t->tp_exposed_s + t->cp_exposed_s +
           t->ep_exposed_s + t->offload_exposed_s + t->fp8_amax_allreduce_s +
           t->moe_aux_allreduce_s + t->host_exposed_s;
}

/* 1F1B and interleaved, even and uneven stages (--decoder-first-pipeline-num-layers), blocking
 * and overlapped sends, few and many micro-batches; ZB-H1, ZB-V, DualPipe and DualPipeV (their
 * rules: pp even for DualPipe, micro-batches >= 2·pp), dense and MoE (DualPipe's pairs). */
static const struct {
    uint32_t pp, vpp;
    uint64_t gbs;
    uint32_t first;
    bool no_overlap;
    enum spsim_pp_schedule sched;
    bool moe;
} configs[] = {
    {1, 1, 4, 0, false, SPSIM_PP_SCHEDULE_MEGATRON, false},
    {4, 1, 8, 0, false, SPSIM_PP_SCHEDULE_MEGATRON, false},
    {4, 2, 8, 0, false, SPSIM_PP_SCHEDULE_MEGATRON, false},
    {2, 4, 6, 0, false, SPSIM_PP_SCHEDULE_MEGATRON, false},
    {4, 1, 3, 0, false, SPSIM_PP_SCHEDULE_MEGATRON, false},
    {4, 1, 32, 11, false, SPSIM_PP_SCHEDULE_MEGATRON, false},
    {8, 1, 16, 11, false, SPSIM_PP_SCHEDULE_MEGATRON, false},
    {4, 2, 16, 0, true, SPSIM_PP_SCHEDULE_MEGATRON, false},
    {2, 2, 8, 10, false, SPSIM_PP_SCHEDULE_MEGATRON, false},
    {4, 1, 8, 5, false, SPSIM_PP_SCHEDULE_MEGATRON, false},
    {8, 2, 24, 0, false, SPSIM_PP_SCHEDULE_MEGATRON, false},
    {2, 1, 1, 0, false, SPSIM_PP_SCHEDULE_MEGATRON, false},
    {4, 1, 8, 0, false, SPSIM_PP_SCHEDULE_ZB_H1, false},
    {8, 1, 16, 11, false, SPSIM_PP_SCHEDULE_ZB_H1, false},
    {4, 1, 3, 0, false, SPSIM_PP_SCHEDULE_ZB_H1, false},
    {2, 1, 1, 0, false, SPSIM_PP_SCHEDULE_ZB_H1, false},
    {4, 1, 8, 0, false, SPSIM_PP_SCHEDULE_DUALPIPE, false},
    {8, 1, 20, 0, false, SPSIM_PP_SCHEDULE_DUALPIPE, false},
    {2, 1, 4, 0, false, SPSIM_PP_SCHEDULE_DUALPIPE, false},
    {4, 1, 64, 0, false, SPSIM_PP_SCHEDULE_DUALPIPE, true},
    {4, 2, 8, 0, false, SPSIM_PP_SCHEDULE_DUALPIPEV, false},
    {2, 2, 5, 0, false, SPSIM_PP_SCHEDULE_DUALPIPEV, false},
    {4, 2, 64, 0, false, SPSIM_PP_SCHEDULE_DUALPIPEV, true},
    {4, 2, 8, 0, false, SPSIM_PP_SCHEDULE_ZB_V, false},
    {8, 2, 16, 0, false, SPSIM_PP_SCHEDULE_ZB_V, false},
    {4, 2, 3, 0, false, SPSIM_PP_SCHEDULE_ZB_V, false},
    {2, 2, 1, 0, true, SPSIM_PP_SCHEDULE_ZB_V, false},
    {4, 2, 64, 0, false, SPSIM_PP_SCHEDULE_ZB_V, true},
};

/* The configuration of row i: llama3-8b at tp 2, or Qwen3-30B-A3B at tp 1, ep 8, dp 8 with
 * the all-to-all dispatcher. */
static struct spsim_result
config_result(int i)
{
    struct spsim_parallel par =
        testutil_config(configs[i].moe ? 1 : 2, configs[i].pp, configs[i].vpp, 1, configs[i].gbs,
                        !configs[i].moe, SPSIM_RECOMPUTE_SELECTIVE);
    par.first_stage_layers = configs[i].first;
    par.no_overlap_p2p = configs[i].no_overlap;
    par.pp_schedule = configs[i].sched;
    if (configs[i].moe) {
        par.dp = par.ep = 8;
        par.moe_dispatcher = SPSIM_MOE_ALLTOALL;
    }
    return testutil_evaluate_config(configs[i].moe ? "qwen3-30b-a3b" : "llama3-8b", "dgx-h100",
                                    &par);
}

START_TEST(trace_sums_to_the_terms)
{
    struct spsim_result r = config_result(_i);
    const struct spsim_time_report *t = &r.time;
    uint32_t p = r.config.pp, v = r.config.vpp, m = r.comm.microbatches;
    bool dualpipe = configs[_i].sched == SPSIM_PP_SCHEDULE_DUALPIPE;
    uint32_t chunks = dualpipe ? 2 : v; /* DualPipe's chunk: the direction, m/2 each */
    cJSON *root = trace(&r);
    double tail = t->dp_exposed_s + t->tied_embedding_allreduce_s + t->moe_expert_bias_allreduce_s +
                  t->optimizer_s + t->optimizer_host_exposed_s + t->log_host_s;
    double tol = 1e-9 * t->iteration_s;
    for (uint32_t k = 0; k < p; k++) {
        struct sums s = walk(root, (int)k, m, chunks);
        ck_assert_int_eq(s.fwd, (int)(m * v));
        ck_assert_int_eq(s.bwd, (int)(m * v));
        /* a W apart: each of ZB-H1's backwards, some of DualPipe's, none of Megatron's */
        if (configs[_i].sched == SPSIM_PP_SCHEDULE_ZB_H1 ||
            configs[_i].sched == SPSIM_PP_SCHEDULE_ZB_V)
            ck_assert_int_eq(s.wgrad, (int)(m * v));
        else if (configs[_i].sched == SPSIM_PP_SCHEDULE_MEGATRON)
            ck_assert_int_eq(s.wgrad, 0);
        else
            ck_assert(s.wgrad > 0 && s.wgrad < (int)(m * v));
        ck_assert_double_eq_tol(s.compute, exposed_terms(t), tol);
        ck_assert_double_eq_tol(s.sends, p > 1 ? t->pp_p2p_s : 0, tol);
        ck_assert_double_eq_tol(s.tail, tail, tol);
        /* the rank idles, before the tail, for the composition's fill and drain */
        ck_assert_double_eq_tol(s.end - s.tail - s.compute - s.sends, t->pp_bubble_s, tol);
        ck_assert_double_eq_tol(s.end, t->iteration_s, tol);
    }
    const cJSON *other = cJSON_GetObjectItemCaseSensitive(root, "otherData");
    ck_assert_double_eq_tol(num(other, "trace_end_s"), t->iteration_s, tol);
    ck_assert_double_eq_tol(num(other, "pipeline_end_s"), t->iteration_s - tail, tol);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(root, "displayTimeUnit")->valuestring, "ms");
    cJSON_Delete(root);
}
END_TEST

/* The interleaved order on pp 4, vpp 2, 8 micro-batches: rank 0 warms up with (4 − 1)·2 + 4 = 10
 * chunk forwards, rank 3 with 4; rank 0's 5th forward (k = 4) is chunk 1 of micro-batch 0, its
 * 9th (k = 8) chunk 0 of micro-batch 4; its first backward is chunk 1 of micro-batch 0. */
START_TEST(trace_interleaved_order)
{
    struct spsim_result r = result(4, 2, 8);
    cJSON *root = trace(&r);
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents"), *e;
    int warm[4] = {0}, first_bwd_seen[4] = {0}, k0 = 0;
    cJSON_ArrayForEach(e, events)
    {
        if (strcmp(cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring, "X") != 0 ||
            (int)num(e, "tid") != 0)
            continue;
        const char *cat = cJSON_GetObjectItemCaseSensitive(e, "cat")->valuestring;
        int pid = (int)num(e, "pid");
        if (strcmp(cat, "p2p") == 0)
            continue;
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        int mb = (int)num(args, "microbatch"), chunk = (int)num(args, "chunk");
        if (strcmp(cat, "backward") == 0) {
            if (pid == 0 && !first_bwd_seen[0]) {
                ck_assert_int_eq(mb, 0);
                ck_assert_int_eq(chunk, 1);
            }
            first_bwd_seen[pid] = 1;
            continue;
        }
        if (!first_bwd_seen[pid])
            warm[pid]++;
        if (pid == 0) {
            if (k0 == 4)
                ck_assert(mb == 0 && chunk == 1);
            if (k0 == 8)
                ck_assert(mb == 4 && chunk == 0);
            k0++;
        }
    }
    /* 1F1B steady state starts with one more forward before the first backward */
    ck_assert_int_eq(warm[0], 10 + 1);
    ck_assert_int_eq(warm[3], 4 + 1);
    cJSON_Delete(root);
}
END_TEST

/* Rank `pid`'s compute ops in their order: F forward, B whole backward, b input-gradient
 * backward, W weight gradient, then the micro-batch, ' for chunk 1 and * for a DualPipe pair. */
static void
order(const cJSON *root, int pid, char *out, size_t cap)
{
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents"), *e;
    size_t n = 0;
    out[0] = 0;
    double last = -1;
    cJSON_ArrayForEach(e, events)
    {
        if (strcmp(cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring, "X") != 0 ||
            (int)num(e, "pid") != pid || (int)num(e, "tid") != 0)
            continue;
        const char *cat = cJSON_GetObjectItemCaseSensitive(e, "cat")->valuestring;
        const char *name = cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring;
        if (strcmp(cat, "p2p") == 0)
            continue;
        ck_assert(num(e, "ts") > last); /* written in the rank's order */
        last = num(e, "ts");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        char kind = strcmp(cat, "forward") == 0 ? 'F'
                    : strcmp(cat, "wgrad") == 0 ? 'W'
                    : strstr(name, "input")     ? 'b'
                                                : 'B';
        n += (size_t)snprintf(out + n, cap - n, "%s%c%d%s%s", n ? " " : "", kind,
                              (int)num(args, "microbatch"), num(args, "chunk") > 0 ? "'" : "",
                              strstr(name, "F&B") ? "*" : "");
        ck_assert(n < cap);
    }
}

static void
expect_order(const cJSON *root, int pid, const char *want)
{
    char got[1024];
    order(root, pid, got, sizeof(got));
    ck_assert_str_eq(got, want);
}

static cJSON *
schedule_trace(enum spsim_pp_schedule sc, uint32_t pp, uint32_t vpp, uint64_t gbs)
{
    struct spsim_parallel par =
        testutil_config(2, pp, vpp, 1, gbs, true, SPSIM_RECOMPUTE_SELECTIVE);
    par.pp_schedule = sc;
    struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &par);
    return trace(&r);
}

/*
 * ZB-H1 on pp 4 with 8 micro-batches, as the paper's hand-made schedule orders it (Qi et al.
 * 2024 §3.1, Figure 3; get_hand_schedule(warmup_c = 1) in sail-sg/zero-bubble-pipeline-
 * parallelism's arxiv branch at f68d3879, efficiency.py:110-124): rank r warms up with 1F1B's
 * p − r − 1 forwards, then runs F (while any is left), B, and a W once its step i >= r; the r
 * W's it deferred run at the end. Rank 0: 3 forwards, then F B W from the start; rank 3: no
 * warm-up, F B in steps 0-2 without a W, F B W from step 3 (W0 after b3), and the three it
 * deferred at the end.
 */
START_TEST(trace_zb_h1_order)
{
    cJSON *root = schedule_trace(SPSIM_PP_SCHEDULE_ZB_H1, 4, 1, 8);
    expect_order(root, 0,
                 "F0 F1 F2 F3 b0 W0 F4 b1 W1 F5 b2 W2 F6 b3 W3 F7 b4 W4 b5 W5 b6 W6 b7 W7");
    expect_order(root, 3,
                 "F0 b0 F1 b1 F2 b2 F3 b3 W0 F4 b4 W1 F5 b5 W2 F6 b6 W3 F7 b7 W4 W5 W6 W7");
    /* 2 warm-up forwards, W from step 1, one deferred */
    expect_order(root, 1,
                 "F0 F1 F2 b0 F3 b1 W0 F4 b2 W1 F5 b3 W2 F6 b4 W3 F7 b5 W4 b6 W5 b7 W6 W7");
    cJSON_Delete(root);
}
END_TEST

/*
 * DualPipe on pp 4 with 8 micro-batches (dualpipe.py:358-425 at 3da1bbe): micro-batches 0-3
 * fed at rank 0 (chunk 0), 4-7 at rank 3 (chunk 1, its stages p − 1 − r). Rank 0 (h = 0 of
 * n = 2 ranks a half, c = 4 a phase): step 1 (n − h − 1)·2 = 2 F0; step 2 one F0 F1; step 3
 * one B1 (split) W F1; step 4 c − 2n + h + 1 = 1 pair of pairs F0&B1 F1&B0; step 5 one B1
 * F1&B0; step 6 one B1 (whole) B0 (split from i = (h + 1)/2 = 0 on, h even); step 7 one W B0
 * (split); step 8 the last W. Rank 1, the middle rank (h = 1): step 2 twice; step 4 twice, its
 * first F0 and B1 apart; step 6 twice, zero-bubble from i = 1 before the B1 (h odd); two W's.
 * Rank 3 is rank 0's mirror (phase 0 its chunk 1, phase ^= is_in_second_half).
 */
START_TEST(trace_dualpipe_order)
{
    cJSON *root = schedule_trace(SPSIM_PP_SCHEDULE_DUALPIPE, 4, 1, 8);
    expect_order(root, 0,
                 "F0 F1 F2 F4' b4' W4' F5' F3* B5'* F6'* B0* B6' F7'* B1* B7' b2 W2 b3 W3");
    expect_order(root, 1, "F0 F4' F1 F5' F2 B4' F6'* B0* F3* B5'* F7'* B1* B6' B2 b7' b3 W7' W3");
    expect_order(root, 3,
                 "F4' F5' F6' F0 b0 W0 F1 F7'* B1* F2* B4'* B2 F3* B5'* B3 b6' W6' b7' W7'");
    cJSON_Delete(root);
}
END_TEST

/*
 * DualPipeV on pp 4 with 8 micro-batches (dualpipev.py:330-396): rank r holds stages r (chunk
 * 0) and 7 − r (chunk 1); rank 0 (h = 0, n = 4, c = 8): step 1 six F0; step 2 F0 F1; step 3
 * three B1 (split) W F1; step 4 8 − 8 + 0 + 1 = 1: F0&B1 F1&B0; step 5 three B1 F1&B0; step 6
 * B1 (whole) B0 (split); step 7 three W B0 (split); step 8 one W.
 */
START_TEST(trace_dualpipev_order)
{
    cJSON *root = schedule_trace(SPSIM_PP_SCHEDULE_DUALPIPEV, 4, 2, 8);
    expect_order(root, 0,
                 "F0 F1 F2 F3 F4 F5 F6 F0' b0' W0' F1' b1' W1' F2' b2' W2' F3' F7* B3'* "
                 "F4'* B0* B4' F5'* B1* B5' F6'* B2* B6' F7'* B3* B7' b4 W4 b5 W5 b6 W6 "
                 "b7 W7");
    cJSON_Delete(root);
}
END_TEST

/* A result edited by hand: per micro-batch chunk forward f, input gradient b, weight gradient
 * w (backward_s = m·v·(b + w), wgrad_s = m·v·w), no communication, no tail; the iteration is
 * the work and a bubble of 1. */
static cJSON *
edited_trace(enum spsim_pp_schedule sc, uint32_t pp, uint32_t vpp, uint64_t gbs, double f, double b,
             double w)
{
    struct spsim_parallel par =
        testutil_config(2, pp, vpp, 1, gbs, true, SPSIM_RECOMPUTE_SELECTIVE);
    par.pp_schedule = sc;
    struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &par);
    double m = (double)r.comm.microbatches, v = vpp;
    memset(&r.time, 0, sizeof(r.time));
    r.time.forward_s = m * v * f;
    r.time.backward_s = m * v * (b + w);
    r.time.wgrad_s = m * v * w;
    r.time.pp_bubble_s = 1;
    r.time.iteration_s = r.time.forward_s + r.time.backward_s + 1;
    cJSON *root = trace(&r);
    ck_assert_double_eq_tol(num(cJSON_GetObjectItemCaseSensitive(root, "otherData"), "trace_end_s"),
                            r.time.iteration_s, 1e-9);
    return root;
}

/* The largest idle of a rank the drawn order's dependencies leave (see edited_trace). */
static double
dependency_idle(enum spsim_pp_schedule sc, uint32_t pp, uint32_t vpp, uint64_t gbs, double f,
                double b, double w)
{
    cJSON *root = edited_trace(sc, pp, vpp, gbs, f, b, w);
    const cJSON *other = cJSON_GetObjectItemCaseSensitive(root, "otherData");
    double idle = num(other, "dependency_idle_s");
    cJSON_Delete(root);
    return idle;
}

/*
 * The dependencies of the drawn order against the paper's bubble (Qi et al. 2024 §3.1: ZB-H1
 * idles (p − 1)(T_F + T_B − T_W), T_B the input gradient; 1F1B (p − 1)(T_F + T_B + T_W)),
 * without sends: the reference's get_hand_schedule(p, n, f, b, w, c = 0, warmup_c = 1) at
 * f68d3879 gives makespans 27, 38, 60, 24.5 on p 4, n 8 for (f, b, w) = (1, 1, 1), (1, 2, 1),
 * (2, 3, 1), (1, 1, 0.5), and 55, 124 on p 8, n 16 for (1, 1, 1), (2, 3, 1): n(f + b + w) and
 * the formula's 3, 6, 12, 4.5, 7, 28. 1F1B's whole backward b + w: (p − 1)(f + b + w).
 */
START_TEST(trace_zb_h1_bubble_by_hand)
{
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_ZB_H1, 4, 1, 8, 1, 1, 1), 3, 1e-9);
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_ZB_H1, 4, 1, 8, 1, 2, 1), 6, 1e-9);
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_ZB_H1, 4, 1, 8, 2, 3, 1), 12, 1e-9);
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_ZB_H1, 4, 1, 8, 1, 1, 0.5), 4.5,
                            1e-9);
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_ZB_H1, 8, 1, 16, 1, 1, 1), 7, 1e-9);
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_ZB_H1, 8, 1, 16, 2, 3, 1), 28, 1e-9);
}
END_TEST

/*
 * DualPipe's drawn order against its README's bubble (deepseek-ai/DualPipe at 3da1bbe, README
 * table: (PP/2 − 1)(F&B + B − 3W), F a stage's forward, B its whole backward, W its weight
 * gradient), without sends, at F = 1, B = 2 (input gradient 1 + W 1), W = 1 and F&B = F + B = 3
 * (the trace draws a pair's two ops one after the other): pp 4: (4/2 − 1)(3 + 2 − 3) = 2;
 * pp 8: 3·2 = 6; DualPipeV on pp 4 is PP = 8 stages of chunk times (1, 1, 1): 3·2 = 6.
 * A pair waits for both its receives and sends both outputs after its compute
 * (_forward_backward_chunk, dualpipe.py:205-214: _recv_forward, _recv_backward,
 * _commit_and_wait_comm, the overlapped compute, then _send_forward, _send_backward); an event
 * simulation of dualpipe.py's and dualpipev.py's eight steps with that rule, written apart from
 * engine/trace.c, idles 2, 6 and 6 on every rank. A pair's forward handed on before its
 * backward's input is in idles half: 1, 3, 3 (what the trace drew before).
 */
START_TEST(trace_dualpipe_bubble_by_hand)
{
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_DUALPIPE, 4, 1, 8, 1, 1, 1), 2, 1e-9);
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_DUALPIPE, 8, 1, 16, 1, 1, 1), 6,
                            1e-9);
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_DUALPIPEV, 4, 2, 8, 1, 1, 1), 6,
                            1e-9);
}
END_TEST

/*
 * ZB-V on pp 4 with 8 micro-batches at chunk times f = b = w = 1, as the zero-bubble
 * repository's greedy search orders it (sail-sg/zero-bubble at 3fd87fd, scheduler/zbv.py
 * PipelineGraph(4, 8, 1, 1, 1, 0, f_mem 1, b_mem −(1 − 0.09), w_mem −0.09).create_schedule, run
 * in Python; the same order for a W keeping 0.09 to 0.5 of a forward's memory): chunk 0 is stage
 * r, chunk 1 (') stage 7 − r; b an input-gradient backward. Rank 0 warms up with 7 chunk-0
 * forwards (memory 2 + 2·0 = 2 forwards short of the cap 8 once rank 1's first chunk-1 forward
 * arrives), rank 3 alternates F F' from the start.
 */
START_TEST(trace_zbv_order)
{
    cJSON *root = edited_trace(SPSIM_PP_SCHEDULE_ZB_V, 4, 2, 8, 1, 1, 1);
    expect_order(root, 0,
                 "F0 F1 F2 F3 F4 F5 F6 F0' b0' W0' F1' b1' W1' F2' b2' W2' F3' b3' W3' F7 b0 W0 "
                 "F4' b4' W4' b1 W1 F5' b5' W5' b2 W2 F6' b6' W6' b3 W3 F7' b7' b4 W7' b5 W4 b6 "
                 "W5 b7 W6 W7");
    expect_order(root, 3,
                 "F0 F0' F1 F1' F2 F2' F3 F3' b0' W0' F4 b0 W0 F4' b1' W1' F5 b1 W1 F5' b2' W2' "
                 "F6 b2 W2 F6' b3' W3' F7 b3 W3 F7' b4' b4 b5' b5 b6' b6 b7' b7 W4' W4 W5' W5 "
                 "W6' W6 W7' W7");
    cJSON_Delete(root);
}
END_TEST

/*
 * ZB-V's bubble, from each rank's first forward as zbv.py counts it, against the ZB paper's
 * (Qi et al., arXiv 2401.10241 §6; README "Pipeline schedules"): (p − 1)(F + B − 3W)/2 of the
 * stage's times, F = 2f, B = 2(b + w), W = 2w with f, b, w a chunk's forward, input gradient and
 * W, without sends:
 * - f = b = w = 1 (the paper's T_F = T_B = T_W, where ZB-V is bubble-free): F 2, B 4, W 2:
 *   3·(2 + 4 − 6)/2 = 0 on pp 4 and 7·0 = 0 on pp 8;
 * - f = b = 1, w = 0: F 2, B 2: 3·4/2 = 6 on pp 4, 7·4/2 = 14 on pp 8.
 * Away from those, the greedy search is not the formula: zbv.py at 3fd87fd gives 2.5 on pp 4 at
 * w = 0.5 (the formula 3) and 12 at f 1, b 2, w 0 (the formula 9); the trace, the same.
 */
START_TEST(trace_zbv_bubble_by_hand)
{
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_ZB_V, 4, 2, 8, 1, 1, 1), 0, 1e-9);
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_ZB_V, 8, 2, 16, 1, 1, 1), 0, 1e-9);
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_ZB_V, 4, 2, 8, 1, 1, 0), 6, 1e-9);
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_ZB_V, 8, 2, 16, 1, 1, 0), 14, 1e-9);
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_ZB_V, 4, 2, 8, 1, 1, 0.5), 2.5, 1e-9);
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_ZB_V, 4, 2, 8, 1, 2, 0), 12, 1e-9);
    /* try_v_schedule's rerun with the last run's bubbles approved: on pp 8, 33 micro-batches,
     * f 1, b 1, w 1.4 its first run (fill_b, fill_f) idles 2.0 and the rerun 1.4, the best of
     * the four (zbv.py at 3fd87fd, run in Python) */
    ck_assert_double_eq_tol(dependency_idle(SPSIM_PP_SCHEDULE_ZB_V, 8, 2, 33, 1, 1, 1.4), 1.4,
                            1e-9);
}
END_TEST

START_TEST(trace_refusals)
{
    /* Megatron refuses such a configuration first (parallel_check); a result edited by hand
     * to 6 micro-batches on pp 4 is refused by the trace too. */
    struct spsim_result r = result(4, 2, 8);
    r.comm.microbatches = 6;
    char *doc = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_trace_json(&r, &doc, &err), SPSIM_ERANGE);
    ck_assert_ptr_nonnull(strstr(err.message, "a multiple of pp"));
    ck_assert_ptr_null(doc);
    ck_assert_int_eq(spsim_trace_json(NULL, &doc, &err), SPSIM_EINVAL);
    /* ZB-V is two chunks in a V (vpp 2): a result edited to vpp 1 is refused */
    r = result(4, 1, 8);
    r.config.pp_schedule = SPSIM_PP_SCHEDULE_ZB_V;
    ck_assert_int_eq(spsim_trace_json(&r, &doc, &err), SPSIM_ERANGE);
    ck_assert_ptr_nonnull(strstr(err.message, "zb-v is traced as its rules say"));
    /* a result edited past DualPipe's rules (dualpipe.py:333: micro-batches >= 2·pp, even) */
    r = result(4, 1, 8);
    r.config.pp_schedule = SPSIM_PP_SCHEDULE_DUALPIPE;
    r.comm.microbatches = 6;
    ck_assert_int_eq(spsim_trace_json(&r, &doc, &err), SPSIM_ERANGE);
    ck_assert_ptr_nonnull(strstr(err.message, "dualpipe is traced as its rules say"));
    r.comm.microbatches = 9;
    ck_assert_int_eq(spsim_trace_json(&r, &doc, &err), SPSIM_ERANGE);
}
END_TEST

static Suite *
trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("trace");
    tcase_add_loop_test(tc, trace_sums_to_the_terms, 0, sizeof(configs) / sizeof(configs[0]));
    tcase_add_test(tc, trace_interleaved_order);
    tcase_add_test(tc, trace_refusals);
    tcase_add_test(tc, trace_zb_h1_order);
    tcase_add_test(tc, trace_dualpipe_order);
    tcase_add_test(tc, trace_dualpipev_order);
    tcase_add_test(tc, trace_zb_h1_bubble_by_hand);
    tcase_add_test(tc, trace_dualpipe_bubble_by_hand);
    tcase_add_test(tc, trace_zbv_order);
    tcase_add_test(tc, trace_zbv_bubble_by_hand);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(trace_suite());
}
