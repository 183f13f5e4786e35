/*
 * The overlaps Megatron-Core runs, worked by hand on a round-number synthetic profile: the
 * interleaved schedule's P2P overlap (schedules.py overlap_p2p_comm), the bucketed gradient
 * reduction and the deferred parameter gather (distributed_data_parallel.py,
 * param_and_grad_buffer.py). Each test fails if its overlap were removed or made free.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/buckets.h"
#include "engine/eval.h"
#include "testutil.h"

/* TESTUTIL_SYNTHETIC_HW (round numbers: NVLink ring busbw 200 GB/s, 5 µs + 1 µs a step;
 * network 10 µs + 3 µs a step) at `nic` GB/s per NIC, one NIC a GPU. */
#define SYNTHETIC(nic) synthetic(TESTUTIL_SYNTHETIC_HW(#nic))

static struct spsim_hardware *
synthetic(const char *text)
{
    return testutil_hardware_text(text);
}

static struct spsim_result
run(const struct spsim_model_shape *shape, struct spsim_hardware *hw,
    const struct spsim_parallel *p)
{
    struct spsim_model *m = testutil_model(shape);
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, p, &r, &err) == SPSIM_OK, "%s", err.message);
    spsim_model_destroy(m);
    return r;
}

#define TOL 1e-12

/* The interleaved pipeline of the P2P tests: 8 GPT layers (h 512, 8 heads, s 2048) on pp 2 ×
 * vpp 2 at tp 8 with SP, 8 micro-batches. A send is [s/t, b, h] in bf16 = 256·512·2 =
 * 262,144 B to the next node (pipeline stride t = 8 GPUs). */
static struct spsim_parallel
p2p_config(uint32_t vpp, bool blocking)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 8;
    p.sp = true;
    p.pp = 2;
    p.vpp = vpp;
    p.gbs = 8;
    p.no_overlap_p2p = blocking;
    return p;
}

/* One send at `nic` GB/s: network latency 10 + 1 hop · 3 µs, 262,144 B at the NIC rate. */
static double
send_s(struct spsim_hardware *hw, double nic)
{
    double t = 13e-6 + 262144.0 / (nic * 1e9);
    struct spsim_collective_prediction pr;
    ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_SEND_RECV, 2, 2, 262144, &pr, NULL),
                     SPSIM_OK);
    ck_assert_double_eq_tol(pr.time_s, t, TOL);
    return t;
}

