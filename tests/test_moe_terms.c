/*
 * Each MoE term's time worked by hand on the synthetic round-number profile of
 * tests/test_terms.c (tests/data/terms/terms-hw.json: GEMM ceiling 100 TFLOP/s, 8 SMs, HBM
 * 1 TB/s achieved, NVLink ring busbw 50 GB/s for every collective, latencies 0), so that halving
 * any one of them fails here (scripts/mutation_check.sh lists the MoE mutations): the router
 * GEMM and its score function and top-k, the permute and unpermute, the dispatch and combine
 * all-to-alls, the ETP AllGather and ReduceScatter, the routed experts' grouped GEMMs at their
 * per-expert shapes and their activation, and the shared experts. The closed forms are the
 * comments beside each term in src/engine/layer.c and moe.c (token_dispatcher.py, experts.py,
 * router.py, shared_experts.py); none is computed by the library.
 *
 * The model: h = 1024, 8 heads of 128, SwiGLU, RMSNorm, s = 1024, b = 1; E = 128 routed experts,
 * top k = 8, each of f_e = 128, shared experts of f_s = 1024, every layer MoE.
 * Timing rules used (engine/gemm_shape.c and timing.c, as tests/test_terms.c): a GEMM takes the
 * longer of its compute, 2mnk·batch/1e14 · (W·kb + 1)/(W·kb) for W whole waves of 128×128 tiles
 * on 8 SMs and kb = K/64 k-blocks, and its bytes over HBM, 2 B per element of A, B and C (a
 * weight gradient adds 8 B per weight: the fp32 main gradient read and written); a memory-bound
 * row takes its bytes over HBM; a collective of S bytes on n ranks S·(n−1)/n over the busbw.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define PEAK 100e12 /* GEMM FLOP/s */
#define HBM  1e12   /* B/s */
#define NV   50e9   /* busbw, B/s */

static const double h = 1024, E = 128, k = 8, fe = 128, fs = 1024;

#define terms_hw testutil_terms_hw

static struct spsim_model *
moe_model(void)
{
    struct spsim_model_shape m = {
        TESTUTIL_MOE_SHAPE,
        .shared_expert_ffn_hidden = 1024,
    };
    return testutil_model(&m);
}

/* A batch of M×N×K GEMMs that fills whole waves (asserted), compute only. */
static double
gemm_s(double m, double n, double kk, double batch)
{
    double tiles = m * n * batch / (128.0 * 128.0), waves = tiles / 8, kb = ceil(kk / 64);
    ck_assert_msg(fmod(m, 128) == 0 && fmod(n, 128) == 0 && fmod(tiles, 8) == 0,
                  "GEMM %gx%gx%g does not fill whole waves", m, n, kk);
    return 2.0 * m * n * kk * batch / PEAK * (waves * kb + 1) / (waves * kb);
}

/* TE's grouped GEMM: one cuBLASLt GEMM per expert on 4 compute streams (TE
 * common/gemm/cublaslt_gemm.cu multi_stream_cublas_gemm, common/util/multi_stream.cpp: 4
 * streams), so `loc` experts run as loc / 4 rounds of a batch of 4 (loc a multiple of 4 here). */
static double
grouped_s(double m, double n, double kk, double loc)
{
    ck_assert(fmod(loc, 4) == 0);
    return loc / 4 * gemm_s(m, n, kk, 4);
}

/* The bytes of a batch of GEMMs over HBM (A m×K, B K×n, C m×n, 2 B each). */
static double
gemm_bytes_s(double m, double n, double kk, double batch)
{
    return 2.0 * batch * (m * kk + kk * n + m * n) / HBM;
}

/* A weight gradient's bytes: the two inputs (rows × in, rows × out) and 8 B per weight. */
static double
wgrad_bytes_s(double rows, double in, double out, double batch)
{
    return (2.0 * rows * in + 2.0 * rows * out + 8.0 * batch * in * out) / HBM;
}

