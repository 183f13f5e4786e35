/*
 * The GPU part's host side, which needs no GPU: the replay plan of `spsim validate` against the
 * schedule `spsim explain` prints, the GEMM shapes and collective sizes of a calibration
 * against hand-derived values, the option checks, and the no-GPU path (built without CUDA, or
 * on a machine without a GPU).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "gpu/gpu_plan.h"
#include "testutil.h"

/* ---- the replay plan follows the schedule ----------------------------------------------- */

struct config_row {
    const char *model;
    uint32_t tp;
    bool sp;
    enum spsim_recompute rec;
    enum spsim_dtype dtype;
};

static const struct config_row configs[] = {
    {"gpt3-175b", 1, false, SPSIM_RECOMPUTE_SELECTIVE, SPSIM_DTYPE_BF16},
    {"gpt3-175b", 8, true, SPSIM_RECOMPUTE_SELECTIVE, SPSIM_DTYPE_BF16},
    {"gpt3-175b", 8, false, SPSIM_RECOMPUTE_FULL, SPSIM_DTYPE_BF16},
    {"gpt3-175b", 4, true, SPSIM_RECOMPUTE_NONE, SPSIM_DTYPE_FP8},
    {"llama3-8b", 8, true, SPSIM_RECOMPUTE_NONE, SPSIM_DTYPE_BF16},
    {"llama3-8b", 2, false, SPSIM_RECOMPUTE_FULL, SPSIM_DTYPE_FP16},
};

static struct spsim_parallel
config_of(const struct config_row *c)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = c->tp;
    p.sp = c->sp;
    p.recompute = c->rec;
    p.dtype = c->dtype;
    return p;
}

/* The replay plan of configs[row] on the H200 profile; static storage. */
static const struct spsim_gpu_validate_report *
plan_of(size_t row)
{
    static struct spsim_gpu_validate_report r;
    struct spsim_model *m = testutil_model_named(configs[row].model);
    struct spsim_hardware *hw = testutil_hardware("hgx-h200");
    struct spsim_parallel p = config_of(&configs[row]);
    struct spsim_error err = {0};
    ck_assert_msg(spsim_gpu_validate_plan(m, hw, &p, &r, &err) == 0, "%s", err.message);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
    return &r;
}

START_TEST(validate_plan_matches_schedule)
{
    const struct config_row *c = &configs[_i];
    struct spsim_model *m = testutil_model_named(c->model);
    struct spsim_hardware *hw = testutil_hardware("hgx-h200");
    struct spsim_parallel p = config_of(c);
    static struct spsim_schedule_step steps[SPSIM_MAX_SCHEDULE_STEPS];
    static struct spsim_gpu_validate_report r;
    struct spsim_result res;
    size_t n = 0;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_layer_schedule(m, hw, &p, steps, SPSIM_MAX_SCHEDULE_STEPS, &n, &err) == 0,
                  "%s", err.message);
    ck_assert_msg(spsim_gpu_validate_plan(m, hw, &p, &r, &err) == 0, "%s", err.message);
    ck_assert_msg(spsim_evaluate(m, hw, &p, &res, &err) == 0, "%s", err.message);
    ck_assert_uint_eq(r.nsteps, n);
    ck_assert_uint_eq(r.gpus, c->tp);
    for (size_t i = 0; i < n; i++) {
        const struct spsim_gpu_validate_step *s = &r.steps[i];
        ck_assert_str_eq(s->op, steps[i].op);
        ck_assert_str_eq(s->pass, steps[i].pass);
        ck_assert_int_eq(s->phase, steps[i].phase);
        ck_assert_int_eq(s->overlap, steps[i].overlap);
        ck_assert_str_eq(s->coll == SPSIM_COLL_COUNT ? "" : spsim_coll_op_name(s->coll),
                         steps[i].collective);
        ck_assert_double_eq_tol(s->predicted_s, steps[i].time_s, 1e-12 * steps[i].time_s + 1e-18);
        ck_assert_msg(s->measured_s == 0, "a plan measures nothing");
    }
    /* The plan's totals are the query's one-layer times. */
    ck_assert_double_eq_tol(r.predicted_forward_s, res.time.layer_forward_s,
                            1e-12 * res.time.layer_forward_s);
    ck_assert_double_eq_tol(r.predicted_backward_s, res.time.layer_backward_s,
                            1e-12 * res.time.layer_backward_s);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

