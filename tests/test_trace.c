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
    int fwd, bwd;
};

/* Walk the events of rank `pid`, checking the format and that its compute stream is serial. */
static struct sums
walk(const cJSON *root, int pid, uint32_t m, uint32_t v)
{
    struct sums s = {0};
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    ck_assert(cJSON_IsArray(events));
    double last_end = 0;
    char *seen = calloc((size_t)2 * m * v, 1);
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
        bool bwd = strcmp(cat, "backward") == 0;
        size_t at = ((size_t)bwd * m + (size_t)mb) * v + (size_t)chunk;
        ck_assert_msg(!seen[at], "twice: %s mb %d chunk %d", cat, mb, chunk);
        seen[at] = 1;
        s.compute += dur;
        *(bwd ? &s.bwd : &s.fwd) += 1;
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
 * and overlapped sends, few and many micro-batches. */
static const struct {
    uint32_t pp, vpp;
    uint64_t gbs;
    uint32_t first;
    bool no_overlap;
} configs[] = {{1, 1, 4, 0, false},   {4, 1, 8, 0, false},  {4, 2, 8, 0, false},
               {2, 4, 6, 0, false},   {4, 1, 3, 0, false},  {4, 1, 32, 11, false},
               {8, 1, 16, 11, false}, {4, 2, 16, 0, true},  {2, 2, 8, 10, false},
               {4, 1, 8, 5, false},   {8, 2, 24, 0, false}, {2, 1, 1, 0, false}};

START_TEST(trace_sums_to_the_terms)
{
    struct spsim_parallel par = testutil_config(2, configs[_i].pp, configs[_i].vpp, 1,
                                                configs[_i].gbs, true, SPSIM_RECOMPUTE_SELECTIVE);
    par.first_stage_layers = configs[_i].first;
    par.no_overlap_p2p = configs[_i].no_overlap;
    struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &par);
    const struct spsim_time_report *t = &r.time;
    uint32_t p = r.config.pp, v = r.config.vpp, m = r.comm.microbatches;
    cJSON *root = trace(&r);
    double tail = t->dp_exposed_s + t->tied_embedding_allreduce_s + t->moe_expert_bias_allreduce_s +
                  t->optimizer_s;
    double tol = 1e-9 * t->iteration_s;
    for (uint32_t k = 0; k < p; k++) {
        struct sums s = walk(root, (int)k, m, v);
        ck_assert_int_eq(s.fwd, (int)(m * v));
        ck_assert_int_eq(s.bwd, (int)(m * v));
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
    /* the zero-bubble and DualPipe schedules are not drawn */
    r = result(4, 1, 8);
    r.config.pp_schedule = SPSIM_PP_SCHEDULE_ZB_H1;
    ck_assert_int_eq(spsim_trace_json(&r, &doc, &err), SPSIM_ERANGE);
    ck_assert_ptr_nonnull(strstr(err.message, "zb-h1 schedule is not drawn"));
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
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(trace_suite());
}