#define step testutil_step

#define EQ(got, want) ck_assert_double_eq_tol((got), (want), 1e-9 * fabs(want))

/* The layer's schedule of model `m` (destroyed here) under `p`, balanced routing. */
static size_t
schedule_of(struct spsim_model *m, struct spsim_parallel *p, struct spsim_schedule_step *st)
{
    struct spsim_hardware *hw = terms_hw();
    p->moe_routing = SPSIM_MOE_ROUTING_BALANCED; /* these values pin the balanced mean */
    size_t n = 0;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_layer_schedule(m, hw, p, st, SPSIM_MAX_SCHEDULE_STEPS, &n, &err) ==
                      SPSIM_OK,
                  "%s", err.message);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
    return n;
}

/* The layer's schedule on 8 GPUs: tp · cp · dp = 8. */
static size_t
schedule_cp(uint32_t tp, uint32_t cp, uint32_t ep, uint32_t etp, struct spsim_schedule_step *st)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = tp;
    p.sp = tp > 1;
    p.cp = cp;
    p.ep = ep;
    p.etp = etp;
    p.dp = 8 / tp / cp;
    p.gbs = p.dp;
    p.moe_dispatcher = SPSIM_MOE_ALLTOALL;
    return schedule_of(moe_model(), &p, st);
}

static size_t
schedule(uint32_t tp, uint32_t ep, uint32_t etp, struct spsim_schedule_step *st)
{
    return schedule_cp(tp, 1, ep, etp, st);
}

/*
 * tp 1, ep 8, etp 1, dp 8: T = 1024 tokens, T·k = 8192 copies; E/ep = 16 local experts of
 * T·k·ep/E = 512 rows each (8192 rows).
 */