static const struct spsim_gpu_validate_step *
find_step(const struct spsim_gpu_validate_report *r, enum spsim_phase phase, const char *op,
          const char *pass)
{
    for (size_t i = 0; i < r->nsteps; i++)
        if (r->steps[i].phase == phase && strcmp(r->steps[i].op, op) == 0 &&
            strcmp(r->steps[i].pass, pass) == 0)
            return &r->steps[i];
    ck_abort_msg("no step %s %s", op, pass);
    return NULL;
}

/*
 * GPT-3 175B (h = 12288, a = 96, s = 2048, b = 1) at t = 8 with SP, by hand: the QKV GEMM is
 * [s·b, h] × [h, 3h/t] = 2048 × 12288 × 4608 (M × K × N); dgrad is (M, N, K) = (2048, 12288,
 * 4608), wgrad (12288, 4608, 2048). The g AllGather moves the whole [s, b, h] bf16 tensor:
 * 2·2048·12288 = 50331648 bytes. LayerNorm over the s/t shard reads and writes bf16:
 * 4 · 256 · 12288 = 12582912 bytes.
 */
START_TEST(validate_plan_gpt3_shapes_by_hand)
{
    const struct spsim_gpu_validate_report *r = plan_of(1);
    const char *qkv = "QKV GEMM (column-parallel)";
    const struct {
        const char *pass;
        enum spsim_phase phase;
        uint64_t m, n, k;
        bool fp32;
    } want[] = {{"forward", SPSIM_PHASE_FORWARD, 2048, 4608, 12288, false},
                {"dgrad", SPSIM_PHASE_BACKWARD, 2048, 12288, 4608, false},
                {"wgrad", SPSIM_PHASE_BACKWARD, 12288, 4608, 2048, true}};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(want); i++) {
        const struct spsim_gpu_validate_step *s = find_step(r, want[i].phase, qkv, want[i].pass);
        ck_assert_int_eq(s->kind, SPSIM_REPLAY_GEMM);
        ck_assert_uint_eq(s->m, want[i].m);
        ck_assert_uint_eq(s->n, want[i].n);
        ck_assert_uint_eq(s->k, want[i].k);
        ck_assert_int_eq(s->fp32_output, want[i].fp32);
        ck_assert_double_eq_tol(s->flops, 2.0 * 2048 * 4608 * 12288, 1.0);
    }
    const struct spsim_gpu_validate_step *g =
        find_step(r, SPSIM_PHASE_FORWARD, "g: AllGather before QKV", "");
    ck_assert_int_eq(g->coll, SPSIM_COLL_ALL_GATHER);
    ck_assert_uint_eq(g->coll_bytes, 50331648);
    ck_assert_int_eq(g->kind, SPSIM_REPLAY_NONE);
    const struct spsim_gpu_validate_step *dg = find_step(r, SPSIM_PHASE_BACKWARD, qkv, "dgrad");
    ck_assert_int_eq(dg->coll, SPSIM_COLL_ALL_GATHER); /* the wgrad re-gather beside dgrad */
    ck_assert_int_eq(dg->overlap, SPSIM_OVERLAP_DGRAD);
    const struct spsim_gpu_validate_step *ln =
        find_step(r, SPSIM_PHASE_FORWARD, "LayerNorm 1", "forward");
    ck_assert_int_eq(ln->kind, SPSIM_REPLAY_COPY);
    ck_assert_uint_eq(ln->copy_bytes, 12582912);
}
END_TEST

/*
 * Llama 3 8B (a = 32, d = 128, s = 8192) at t = 8, flash attention: causal FlashAttention
 * forward does 2·b·(a/t)·s²·d = 2·4·8192²·128 FLOPs (two matmuls over half the keys), its
 * backward 2.5 times that (FlashAttention-2: five matmuls); the proxy replays them as 2 and 5
 * batched GEMMs of (s, s/2, d), batch b·a/t = 4.
 */
START_TEST(validate_plan_flash_proxy_flops)
{
    const struct spsim_gpu_validate_report *r = plan_of(4);
    const char *fa = "flash attention (QK^T, softmax, dropout, .V)";
    double fwd = 2.0 * 4 * 8192.0 * 8192.0 * 128;
    const struct spsim_gpu_validate_step *f = find_step(r, SPSIM_PHASE_FORWARD, fa, "forward");
    const struct spsim_gpu_validate_step *b = find_step(r, SPSIM_PHASE_BACKWARD, fa, "backward");
    ck_assert_int_eq(f->kind, SPSIM_REPLAY_ATTENTION_PROXY);
    ck_assert_uint_eq(f->gemms, 2);
    ck_assert_uint_eq(b->gemms, 5);
    ck_assert_uint_eq(f->batch, 4);
    ck_assert_uint_eq(f->m, 8192);
    ck_assert_uint_eq(f->n, 4096);
    ck_assert_uint_eq(f->k, 128);
    ck_assert_double_eq_tol(f->flops, fwd, 1.0);
    ck_assert_double_eq_tol(b->flops, 2.5 * fwd, 1.0);
}
END_TEST