START_TEST(p2p_slow_sends_pace_the_steady_state)
{
    /* At 0.05 GB/s a send (5.256 ms) outlasts any model chunk's forward or backward, so with
     * overlap_p2p_comm each chunk's transfer shows by T − chunk: per micro-batch
     * v(2T − F/v − B/v) = 4T − W, and the micro-batch takes 4T whatever its compute W. */
    struct spsim_model_shape g = testutil_gpt_shape(8, 512, 8, 2048, 512);
    struct spsim_hardware *hw = SYNTHETIC(0.05);
    double T = send_s(hw, 0.05);
    struct spsim_parallel p = p2p_config(2, true);
    struct spsim_result blocking = run(&g, hw, &p);
    p.no_overlap_p2p = false;
    struct spsim_result overlap = run(&g, hw, &p);
    double W = blocking.time.microbatch_s - 4 * T; /* the stage's compute per micro-batch */
    ck_assert(W > 0 && W / 2 < T); /* a chunk's forward and its backward each under W/v */
    ck_assert_double_eq_tol(blocking.time.pp_p2p_s, 8 * 4 * T, 1e-9);
    ck_assert_double_eq_tol(blocking.time.pp_p2p_hidden_s, 0, TOL);
    ck_assert_double_eq_tol(overlap.time.microbatch_s, 4 * T, 1e-9);
    ck_assert_double_eq_tol(overlap.time.pp_p2p_s, 8 * (4 * T - W), 1e-9);
    ck_assert_double_eq_tol(overlap.time.pp_p2p_hidden_s, 8 * W, 1e-9);
    /* Fill and drain: each hop's send is on the dependency chain, overlapped or not. */
    ck_assert_double_eq_tol(overlap.time.pp_bubble_s, blocking.time.pp_bubble_s, TOL);
    ck_assert(overlap.time.pp_bubble_s > 2 * (2 - 1) * T);
    ck_assert_double_eq_tol(blocking.time.iteration_s - overlap.time.iteration_s, 8 * W, 1e-9);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(p2p_fast_sends_hide_and_1f1b_blocks)
{
    /* At 40 GB/s a send (19.55 µs) hides behind every chunk but for the 10 of 100 SMs NCCL's
     * kernel holds meanwhile (nccl_channels): T·0.1 of each of the 8 micro-batches' 2v sends
     * shows, the rest is hidden. */
    struct spsim_model_shape g = testutil_gpt_shape(8, 512, 8, 2048, 512);
    struct spsim_hardware *hw = SYNTHETIC(40);
    double T = send_s(hw, 40);
    struct spsim_parallel p = p2p_config(2, false);
    struct spsim_result overlap = run(&g, hw, &p);
    ck_assert_double_eq_tol(overlap.time.pp_p2p_s, 8 * 4 * T * 0.1, 1e-12);
    ck_assert_double_eq_tol(overlap.time.pp_p2p_hidden_s, 8 * 4 * T * 0.9, 1e-12);
    /* 1F1B (Megatron refuses overlap_p2p_comm without interleaving): 2 blocking sends per
     * micro-batch whatever the switch says. */
    p = p2p_config(1, false);
    struct spsim_result plain = run(&g, hw, &p);
    ck_assert_double_eq_tol(plain.time.pp_p2p_s, 8 * 2 * T, 1e-12);
    ck_assert_double_eq_tol(plain.time.pp_p2p_hidden_s, 0, TOL);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(grad_buckets_fifo_by_hand)
{
    /* Rank 0, one chunk of 3.6 buckets (3 full, the last 0.6 holding 0.1 of embedding), so
     * 3.5 buckets of layer parameters over a 2 s backward; a bucket's reduction takes 1 s.
     * Ready at −2 + 2k/3.5 (k = 1, 2, 3) and 0: −1.4286, −0.8571, −0.2857, 0. FIFO: bucket 0
     * ends −0.4286, bucket 1 0.5714, bucket 2 1.5714, the last 2.1714 = −2 + 2/3.5 + 3.6. */
    struct spsim_dp_rank r = {.v = 1,
                              .slot = 2,
                              .group = 4,
                              .nbuckets = 4,
                              .bucket_s = 1,
                              .last_s = 0.6,
                              .lin_buckets = 3.5};
    ck_assert_double_eq_tol(spsim_grad_reduce_finish(&r), -2 + 2 / 3.5 + 3.6, TOL);
    /* Ten times faster: each bucket is done before the next is ready; the last (the
     * embedding's) is ready at the end and stays exposed, 0.06 s. */
    r.bucket_s = 0.1;
    r.last_s = 0.06;
    ck_assert_double_eq_tol(spsim_grad_reduce_finish(&r), 0.06, TOL);
    /* A rank whose backward ends 1 s before rank 0's: everything 1 s earlier. */
    r.head = 1;
    ck_assert_double_eq_tol(spsim_grad_reduce_finish(&r), -0.94, TOL);
    /* Interleaved, 3 chunks of one bucket each, p = 4: chunk 2 is ready 2 groups of 4 chunk
     * backwards (1 s each) before the end, chunk 1 one group: −8, −4, 0. At 2.5 s each:
     * −5.5, −1.5, 2.5. At 5 s: −3, 2, 7 (the queue carries over). */
    struct spsim_dp_rank c = {.v = 3, .slot = 1, .group = 4, .chunk_s = 2.5, .chunk0_s = 2.5};
    ck_assert_double_eq_tol(spsim_grad_reduce_finish(&c), 2.5, TOL);
    c.chunk_s = c.chunk0_s = 5;
    ck_assert_double_eq_tol(spsim_grad_reduce_finish(&c), 7, TOL);
    c.v = 4; /* chunk 3 ready at −12: −12 → −7, then −7 → −2, −2 → 3, chunk 0 3 → 8 */
    ck_assert_double_eq_tol(spsim_grad_reduce_finish(&c), 8, TOL);
    c.chunk_s = 6; /* −12 → −6, −6 → 0, 0 → 6, chunk 0 (5 s) 6 → 11 */
    ck_assert_double_eq_tol(spsim_grad_reduce_finish(&c), 11, TOL);
}
END_TEST

START_TEST(param_gather_buckets_by_hand)
{
    /* The same buckets in forward order: the last (0.6 s) first, exposed; its 0.5 bucket of
     * layers computes 0.25 s (1.75 s forward / 3.5) while bucket 2 (1 s) gathers: 0.75 shows;
     * buckets 2 and 1 compute 0.5 s each while 1 and 0 gather: 0.5 each. 2.35 s in all. */
    struct spsim_dp_rank r = {.v = 1,
                              .slot = 1.75,
                              .group = 4,
                              .nbuckets = 4,
                              .bucket_s = 1,
                              .last_s = 0.6,
                              .lin_buckets = 3.5};
    ck_assert_double_eq_tol(spsim_param_gather_wait(&r), 2.35, TOL);
    /* One bucket on a rank that waits 0.4 s for its first input anyway: 0.6 − 0.4. */
    struct spsim_dp_rank one = {.v = 1, .head = 0.4, .slot = 1, .group = 4, .chunk0_s = 0.6};
    ck_assert_double_eq_tol(spsim_param_gather_wait(&one), 0.2, TOL);
    /* Interleaved, 3 chunks: each later chunk's gather starts a group of 4 chunk forwards
     * (0.25 s each) before it is needed: max(0, 1.5 − 1) for chunks 1 and 2. */
    one.v = 3;
    one.slot = 0.25;
    one.chunk_s = 1.5;
    ck_assert_double_eq_tol(spsim_param_gather_wait(&one), 0.2 + 2 * 0.5, TOL);
}
END_TEST

/* The data-parallel tests' model: 4 GPT layers of h 1024 (12h² + 13h = 12,596,224 parameters
 * each), s 1024, vocabulary 1024 (padded to 1024), tied: embedding (1024 + 1024)·1024 =
 * 2,097,152, final norm 2048; 52,484,096 parameters on each of dp 2 GPUs of one node (fp32
 * gradients: 209,936,384 B). */
#define DP_PARAMS 52484096.0
#define DP_EMB    2097152.0

static struct spsim_parallel
dp_config(bool overlap)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.dp = 2;
    p.mbs = 4;
    p.gbs = 16;
    p.overlap_grad_reduce = overlap;
    return p;
}

/* AllReduce over 2 GPUs of one node: 5 + 2 steps · 1 µs, 2·(1/2) of the bytes at 200 GB/s. */
static double
ar2_s(double params)
{
    return 7e-6 + params * 4.0 / 200e9;
}

/* Exposed DP time when `exposed` of a collective lasting `busy` alone shows: the hidden rest
 * holds NCCL's channels, 10 of the synthetic profile's 100 SMs, so the computation beside it
 * lasts 0.1 of it longer (pipeline_time.c sync_terms, dp_time.c spsim_dp_beside_compute_s). */
static double
beside(double busy, double exposed)
{
    return exposed + 0.1 * (busy - exposed);
}

START_TEST(dp_last_bucket_stays_exposed)
{
    struct spsim_model_shape g = testutil_gpt_shape(4, 1024, 8, 1024, 1024);
    struct spsim_hardware *hw = SYNTHETIC(40);
    struct spsim_parallel p = dp_config(false);
    struct spsim_result off = run(&g, hw, &p);
    ck_assert_uint_eq(off.memory.parameters_per_gpu, (uint64_t)DP_PARAMS);
    ck_assert_double_eq_tol(off.time.dp_exposed_s, ar2_s(DP_PARAMS), TOL);
    /* Default buckets of max(40M, 2·1M) = 40M: two, the second 12,484,096 parameters with the
     * embedding, ready when the backward ends. The first (807 µs) is done well before. */
    p = dp_config(true);
    struct spsim_result on = run(&g, hw, &p);
    ck_assert_uint_eq(on.time.dp_buckets, 2);
    ck_assert_uint_eq(on.config.ddp_bucket_size, 40000000);
    double W = (on.time.backward_s + on.time.recompute_s) / 2; /* one of 2 micro-batches */
    double lin = (DP_PARAMS - DP_EMB) / 40e6;
    ck_assert(-W + W / lin + ar2_s(40e6) + ar2_s(DP_PARAMS - 40e6) < ar2_s(DP_PARAMS - 40e6));
    ck_assert_double_eq_tol(on.time.dp_exposed_s, beside(ar2_s(DP_PARAMS), ar2_s(DP_PARAMS - 40e6)),
                            TOL);
    /* One bucket (the whole buffer): ready only at the end, all of it exposed. */
    p.ddp_bucket_size = 60000000;
    struct spsim_result one = run(&g, hw, &p);
    ck_assert_uint_eq(one.time.dp_buckets, 1);
    ck_assert_double_eq_tol(one.time.dp_exposed_s, ar2_s(DP_PARAMS), TOL);
    /* 10M buckets: 6, the last 2,484,096 parameters with the embedding. 5.0387 buckets of
     * layers: bucket 4 is ready at −W(1 − 5/5.0387), just before the end, and the last
     * queues behind it unless bucket 4 is done first. */
    p.ddp_bucket_size = 10000000;
    struct spsim_result six = run(&g, hw, &p);
    ck_assert_uint_eq(six.time.dp_buckets, 6);
    lin = (DP_PARAMS - DP_EMB) / 10e6;
    double last = ar2_s(DP_PARAMS - 50e6);
    double queued = -W * (1 - 5 / lin) + ar2_s(10e6) + last;
    ck_assert(queued > last); /* the case worked here: bucket 4 still running at the end */
    ck_assert_double_eq_tol(six.time.dp_exposed_s, beside(ar2_s(DP_PARAMS), queued), TOL);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(dp_param_gather_after_step_or_in_forward)
{
    /* Distributed optimizer: ReduceScatter of the fp32 gradients, AllGather of the bf16
     * parameters over 2 GPUs: 5 + 1 µs, (1/2)·bytes at 200 GB/s. Without
     * --overlap-param-gather the gather follows the step, whole. */
    struct spsim_model_shape g = testutil_gpt_shape(4, 1024, 8, 1024, 1024);
    struct spsim_hardware *hw = SYNTHETIC(40);
    struct spsim_parallel p = dp_config(true);
    p.distributed_optimizer = true;
    struct spsim_result after = run(&g, hw, &p);
    double ag = 6e-6 + DP_PARAMS * 2 / 2 / 200e9,
           last_rs = 6e-6 + (DP_PARAMS - 40e6) * 4 / 2 / 200e9,
           rs = 6e-6 + DP_PARAMS * 4 / 2 / 200e9; /* the whole buffer's, alone */
    ck_assert_double_eq_tol(after.time.param_gather_exposed_s, ag, TOL);
    ck_assert_double_eq_tol(after.time.dp_exposed_s, beside(rs + ag, last_rs + ag), TOL);
    /* Deferred to the first forward: the last bucket's gather (12,484,096 parameters) first,
     * exposed; the first bucket's (40M) beside the forward of the last bucket's 10,386,944
     * layer parameters, of F·10,386,944/50,386,944 with F one micro-batch's forward. */
    p.overlap_param_gather = true;
    struct spsim_result during = run(&g, hw, &p);
    double F = during.time.forward_s / 2, lin = DP_PARAMS - DP_EMB;
    double ag_last = 6e-6 + (DP_PARAMS - 40e6) * 2 / 2 / 200e9, ag_first = 6e-6 + 40e6 / 200e9;
    double wait = ag_last + fmax(0, ag_first - F * (lin - 40e6) / lin);
    ck_assert_double_eq_tol(during.time.param_gather_exposed_s, wait, 1e-12);
    ck_assert_double_eq_tol(during.time.dp_exposed_s, beside(rs + ag, last_rs + wait), 1e-12);
    ck_assert(during.time.param_gather_exposed_s < after.time.param_gather_exposed_s);
    spsim_hardware_destroy(hw);
}
END_TEST

/* One layer's collective at `site` in `phase`. */
static const struct spsim_collective_entry *
entry(const struct spsim_result *r, enum spsim_phase phase, const char *site)
{
    for (uint32_t i = 0; i < r->comm.per_layer_count; i++)
        if (r->comm.per_layer[i].phase == phase && strstr(r->comm.per_layer[i].site, site))
            return &r->comm.per_layer[i];
    ck_abort_msg("no collective '%s'", site);
    return NULL;
}

static double
gemm_s(const struct spsim_hardware *hw, uint64_t m, uint64_t n, uint64_t k)
{
    double s = 0;
    ck_assert_int_eq(spsim_gemm_time(hw, SPSIM_DTYPE_BF16, m, n, k, 1, false, &s), SPSIM_OK);
    return s;
}

/* The TP tests' layer: GPT, h 512, 8 heads, s 4096, b 1, at tp 8 with SP. The boundary
 * tensor M = s·b·h·2 = 4 MiB; over the 8 GPUs of one node an AllGather or ReduceScatter of X
 * bytes takes 5 + 7·1 µs + (7/8)·X / 200 GB/s (test_time.c): the whole M 30.35 µs. */
#define TP_M 4194304.0

static double
tp8_s(double bytes)
{
    return 12e-6 + 0.875 * bytes / 200e9;
}

START_TEST(tp_comm_overlap_by_hand)
{
    struct spsim_model_shape g = testutil_gpt_shape(2, 512, 8, 4096, 1024);
    struct spsim_hardware *hw = SYNTHETIC(40);
    struct spsim_parallel p = testutil_config(8, 1, 1, 1, 1, true, SPSIM_RECOMPUTE_NONE);
    struct spsim_result off = run(&g, hw, &p);
    p.tp_comm_overlap = true;
    struct spsim_result on = run(&g, hw, &p);
    double T = tp8_s(TP_M);
    /* Without it the forward boundaries are on the critical path, whole. */
    ck_assert_double_eq_tol(entry(&off, SPSIM_PHASE_FORWARD, "before QKV")->exposed_s, T, TOL);
    /* Ring exchange before QKV (M 4096, N 3h/t = 192, K 512): 8 chunk GEMMs of 512 rows, 7
     * hops of T/7 each; the pair takes 7·max(g, T/7) + g instead of the GEMM's G. A chunk
     * here is one wave of 4 tiles on 100 SMs, as long as the whole GEMM's one wave of 32. */
    const struct spsim_collective_entry *e = entry(&on, SPSIM_PHASE_FORWARD, "before QKV");
    double G = gemm_s(hw, 4096, 192, 512), gc = gemm_s(hw, 512, 192, 512);
    ck_assert_int_eq(e->overlap, SPSIM_OVERLAP_RING_EXCHANGE);
    ck_assert_double_eq_tol(e->time_s, T, TOL);
    ck_assert_double_eq_tol(e->exposed_s, 7 * fmax(gc, T / 7) + gc - G, TOL);
    /* Pipelined ReduceScatter after the projection (M 4096, N 512, K h/t = 64): 4 chunk
     * GEMMs on 100 − 16 SMs, each chunk's RS of M/4 (16.59 µs, latency-bound) beside the
     * next, the last exposed: g + 3·max(g, c) + c − G, here more than the plain RS. */
    e = entry(&on, SPSIM_PHASE_FORWARD, "after projection");
    G = gemm_s(hw, 4096, 512, 64);
    gc = gemm_s(hw, 1024, 512, 64) * 100 / 84;
    double c = tp8_s(TP_M / 4);
    ck_assert_int_eq(e->overlap, SPSIM_OVERLAP_PIPELINE);
    ck_assert_double_eq_tol(e->exposed_s, gc + 3 * fmax(gc, c) + c - G, TOL);
    /* 25 sequences a micro-batch: 102,400 rows in 8 chunks of 12,800;
     * the AllGather (470.75 µs) hides behind 7/8 of the GEMM but for 7·max(g, T/7) − 7g. */
    p.mbs = p.gbs = 25;
    struct spsim_result big = run(&g, hw, &p);
    e = entry(&big, SPSIM_PHASE_FORWARD, "before QKV");
    T = tp8_s(25 * TP_M);
    G = gemm_s(hw, 102400, 192, 512);
    gc = gemm_s(hw, 12800, 192, 512);
    /* The GEMM shape model (engine/gemm_shape.c) with 128×128 tiles, N 192 in 2 tile columns,
     * 8 k-blocks of 64 and one prologue slot per SM: the chunk's 200 tiles make 2 waves,
     * 1,200 useful tile-blocks of 100·(2·8 + 1) slots; the GEMM's 1,600 make 16 waves, 9,600 of
     * 100·(16·8 + 1): eight chunks take (9600/12900)/(1200/1700) of the whole GEMM's time. */
    ck_assert_double_eq_tol(gc * 8, G * (9600.0 / 12900) / (1200.0 / 1700), 1e-12 * G);
    ck_assert_double_eq_tol(e->exposed_s, 7 * fmax(gc, T / 7) + gc - G, TOL);
    /* What shows is mostly the chunks' lower tile efficiency (8·gc − G), not the AllGather. */
    ck_assert(e->exposed_s > 0 && e->exposed_s < T / 2);
    /* Bulk: the FC1 input's re-gather beside the FC1 dgrad (M 102,400, N h 512, K ffn/t
     * 256, longer than T) on 16 of 100 SMs: max(T, min(D/0.84, D + 0.16·T)) − D, where
     * NCCL's kernel takes 10 SMs (its channels). */
    double D = gemm_s(hw, 102400, 512, 256);
    ck_assert(D > T);
    ck_assert_double_eq_tol(entry(&big, SPSIM_PHASE_BACKWARD, "saved FC1")->exposed_s,
                            fmax(T, fmin(D / 0.84, D + 0.16 * T)) - D, TOL);
    p.tp_comm_overlap = false;
    struct spsim_result big_off = run(&g, hw, &p);
    ck_assert_double_eq_tol(entry(&big_off, SPSIM_PHASE_BACKWARD, "saved FC1")->exposed_s,
                            fmax(T, fmin(D / 0.9, D + 0.1 * T)) - D, TOL);
    p.mbs = p.gbs = 1;
    p.tp_comm_overlap = true;
    /* The output layer (Megatron's own ColumnParallelLinear) keeps its AllGather whole. */
    ck_assert_double_eq_tol(on.time.tp_exposed_s - off.time.tp_exposed_s,
                            2 * ((on.time.layer_forward_s + on.time.layer_backward_s) -
                                 (off.time.layer_forward_s + off.time.layer_backward_s)),
                            1e-12);
    spsim_hardware_destroy(hw);
}
END_TEST

/*
 * The ring tails (engine/collective_model.c spsim_ring_tail_extra_s) on the TP layer above, the
 * synthetic profile's ring figure said to be an AllReduce measurement (HBM 1000 GB/s): NCCL's
 * AllGather of M adds M/(8·HBM) = 0.52 µs, its ReduceScatter 2M/(8·HBM). TE userbuffers
 * (--tp-comm-overlap) do not run NCCL's ring (engine/timing.c ub_without_ring_tail): their
 * AllGather stays T.
 */
START_TEST(ring_tails_on_nccl_not_on_userbuffers)
{
    static const char base[] = TESTUTIL_SYNTHETIC_HW("40"), at[] = "\"nvlink\": {";
    char text[sizeof(base) + 96];
    const char *cut = strstr(base, at) + strlen(at);
    snprintf(text, sizeof(text),
             "%.*s\"ring_measured_on\": {\"value\": \"all_reduce\", \"source\": \"t\"}, %s",
             (int)(cut - base), base, cut);
    struct spsim_model_shape g = testutil_gpt_shape(2, 512, 8, 4096, 1024);
    struct spsim_hardware *hw = testutil_hardware_text(text);
    struct spsim_parallel p = testutil_config(8, 1, 1, 1, 1, true, SPSIM_RECOMPUTE_NONE);
    struct spsim_result off = run(&g, hw, &p);
    double T = tp8_s(TP_M), B = 1000e9;
    ck_assert_double_eq_tol(entry(&off, SPSIM_PHASE_FORWARD, "before QKV")->exposed_s,
                            T + TP_M / (8 * B), TOL);
    ck_assert_double_eq_tol(entry(&off, SPSIM_PHASE_FORWARD, "after projection")->exposed_s,
                            T + 2 * TP_M / (8 * B), TOL);
    p.tp_comm_overlap = true;
    struct spsim_result on = run(&g, hw, &p);
    ck_assert_double_eq_tol(entry(&on, SPSIM_PHASE_FORWARD, "before QKV")->time_s, T, TOL);
    ck_assert_double_eq_tol(entry(&on, SPSIM_PHASE_FORWARD, "after projection")->time_s, T, TOL);
    spsim_hardware_destroy(hw);
}
END_TEST

static Suite *
overlap_suite(void)
{
    Suite *s = suite_create("overlap");
    TCase *tc = tcase_create("megatron");
    tcase_add_test(tc, p2p_slow_sends_pace_the_steady_state);
    tcase_add_test(tc, p2p_fast_sends_hide_and_1f1b_blocks);
    tcase_add_test(tc, grad_buckets_fifo_by_hand);
    tcase_add_test(tc, param_gather_buckets_by_hand);
    tcase_add_test(tc, dp_last_bucket_stays_exposed);
    tcase_add_test(tc, dp_param_gather_after_step_or_in_forward);
    tcase_add_test(tc, tp_comm_overlap_by_hand);
    tcase_add_test(tc, ring_tails_on_nccl_not_on_userbuffers);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(overlap_suite());
}