START_TEST(alltoall_terms)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = schedule(1, 8, 1, st);
    const enum spsim_phase F = SPSIM_PHASE_FORWARD, B = SPSIM_PHASE_BACKWARD;
    double T = 1024, c = T * k, rows = 8192, loc = 16, tpe = 512;
    /* Router: logits T×E from h, replicated; wgrad is bytes-bound (3.41 µs > 2.85 µs). */
    EQ(step(st, n, F, "router GEMM (replicated)", "forward")->time_s, gemm_s(T, E, h, 1));
    EQ(step(st, n, B, "router GEMM (replicated)", "dgrad")->time_s, gemm_s(T, h, E, 1));
    EQ(step(st, n, B, "router GEMM (replicated)", "wgrad")->time_s, wgrad_bytes_s(T, h, E, 1));
    /* Score function and top-k: 10·T·E + 12·T·k B forward, 10·T·E backward. */
    EQ(step(st, n, F, "router softmax and top-k", "forward")->time_s,
       (10 * T * E + 12 * T * k) / HBM);
    EQ(step(st, n, B, "router softmax and top-k", "backward")->time_s, 10 * T * E / HBM);
    /* Permute 4·T·k·h B each way; unpermute 2·T·k·h + 2·T·h forward, 4·T·k·h backward. */
    EQ(step(st, n, F, "permute (token copies into expert order)", "forward")->time_s,
       4 * c * h / HBM);
    EQ(step(st, n, B, "permute (token copies into expert order)", "backward")->time_s,
       4 * c * h / HBM);
    EQ(step(st, n, F, "unpermute (sum of each token's copies)", "forward")->time_s,
       (2 * c * h + 2 * T * h) / HBM);
    EQ(step(st, n, B, "unpermute (sum of each token's copies)", "backward")->time_s,
       4 * c * h / HBM);
    /* Dispatch T·k·2h B (the tokens), then T·k·4 B (their fp32 probabilities: a second
     * all-to-all, token_dispatcher.py token_dispatch), combine T·k·2h, over 8 ranks, both
     * passes. */
    for (int ph = 0; ph < 2; ph++) {
        const struct spsim_schedule_step *d =
            step(st, n, ph ? B : F, "dispatch all-to-all (EP)", "");
        ck_assert_uint_eq(d->message_bytes, (uint64_t)(c * 2 * h));
        EQ(d->time_s, c * 2 * h * 7 / 8 / NV);
        d = step(st, n, ph ? B : F, "dispatch all-to-all of the probabilities (EP)", "");
        ck_assert_uint_eq(d->message_bytes, (uint64_t)(c * 4));
        EQ(d->time_s, c * 4 * 7 / 8 / NV);
        EQ(step(st, n, ph ? B : F, "combine all-to-all (EP)", "")->time_s, c * 2 * h * 7 / 8 / NV);
    }
    /* The 16 local experts' chunks sorted expert-major after the all-to-all (tokens 2 B read and
     * written, fp32 probabilities 4 + 4 B, both passes) and back before the combine (tokens). */
    for (int ph = 0; ph < 2; ph++) {
        const char *pass = ph ? "backward" : "forward";
        EQ(step(st, n, ph ? B : F, "sort chunks by local expert", pass)->time_s,
           (4 * rows * h + 8 * rows) / HBM);
        EQ(step(st, n, ph ? B : F, "unsort chunks (rank order)", pass)->time_s, 4 * rows * h / HBM);
    }
    /* Routed experts: FC1 16 × [512 × 1024] · [1024 × 256] compute-bound in forward and dgrad,
     * as 4 rounds of 4 concurrent GEMMs (each round 4 whole waves, its own prologue);
     * FC2 16 × [512 × 128] · [128 × 1024] bytes-bound (22 MiB: 23.1 µs > 21.6 µs) in forward and
     * dgrad; the wgrads bytes-bound. */
    EQ(step(st, n, F, "experts FC1 grouped GEMM", "forward")->time_s,
       grouped_s(tpe, 2 * fe, h, loc));
    EQ(step(st, n, B, "experts FC1 grouped GEMM", "dgrad")->time_s, grouped_s(tpe, h, 2 * fe, loc));
    EQ(step(st, n, B, "experts FC1 grouped GEMM", "wgrad")->time_s,
       wgrad_bytes_s(rows, h, 2 * fe, loc));
    EQ(step(st, n, F, "experts FC2 grouped GEMM", "forward")->time_s,
       gemm_bytes_s(tpe, h, fe, loc));
    EQ(step(st, n, B, "experts FC2 grouped GEMM", "dgrad")->time_s, gemm_bytes_s(tpe, fe, h, loc));
    EQ(step(st, n, B, "experts FC2 grouped GEMM", "wgrad")->time_s,
       wgrad_bytes_s(rows, fe, h, loc));
    /* Their SwiGLU with the probabilities: 6·rows·f_e + 4·rows forward, 10·rows·f_e + 8·rows
     * backward. */
    EQ(step(st, n, F, "experts SwiGLU (× probabilities)", "forward")->time_s,
       (6 * rows * fe + 4 * rows) / HBM);
    EQ(step(st, n, B, "experts SwiGLU (× probabilities)", "backward")->time_s,
       (10 * rows * fe + 8 * rows) / HBM);
    /* Shared experts: a dense SwiGLU MLP of f_s on all T tokens, compute-bound. */
    EQ(step(st, n, F, "shared experts FC1 GEMM (column-parallel)", "forward")->time_s,
       gemm_s(T, 2 * fs, h, 1));
    EQ(step(st, n, B, "shared experts FC1 GEMM (column-parallel)", "dgrad")->time_s,
       gemm_s(T, h, 2 * fs, 1));
    EQ(step(st, n, B, "shared experts FC1 GEMM (column-parallel)", "wgrad")->time_s,
       gemm_s(h, 2 * fs, T, 1));
    EQ(step(st, n, F, "shared experts FC2 GEMM (row-parallel)", "forward")->time_s,
       gemm_s(T, h, fs, 1));
    EQ(step(st, n, B, "shared experts FC2 GEMM (row-parallel)", "dgrad")->time_s,
       gemm_s(T, fs, h, 1));
    EQ(step(st, n, B, "shared experts FC2 GEMM (row-parallel)", "wgrad")->time_s,
       gemm_s(fs, h, T, 1));
}
END_TEST