/* FP8 runs keep attention's matmuls in BF16 and write FP8 GEMMs' outputs in BF16; as in
 * Transformer Engine (pytorch/module/base.py: _2X_ACC_FPROP = False, _2X_ACC_DGRAD =
 * _2X_ACC_WGRAD = True), forward GEMMs use cuBLASLt's fast accumulation and dgrad and wgrad
 * the split accumulator; a BF16 run has no fast accumulation anywhere. */
START_TEST(validate_plan_fp8_dtypes)
{
    const struct spsim_gpu_validate_report *r = plan_of(3);
    size_t fast = 0, split = 0;
    for (size_t i = 0; i < r->nsteps; i++) {
        const struct spsim_gpu_validate_step *s = &r->steps[i];
        if (s->kind == SPSIM_REPLAY_GEMM) {
            ck_assert_int_eq(s->dtype, SPSIM_DTYPE_FP8);
            bool fprop = strcmp(s->pass, "forward") == 0;
            ck_assert_msg(s->fp8_fast_accum == fprop, "step %zu %s %s", i, s->op, s->pass);
            fast += fprop;
            split += !fprop;
        } else {
            ck_assert(!s->fp8_fast_accum);
        }
        if (s->kind == SPSIM_REPLAY_BATCHED_GEMM)
            ck_assert_int_eq(s->dtype, SPSIM_DTYPE_BF16);
        ck_assert(!s->fp32_output);
    }
    /* Four linear layers (QKV, projection, FC1, FC2): 4 forward, 8 backward GEMMs. */
    ck_assert_uint_eq(fast, 4);
    ck_assert_uint_eq(split, 8);
    const struct spsim_gpu_validate_report *b = plan_of(1);
    for (size_t i = 0; i < b->nsteps; i++)
        ck_assert(!b->steps[i].fp8_fast_accum);
}
END_TEST

START_TEST(validate_plan_bad_config_fails)
{
    struct spsim_model *m = testutil_model_named("gpt3-175b");
    struct spsim_hardware *hw = testutil_hardware("hgx-h200");
    struct spsim_parallel p = config_of(&configs[0]);
    p.sp = true; /* Megatron: SP needs tp > 1 */
    static struct spsim_gpu_validate_report r;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_gpu_validate_plan(m, hw, &p, &r, &err), SPSIM_ECONFIG);
    ck_assert_int_eq(spsim_gpu_validate_plan(m, NULL, &p, &r, &err), SPSIM_EINVAL);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

/* ---- the replay's copies stream from HBM -------------------------------------------------- */

/*
 * Three passes of a plan's copies (source, then destination, per memory-bound step) through the
 * ring: each stretch lies in the ring, is the op's bytes each way (half its read + written
 * traffic), and between two stretches that share a byte the copies in between moved at least
 * 2 × L2 bytes, so the L2 no longer holds it. Two buffers reused by every copy, as before, fail
 * this at the second copy.
 */
static void
check_ring(const struct spsim_gpu_validate_report *r, uint64_t l2)
{
    enum { MAXT = 3 * 2 * SPSIM_MAX_SCHEDULE_STEPS };
    static uint64_t off[MAXT], len[MAXT], at[MAXT];
    uint64_t largest = 0, traffic = 0;
    for (size_t i = 0; i < r->nsteps; i++) {
        uint64_t c = spsim_gpu_step_copy(&r->steps[i]);
        ck_assert_uint_eq(c, r->steps[i].copy_bytes / 2);
        largest = c > largest ? c : largest;
    }
    struct spsim_gpu_ring g;
    spsim_gpu_ring_init(&g, largest, l2);
    ck_assert_uint_le(g.size, 3 * (largest + 255) + 2 * (l2 + 255)); /* memory it costs */
    size_t n = 0;
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < r->nsteps; i++)
            for (int side = 0; side < 2 && spsim_gpu_step_copy(&r->steps[i]); side++) {
                len[n] = spsim_gpu_step_copy(&r->steps[i]);
                off[n] = spsim_gpu_ring_take(&g, len[n]);
                at[n] = traffic;
                traffic += len[n++];
            }
    ck_assert_uint_gt(n, 6);
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_le(off[i] + len[i], g.size);
        ck_assert_uint_eq(off[i] % 256, 0);
        for (size_t j = i; j-- > 0;)
            if (off[j] < off[i] + len[i] && off[i] < off[j] + len[j]) {
                ck_assert_msg(at[i] - (at[j] + len[j]) >= 2 * l2,
                              "copy %zu reuses copy %zu's bytes after %llu bytes", i, j,
                              (unsigned long long)(at[i] - at[j] - len[j]));
                break;
            }
    }
}

START_TEST(replay_copies_rotate_beyond_l2)
{
    const uint64_t MiB = 1ull << 20;
    check_ring(plan_of(0), 50 * MiB); /* GPT-3 175B, tp 1: copies up to 1.2 GB */
    check_ring(plan_of(1), 50 * MiB); /* tp 8 with SP */
    check_ring(plan_of(4), 50 * MiB); /* Llama 3 8B, flash attention */
    check_ring(plan_of(5), 40 * MiB); /* FP16 on an A100's L2 */
    /* A small layer (h = 1024, s = 512) whose copies are far below the L2: the ring is then
     * mostly L2, and the reuse distance still holds. */
    struct spsim_model_shape ms = testutil_gpt_shape(2, 1024, 16, 512, 51200);
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_hardware *hw = testutil_hardware("hgx-h200");
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    static struct spsim_gpu_validate_report r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_gpu_validate_plan(m, hw, &p, &r, &err) == 0, "%s", err.message);
    check_ring(&r, 50 * MiB);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

/* ---- one host thread per GPU -------------------------------------------------------------- */

struct thread_probe {
    pthread_t self[4];
    bool agreed[4];
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool released;
    int stalls;
    int fail_at;     /* the thread that fails, or -1 */
    bool at_barrier; /* it fails at a barrier (else by returning at once) */
};

static int
probe_body(struct spsim_gpu_threads *t, void *ctx, int j, struct spsim_error *err)
{
    struct thread_probe *p = ctx;
    p->self[j] = pthread_self();
    if (j == p->fail_at && !p->at_barrier)
        return spsim_fail(err, SPSIM_EGPU, "GPU %d: failed", j);
    p->agreed[j] = spsim_gpu_threads_agree(t, j != p->fail_at);
    if (j == p->fail_at)
        return spsim_fail(err, SPSIM_EGPU, "GPU %d: failed", j);
    return SPSIM_OK; /* done, or stopped because another failed */
}

/* Every member on its own thread, none the caller's; barriers agree; no failure, no stall. */
START_TEST(gpu_threads_one_per_member)
{
    struct thread_probe p = {.fail_at = -1};
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_gpu_run_threads(4, probe_body, NULL, &p, 1.0, &err), SPSIM_OK);
    for (int j = 0; j < 4; j++) {
        ck_assert(p.agreed[j]);
        ck_assert(!pthread_equal(p.self[j], pthread_self()));
        for (int k = 0; k < j; k++)
            ck_assert(!pthread_equal(p.self[j], p.self[k]));
    }
    /* A failure at the barrier, or before it (the thread has returned and counts as arrived):
     * the others learn of it and stop, and its error is the one reported. */
    for (int b = 0; b < 2; b++) {
        p = (struct thread_probe){.fail_at = 2, .at_barrier = b};
        ck_assert_int_eq(spsim_gpu_run_threads(4, probe_body, NULL, &p, 1.0, &err), SPSIM_EGPU);
        ck_assert_str_eq(err.message, "GPU 2: failed");
        ck_assert(!p.agreed[0] && !p.agreed[1] && !p.agreed[3]);
    }
    ck_assert_int_eq(spsim_gpu_run_threads(0, probe_body, NULL, &p, 1.0, &err), SPSIM_EINVAL);
}
END_TEST