/*
 * Expert tensor parallelism: tp 2 with SP, ep 4, etp 2, dp 4 (ep·etp = 8 = tp·dp). T = 512
 * tokens per rank, T·k = 4096 copies sent by the all-to-all over 4 ranks; the ETP AllGather over
 * 2 ranks of etp·T·k·(2h + 4) B and, before the combine, the ReduceScatter of etp·T·k·2h B.
 * E/ep = 32 local experts of etp·T·k·ep/E = 256 rows, each split over etp: FC1 [1024 × 128],
 * FC2 [64 × 1024], both bytes-bound.
 */
START_TEST(etp_terms)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = schedule(2, 4, 2, st);
    const enum spsim_phase F = SPSIM_PHASE_FORWARD, B = SPSIM_PHASE_BACKWARD;
    double T = 512, c = T * k, etp = 2, loc = 32, tpe = 256, f = fe / etp;
    for (int ph = 0; ph < 2; ph++) {
        enum spsim_phase p = ph ? B : F;
        const struct spsim_schedule_step *ag = step(st, n, p, "dispatch AllGather (expert TP)", "");
        ck_assert_uint_eq(ag->message_bytes, (uint64_t)(etp * c * (2 * h + 4)));
        ck_assert_uint_eq(ag->group_size, 2);
        EQ(ag->time_s, etp * c * (2 * h + 4) / 2 / NV);
        EQ(step(st, n, p, "combine ReduceScatter (expert TP)", "")->time_s,
           etp * c * 2 * h / 2 / NV);
        EQ(step(st, n, p, "dispatch all-to-all (EP)", "")->time_s, c * 2 * h * 3 / 4 / NV);
        EQ(step(st, n, p, "dispatch all-to-all of the probabilities (EP)", "")->time_s,
           c * 4 * 3 / 4 / NV);
        EQ(step(st, n, p, "combine all-to-all (EP)", "")->time_s, c * 2 * h * 3 / 4 / NV);
    }
    EQ(step(st, n, F, "experts FC1 grouped GEMM", "forward")->time_s,
       gemm_bytes_s(tpe, 2 * f, h, loc));
    EQ(step(st, n, F, "experts FC2 grouped GEMM", "forward")->time_s, gemm_bytes_s(tpe, h, f, loc));
    /* The permute and unpermute move this rank's own T·k copies, not the etp·T·k its experts
     * compute after the ETP AllGather: sent = loc·tpe/etp = 32·256/2 = 4096 = T·k (issue 23: a
     * mutant without the /etp survived every suite). */
    ck_assert_double_eq(loc * tpe / etp, c);
    for (int ph = 0; ph < 2; ph++) {
        enum spsim_phase p = ph ? B : F;
        EQ(step(st, n, p, "permute (token copies into expert order)", ph ? "backward" : "forward")
               ->time_s,
           4 * c * h / HBM);
        EQ(step(st, n, p, "unpermute (sum of each token's copies)", ph ? "backward" : "forward")
               ->time_s,
           (ph ? 4 * c * h : 2 * c * h + 2 * T * h) / HBM);
    }
}
END_TEST

/*
 * Context parallelism: each rank routes the tokens of its s/c shard of the sequence. tp 1,
 * cp 2, ep 8, dp 4: T = 1024/2 = 512 tokens, T·k = 4096 copies; E/ep = 16 local experts of
 * T·k·ep/E = 256 rows (4096). Every MoE term is cp 1's at half the tokens (issue 23: tokens
 * not divided by CP were caught by one assertion only).
 */