static void
probe_stall(void *ctx)
{
    struct thread_probe *p = ctx;
    pthread_mutex_lock(&p->lock);
    p->stalls++;
    p->released = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

/* The others wait for the failed one, as in a collective, until the stall call (ncclCommAbort
 * in the replay) releases them; what they then report is not the failure reported. */
static int
stuck_body(struct spsim_gpu_threads *t, void *ctx, int j, struct spsim_error *err)
{
    (void)t;
    struct thread_probe *p = ctx;
    if (j == p->fail_at)
        return spsim_fail(err, SPSIM_EGPU, "GPU %d: failed", j);
    pthread_mutex_lock(&p->lock);
    while (!p->released)
        pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
    return spsim_fail(err, SPSIM_EGPU, "GPU %d: aborted", j);
}

START_TEST(gpu_threads_stall_releases_waiters)
{
    struct thread_probe p = {.fail_at = 1};
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.cond, NULL);
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_gpu_run_threads(3, stuck_body, probe_stall, &p, 0.05, &err), SPSIM_EGPU);
    ck_assert_str_eq(err.message, "GPU 1: failed");
    ck_assert_int_eq(p.stalls, 1);
    pthread_cond_destroy(&p.cond);
    pthread_mutex_destroy(&p.lock);
}
END_TEST

/* ---- calibration sizes and shapes -------------------------------------------------------- */

/* nccl-tests *GetCollByteCount, by hand: AG/RS per-rank count = (size/4/n) rounded down to a
 * multiple of 4 floats (16 bytes), printed size = count·n·4; AR and Send/Recv size/4. */
START_TEST(coll_count_follows_nccl_tests)
{
    static const struct {
        enum spsim_coll_op op;
        uint64_t size;
        uint32_t n;
        uint64_t count, reported;
    } rows[] = {
        {SPSIM_COLL_ALL_GATHER, 1048576, 8, 32768, 1048576},
        {SPSIM_COLL_ALL_GATHER, 100, 8, 0, 0},         /* 25/8 = 3 floats -> 0 */
        {SPSIM_COLL_REDUCE_SCATTER, 1000, 3, 80, 960}, /* 250/3 = 83 -> 80 */
        {SPSIM_COLL_REDUCE_SCATTER, 128, 2, 16, 128},
        {SPSIM_COLL_ALL_REDUCE, 1000, 8, 250, 1000},
        {SPSIM_COLL_ALL_REDUCE, 8, 8, 2, 8},
        {SPSIM_COLL_SEND_RECV, 1001, 2, 250, 1000},
    };
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(rows); i++) {
        uint64_t reported = 12345;
        uint64_t count = spsim_gpu_coll_count(rows[i].op, rows[i].size, 4, rows[i].n, &reported);
        ck_assert_msg(count == rows[i].count && reported == rows[i].reported,
                      "row %zu: count %llu (want %llu), size %llu (want %llu)", i,
                      (unsigned long long)count, (unsigned long long)rows[i].count,
                      (unsigned long long)reported, (unsigned long long)rows[i].reported);
    }
}
END_TEST

START_TEST(sweep_sizes_default_is_8_to_1g)
{
    struct spsim_gpu_calibrate_options o;
    spsim_gpu_calibrate_defaults(&o);
    uint64_t sizes[64];
    size_t n = spsim_gpu_sweep_sizes(&o, sizes, 64);
    ck_assert_uint_eq(n, 28); /* 2^3 .. 2^30 */
    ck_assert_uint_eq(sizes[0], 8);
    ck_assert_uint_eq(sizes[27], 1ull << 30);
    o.min_bytes = 1000;
    o.max_bytes = 1000000;
    o.factor = 10;
    n = spsim_gpu_sweep_sizes(&o, sizes, 64);
    ck_assert_uint_eq(n, 4);
    ck_assert_uint_eq(sizes[3], 1000000);
}
END_TEST

static bool
has_shape(const struct spsim_gpu_gemm_shape *v, size_t n, uint64_t m, uint64_t nn, uint64_t k)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].m == m && v[i].n == nn && v[i].k == k && v[i].batch == 1)
            return true;
    return false;
}

/* GPT-3 175B's QKV at t = 1 and t = 8 (M = s·b = 2048, N = 3h/t, K = h = 12288), the square
 * grid, and the paper's 22B at t = 8 with b = 4 (Table 3): M = 2048·4, N = 3·6144/8, K = 6144. */
START_TEST(calibrate_shapes_cover_model_grid_and_paper)
{
    struct spsim_gpu_calibrate_options o;
    spsim_gpu_calibrate_defaults(&o);
    o.model = testutil_model_named("gpt3-175b");
    struct spsim_gpu_gemm_shape *v = NULL;
    size_t n = 0;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_gpu_calibrate_shapes(&o, &v, &n, &err), SPSIM_OK);
    ck_assert(has_shape(v, n, 2048, 36864, 12288));
    ck_assert(has_shape(v, n, 2048, 4608, 12288));
    ck_assert(has_shape(v, n, 12288, 4608, 2048)); /* its wgrad */
    for (uint64_t s = 512; s <= 16384; s *= 2)
        ck_assert(has_shape(v, n, s, s, s));
    ck_assert(has_shape(v, n, 8192, 2304, 6144));
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            ck_assert_msg(v[i].m != v[j].m || v[i].n != v[j].n || v[i].k != v[j].k,
                          "shape %zu repeated", i);
    free(v);
    spsim_model_destroy((struct spsim_model *)o.model);
}
END_TEST