START_TEST(cp_divides_tokens)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = schedule_cp(1, 2, 8, 1, st);
    const enum spsim_phase F = SPSIM_PHASE_FORWARD, B = SPSIM_PHASE_BACKWARD;
    double T = 512, c = T * k, rows = 4096, loc = 16, tpe = 256;
    for (int ph = 0; ph < 2; ph++) {
        const struct spsim_schedule_step *d =
            step(st, n, ph ? B : F, "dispatch all-to-all (EP)", "");
        ck_assert_uint_eq(d->message_bytes, (uint64_t)(c * 2 * h));
        EQ(d->time_s, c * 2 * h * 7 / 8 / NV);
        EQ(step(st, n, ph ? B : F, "combine all-to-all (EP)", "")->time_s, c * 2 * h * 7 / 8 / NV);
    }
    EQ(step(st, n, F, "router softmax and top-k", "forward")->time_s,
       (10 * T * E + 12 * T * k) / HBM);
    EQ(step(st, n, F, "permute (token copies into expert order)", "forward")->time_s,
       4 * c * h / HBM);
    EQ(step(st, n, F, "unpermute (sum of each token's copies)", "forward")->time_s,
       (2 * c * h + 2 * T * h) / HBM);
    EQ(step(st, n, F, "experts FC1 grouped GEMM", "forward")->time_s,
       grouped_s(tpe, 2 * fe, h, loc));
    EQ(step(st, n, F, "experts SwiGLU (× probabilities)", "forward")->time_s,
       (6 * rows * fe + 4 * rows) / HBM);
}
END_TEST

/*
 * The experts' gradient reduction over the expert data-parallel group: tp 8, ep 1, etp 1,
 * dp 1, so the dense parameters have no data-parallel group (dp·cp = 1) while every rank holds
 * all E experts whole, replicated over edp = tp·dp/(ep·etp) = 8 ranks of one node (stride
 * etp·ep = 1): their fp32 gradients, 4 B × L·E·3·h·f_e, are all-reduced there, 2·7/8 of them on
 * the NVLink wire at 50 GB/s. Without --overlap-grad-reduce that is exposed whole; with it, it
 * runs beside the last micro-batch's backward (pp 1: the micro-batch's backward and
 * recompute, backward_s + recompute_s over the m micro-batches) and shows by the rest, which
 * here is most of it (issue 23: a mutant making it free survived every suite). Beside it, the
 * routers' replicated weights (E·h a layer) have their gradients all-reduced over the TP group
 * with sequence parallelism (finalize_model_grads), exposed: 2·7/8 · 4·L·E·h B at 50 GB/s.
 */
START_TEST(expert_dp_reduction)
{
    struct spsim_model *m = moe_model();
    struct spsim_hardware *hw = terms_hw();
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 8;
    p.sp = true;
    p.etp = 1;
    p.gbs = 2;
    p.moe_dispatcher = SPSIM_MOE_ALLTOALL;
    p.moe_routing = SPSIM_MOE_ROUTING_BALANCED;
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    double grads = 4.0 * 2 * E * 3 * h * fe, alone = 2 * 7.0 / 8 * grads / NV;
    double router = 2 * 7.0 / 8 * 4 * 2 * E * h / NV;
    ck_assert_uint_eq(r.comm.expert_dp_grad_bytes, (uint64_t)grads);
    ck_assert_int_eq(r.comm.expert_dp_tier, SPSIM_TIER_NVLINK);
    EQ(r.time.dp_exposed_s, alone + router);
    p.overlap_grad_reduce = true;
    ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    /* The window is the last micro-batch's backward wall: at least its compute, at most the
     * micro-batch's wall less its forward compute. */
    double lo = (r.time.backward_s + r.time.recompute_s) / 2,
           hi = r.time.microbatch_s - r.time.forward_s / 2;
    ck_assert(lo > 0 && lo <= hi && hi < alone / 4);
    ck_assert(r.time.dp_exposed_s >= alone - hi + router - 1e-12);
    ck_assert(r.time.dp_exposed_s <= alone - lo + router + 1e-12);
    /* Megatron-FSDP optim_grads (--zero 2) shards the experts over the same 8 ranks: each
     * micro-batch's gradients reduce-scattered beside its backward (7/8 of them on the wire),
     * showing by the rest, twice; their bf16 weights gathered once after the step (7/8 · 2 B a
     * weight), exposed. */
    p.overlap_grad_reduce = false;
    p.zero = 2;
    ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    double rs = 7.0 / 8 * grads / NV, ag = 7.0 / 8 * grads / 2 / NV;
    lo = (r.time.backward_s + r.time.recompute_s) / 2;
    hi = r.time.microbatch_s - r.time.forward_s / 2;
    ck_assert(r.time.dp_exposed_s >= 2 * (rs - hi) + ag + router - 1e-12);
    ck_assert(r.time.dp_exposed_s <= 2 * (rs - lo) + ag + router + 1e-12);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * The experts' FC2 bias (add_bias_linear): TEGroupedMLP adds it times each copy's probability
 * after FC2 (Megatron-LM d98e8a64 moe/experts.py:365-380, _apply_bias's list path: per expert
 * t + b·p, torch.cat, .to(bf16)), on the [rows, h] output: rows = 8192 copies of h = 1024 on
 * ep 8 (as alltoall_terms). Bytes per element (layer.c add_expert_fc2_bias):
 *   alltoall, bf16 probabilities (the router logits' dtype): forward b·p 2, t + b·p 2 + 2 + 2,
 *     cat 2 + 2, .to a no-op = 12 B: 12 · 8192 · 1024 / 1e12 = 100.663 µs; backward the two
 *     gradients dY·p and dY·b, 2 + 2 + 2 each, and split's concatenation 2 + 2 = 16 B,
 *     134.218 µs;
 *   flex (HybridEP), fp32 probabilities: forward 4 + (2 + 4 + 4) + (4 + 4) + (4 + 2) = 28 B,
 *     234.881 µs; backward (2 + 4) + (4 + 2) + 2 · (4 + 4 + 4) + (2 + 2) = 40 B, 335.544 µs.
 */
static size_t
bias_schedule(enum spsim_moe_dispatcher dispatcher, struct spsim_schedule_step *st)
{
    struct spsim_model_shape shape = {TESTUTIL_MOE_SHAPE, .linear_bias = true};
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.ep = p.dp = p.gbs = 8;
    p.moe_dispatcher = dispatcher;
    p.moe_flex_backend = SPSIM_FLEX_HYBRIDEP;
    return schedule_of(testutil_model(&shape), &p, st);
}

START_TEST(expert_fc2_bias)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    const enum spsim_phase F = SPSIM_PHASE_FORWARD, B = SPSIM_PHASE_BACKWARD;
    const char *op = "experts FC2 bias × probabilities (_apply_bias)";
    double rows = 8192;
    size_t n = bias_schedule(SPSIM_MOE_ALLTOALL, st);
    EQ(step(st, n, F, op, "forward")->time_s, 12 * rows * h / HBM);
    EQ(step(st, n, B, op, "backward")->time_s, 16 * rows * h / HBM);
    n = bias_schedule(SPSIM_MOE_FLEX, st);
    EQ(step(st, n, F, op, "forward")->time_s, 28 * rows * h / HBM);
    EQ(step(st, n, B, op, "backward")->time_s, 40 * rows * h / HBM);
    /* Without the bias no such step. */
    n = schedule(1, 8, 1, st);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(strcmp(st[i].op, op) != 0, "a bias step without linear_bias");
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("moe_terms");
    TCase *tc = tcase_create("moe_terms");
    tcase_add_test(tc, alltoall_terms);
    tcase_add_test(tc, etp_terms);
    tcase_add_test(tc, expert_dp_reduction);
    tcase_add_test(tc, cp_divides_tokens);
    tcase_add_test(tc, expert_fc2_bias);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