/* HBM copies by hand: an H200 (50 MiB of L2, 140 GB free) copies 256 MiB (the first power of
 * two at least 4 × 50 MiB = 200 MiB), 512 MiB, 1 GiB and 2 GiB; an A100 (40 MiB) the same
 * from 256 MiB (160 MiB rounds up), 4 GiB at most; with 600 MiB free only 256 MiB fits twice; with
 * 500 MiB none does; a GPU with a 4 MiB L2 starts at the 64 MiB floor; none is below 4 × L2. */
START_TEST(hbm_sizes_stay_out_of_l2)
{
    const uint64_t MiB = 1ull << 20, GB = 1000000000ull;
    uint64_t v[8] = {0};
    ck_assert_uint_eq(spsim_gpu_hbm_sizes(50 * MiB, 140 * GB, v, 4), 4);
    ck_assert(v[0] == 256 * MiB && v[1] == 512 * MiB && v[2] == 1024 * MiB && v[3] == 2048 * MiB);
    ck_assert_uint_eq(spsim_gpu_hbm_sizes(50 * MiB, 140 * GB, v, 8), 5); /* then 4 GiB, the top */
    ck_assert_uint_eq(v[4], 4096 * MiB);
    ck_assert_uint_eq(spsim_gpu_hbm_sizes(40 * MiB, 80 * GB, v, 8), 5);
    ck_assert_uint_eq(v[0], 256 * MiB);
    ck_assert_uint_eq(spsim_gpu_hbm_sizes(50 * MiB, 600 * MiB, v, 8), 1);
    ck_assert_uint_eq(v[0], 256 * MiB);
    ck_assert_uint_eq(spsim_gpu_hbm_sizes(50 * MiB, 500 * MiB, v, 8), 0);
    ck_assert_uint_eq(spsim_gpu_hbm_sizes(4 * MiB, 140 * GB, v, 2), 2);
    ck_assert(v[0] == 64 * MiB && v[1] == 128 * MiB);
    for (uint64_t l2 = 1 * MiB; l2 <= 256 * MiB; l2 += 7 * MiB) {
        size_t n = spsim_gpu_hbm_sizes(l2, 1000 * GB, v, 8);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(v[i] >= 4 * l2 && v[i] <= (4ull << 30), "L2 %llu: %llu B",
                          (unsigned long long)l2, (unsigned long long)v[i]);
    }
}
END_TEST

/* BF16 alone, or BF16 then FP8 both ways (fast accumulation first, as TE's fprop). */
START_TEST(gemm_variants_measure_both_fp8_modes)
{
    struct spsim_gpu_gemm_variant v[3];
    ck_assert_uint_eq(spsim_gpu_gemm_variants(false, v), 1);
    ck_assert(v[0].dtype == SPSIM_DTYPE_BF16 && !v[0].fast_accum);
    ck_assert_uint_eq(spsim_gpu_gemm_variants(true, v), 3);
    ck_assert(v[0].dtype == SPSIM_DTYPE_BF16 && !v[0].fast_accum);
    ck_assert(v[1].dtype == SPSIM_DTYPE_FP8 && v[1].fast_accum);
    ck_assert(v[2].dtype == SPSIM_DTYPE_FP8 && !v[2].fast_accum);
}
END_TEST

/* Under MPI: eight ranks on a node with all eight GPUs visible take GPU 0 .. 7; with one GPU
 * per rank (Slurm --gpus-per-task=1) every rank takes its only device, 0; with two per rank,
 * local ranks 0 .. 3 take 0, 1, 0, 1 of their own pair. */
START_TEST(mpi_rank_device_wraps_over_visible_gpus)
{
    for (int r = 0; r < 8; r++) {
        ck_assert_int_eq(spsim_gpu_rank_device(r, 8), r);
        ck_assert_int_eq(spsim_gpu_rank_device(r, 1), 0);
        ck_assert_int_eq(spsim_gpu_rank_device(r, 2), r & 1);
    }
    ck_assert_int_eq(spsim_gpu_rank_device(13, 4), 1);
    ck_assert_int_eq(spsim_gpu_rank_device(0, 0), -1);
    ck_assert_int_eq(spsim_gpu_rank_device(-1, 8), -1);
}
END_TEST

/* ---- option checks ----------------------------------------------------------------------- */

START_TEST(calibrate_check_rejects_each_bad_field)
{
    static const struct {
        const char *field;
        int gpus;
        uint64_t min, max;
        uint32_t factor, iters, mbs;
        bool mpi;
    } rows[] = {
        {"'gpus'", -1, 8, 1024, 2, 20, 1, false},
        {"'gpus'", 65, 8, 1024, 2, 20, 1, false},
        {"'min_bytes'", 0, 0, 1024, 2, 20, 1, false},
        {"'min_bytes'", 0, 2048, 1024, 2, 20, 1, false},
        {"'max_bytes'", 0, 8, 1ull << 40, 2, 20, 1, false},
        {"'factor'", 0, 8, 1024, 1, 20, 1, false},
        {"'iters'", 0, 8, 1024, 2, 0, 1, false},
        {"'mbs'", 0, 8, 1024, 2, 20, 0, false},
        {"'gpus'", 2, 8, 1024, 2, 20, 1, true},
    };
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(rows); i++) {
        struct spsim_gpu_calibrate_options o;
        spsim_gpu_calibrate_defaults(&o);
        o.gpus = rows[i].gpus;
        o.min_bytes = rows[i].min;
        o.max_bytes = rows[i].max;
        o.factor = rows[i].factor;
        o.iters = rows[i].iters;
        o.mbs = rows[i].mbs;
        o.mpi = rows[i].mpi;
        struct spsim_error err = {0};
        ck_assert_int_eq(spsim_gpu_calibrate_check(&o, &err), SPSIM_EINVAL);
        ck_assert_msg(strstr(err.message, rows[i].field), "row %zu: '%s'", i, err.message);
        ck_assert_ptr_null(strchr(err.message, '\n'));
    }
    struct spsim_gpu_calibrate_options o;
    spsim_gpu_calibrate_defaults(&o);
    ck_assert_int_eq(spsim_gpu_calibrate_check(&o, NULL), SPSIM_OK);
    ck_assert_int_eq(spsim_gpu_calibrate_check(NULL, NULL), SPSIM_EINVAL);
}
END_TEST

/* ---- without a GPU ------------------------------------------------------------------------ */

START_TEST(no_gpu_calls_say_enotsup)
{
    int count = -1;
    struct spsim_error err = {0};
    int rc = spsim_gpu_device_count(&count, &err);
    if (rc == SPSIM_OK)
        return; /* a GPU is here: test_gpu covers it */
    ck_assert_int_eq(rc, SPSIM_ENOTSUP);
    ck_assert_int_eq(count, 0);
    ck_assert_msg(strstr(err.message, spsim_gpu_built() ? "no GPU" : "without GPU support"), "%s",
                  err.message);

    struct spsim_gpu_calibrate_options o;
    spsim_gpu_calibrate_defaults(&o);
    o.mpi = false;
    struct spsim_bw_table *t = NULL;
    ck_assert_int_eq(spsim_bw_table_create(&t), SPSIM_OK);
    struct spsim_gemm_sample *g = (void *)&o; /* canary: must come back NULL */
    struct spsim_hbm_sample *h = (void *)&o;
    size_t ng = 7, nh = 7;
    ck_assert_int_eq(spsim_gpu_calibrate(&o, t, &g, &ng, &h, &nh, &err), SPSIM_ENOTSUP);
    ck_assert(g == NULL && h == NULL && ng == 0 && nh == 0);
    ck_assert_uint_eq(spsim_bw_table_size(t), 0);
    o.factor = 0; /* a bad option is still reported as such */
    ck_assert_int_eq(spsim_gpu_calibrate(&o, t, &g, &ng, &h, &nh, &err), SPSIM_EINVAL);
    spsim_bw_table_destroy(t);

    struct spsim_model *m = testutil_model_named("llama3-8b");
    struct spsim_hardware *hw = testutil_hardware("hgx-h200");
    struct spsim_parallel p = config_of(&configs[0]);
    static struct spsim_gpu_validate_report r;
    ck_assert_int_eq(spsim_gpu_validate(m, hw, &p, NULL, &r, &err), SPSIM_ENOTSUP);
    struct spsim_gpu_info info;
    ck_assert_int_eq(spsim_gpu_info(0, &info, &err), SPSIM_ENOTSUP);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

/* The module an installed library loads is the installed one, even where the build tree it was
 * installed from still has its module; only a library loaded from the build tree takes that. */
START_TEST(gpu_module_choice)
{
    const char *b = "/src/spsim/build/src/gpu/libspsim-gpu.so";
    const char *i = "/usr/local/lib/spsim/libspsim-gpu.so";
    const char *root = "/src/spsim/build";
    static const struct {
        const char *env, *self, *root, *want;
    } rows[] = {
        {NULL, "/usr/local/lib/libspsim.so.0.1.0", "/src/spsim/build", "install"},
        {NULL, "/src/spsim/build/src/libspsim.so.0.1.0", "/src/spsim/build", "build"},
        {NULL, "/src/spsim/build/tests/test_gpu", "/src/spsim/build/", "build"},
        {NULL, "/src/spsim/build-asan/src/libspsim.so", "/src/spsim/build", "install"},
        {NULL, "/src/spsim/build", "/src/spsim/build", "install"}, /* the directory itself */
        {NULL, "/src/spsim/build/src/libspsim.so", "", "install"}, /* build tree gone */
        {NULL, "", "/src/spsim/build", "install"},                 /* self unknown */
        {"", "/usr/lib/libspsim.so", "/src/spsim/build", "install"},
        {"/opt/m.so", "/src/spsim/build/src/libspsim.so", "/src/spsim/build", "/opt/m.so"},
    };
    for (size_t k = 0; k < SPSIM_ARRAY_LENGTH(rows); k++) {
        const char *got = spsim_gpu_module_choose(rows[k].env, rows[k].self, rows[k].root, b, i);
        const char *want = strcmp(rows[k].want, "build") == 0     ? b
                           : strcmp(rows[k].want, "install") == 0 ? i
                                                                  : rows[k].want;
        ck_assert_msg(strcmp(got, want) == 0, "row %zu: %s, want %s", k, got, want);
    }
    ck_assert_str_eq(spsim_gpu_module_choose(NULL, NULL, root, b, i), i);
    ck_assert_str_eq(spsim_gpu_module_choose(NULL, "/src/spsim/build/x", NULL, b, i), i);
}
END_TEST

START_TEST(replay_kind_names)
{
    ck_assert_str_eq(spsim_replay_kind_name(SPSIM_REPLAY_COPY), "copy");
    ck_assert_str_eq(spsim_replay_kind_name(SPSIM_REPLAY_ATTENTION_PROXY), "attention_proxy");
    ck_assert_str_eq(spsim_replay_kind_name((enum spsim_replay_kind)99), "?");
}
END_TEST

static Suite *
gpu_plan_suite(void)
{
    Suite *s = suite_create("gpu_plan");
    TCase *plan = tcase_create("plan");
    tcase_set_timeout(plan, 60);
    tcase_add_loop_test(plan, validate_plan_matches_schedule, 0, (int)SPSIM_ARRAY_LENGTH(configs));
    tcase_add_test(plan, validate_plan_gpt3_shapes_by_hand);
    tcase_add_test(plan, validate_plan_flash_proxy_flops);
    tcase_add_test(plan, validate_plan_fp8_dtypes);
    tcase_add_test(plan, validate_plan_bad_config_fails);
    tcase_add_test(plan, replay_copies_rotate_beyond_l2);
    tcase_add_test(plan, gpu_threads_one_per_member);
    tcase_add_test(plan, gpu_threads_stall_releases_waiters);
    suite_add_tcase(s, plan);
    TCase *cal = tcase_create("calibrate");
    tcase_add_test(cal, coll_count_follows_nccl_tests);
    tcase_add_test(cal, sweep_sizes_default_is_8_to_1g);
    tcase_add_test(cal, calibrate_shapes_cover_model_grid_and_paper);
    tcase_add_test(cal, calibrate_check_rejects_each_bad_field);
    tcase_add_test(cal, mpi_rank_device_wraps_over_visible_gpus);
    tcase_add_test(cal, hbm_sizes_stay_out_of_l2);
    tcase_add_test(cal, gemm_variants_measure_both_fp8_modes);
    suite_add_tcase(s, cal);
    TCase *nogpu = tcase_create("no_gpu");
    tcase_add_test(nogpu, no_gpu_calls_say_enotsup);
    tcase_add_test(nogpu, replay_kind_names);
    tcase_add_test(nogpu, gpu_module_choice);
    suite_add_tcase(s, nogpu);
    return s;
}

int
main(void)
{
    return testutil_run(gpu_plan_suite());
}
