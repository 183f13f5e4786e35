/*
 * Context parallelism against closed forms worked by hand from Megatron-LM and Transformer
 * Engine (context_parallel.py): activations per rank, the bytes each --cp-comm-type moves per
 * layer, the exposed time of the p2p ring, the dp·cp gradient group and Megatron's rules.
 */
#include <math.h>
#include <string.h>

#include "testutil.h"

/* llama3-8b (models/llama3-8b.json): h 4096, 32 heads of 128, 8 KV heads, SwiGLU ffn 14336,
 * RMSNorm, no dropout, flash attention, untied embeddings. */
#define H   4096ull
#define Q   4096ull
#define KV  1024ull
#define A   32ull
#define FFN 14336ull

static struct spsim_parallel
cp_config(uint32_t tp, uint32_t cp, enum spsim_cp_comm type, uint32_t seq)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = tp;
    p.sp = tp > 1;
    p.cp = cp;
    p.cp_comm_type = type;
    p.seq = seq;
    p.gbs = 4;
    return p;
}

/*
 * One llama3-8b layer's saved bytes (src/engine/layer.c's inventory): with n = s/c tokens per
 * rank and n' = n/t with SP, the norm 1, QKV, norm 2 and FC1 inputs 4 × 2·n'·b·h; Q and K
 * 2·n·b·(q+kv)/t; V 2·n·b·kv/t; the fp32 log-sum-exp 4·b·(a/t)·n (dropped by selective
 * recompute); the projection input 2·n·b·q/t; SwiGLU's gate and up 4·n·b·ffn/t and FC2's
 * input 2·n·b·ffn/t. Every term is per token, so the cp = c figure is the cp = 1 one over c.
 */
static uint64_t
llama8b_layer_bytes(uint64_t s, uint64_t b, uint64_t t, uint64_t c, bool sp, bool lse)
{
    uint64_t n = s / c, n1 = sp ? n / t : n;
    return 8 * n1 * b * H + 2 * n * b * (Q + KV) / t + 2 * n * b * KV / t +
           (lse ? 4 * b * (A / t) * n : 0) + 2 * n * b * Q / t + 6 * n * b * FFN / t;
}

START_TEST(activations_divide_by_cp)
{
    static const struct {
        uint32_t tp, cp, seq, mbs;
        enum spsim_recompute rec;
    } cases[] = {
        {2, 2, 8192, 1, SPSIM_RECOMPUTE_NONE},        {2, 4, 8192, 1, SPSIM_RECOMPUTE_SELECTIVE},
        {4, 2, 16384, 2, SPSIM_RECOMPUTE_NONE},       {1, 8, 32768, 1, SPSIM_RECOMPUTE_NONE},
        {8, 4, 131072, 1, SPSIM_RECOMPUTE_SELECTIVE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct spsim_parallel p = cp_config(cases[i].tp, cases[i].cp, SPSIM_CP_P2P, cases[i].seq);
        p.mbs = cases[i].mbs;
        p.recompute = cases[i].rec;
        p.gbs = cases[i].mbs;
        struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
        bool lse = cases[i].rec == SPSIM_RECOMPUTE_NONE;
        uint64_t want =
            llama8b_layer_bytes(cases[i].seq, cases[i].mbs, cases[i].tp, cases[i].cp, p.sp, lse);
        ck_assert_uint_eq(r.memory.activation_per_layer_bytes, want);
        struct spsim_parallel one = p;
        one.cp = 1;
        struct spsim_result r1 = testutil_evaluate_config("llama3-8b", "dgx-h100", &one);
        ck_assert_uint_eq(r1.memory.activation_per_layer_bytes,
                          cases[i].cp * r.memory.activation_per_layer_bytes);
        /* The p2p backward's two [KV, dKV] receive buffers: 4·KV_blk, KV_blk = 2·b·(s/c)·kv/t·2. */
        uint64_t blk = 4ull * cases[i].mbs * (cases[i].seq / cases[i].cp) * KV / cases[i].tp;
        ck_assert_uint_eq(r.memory.activation_cp_working_bytes, 4 * blk);
        /* The 16-bit logits at the loss (summary.c), of the rank's s/c tokens and v/t: Llama 3's
         * 128,256 padded to a multiple of 128·t, 128,256 for t <= 2, 128,512 at t = 4, 129,024
         * at t = 8. */
        uint64_t tp = cases[i].tp, vpad = (128256 + 128 * tp - 1) / (128 * tp) * 128 * tp;
        ck_assert_uint_eq(r.memory.activation_logits_working_bytes,
                          2ull * cases[i].mbs * (cases[i].seq / cases[i].cp) * (vpad / tp));
        ck_assert_uint_eq(r.memory.activation_layers_bytes, 32 * want);
        ck_assert_uint_eq(r.config.cp, cases[i].cp);
        ck_assert_uint_eq(r.gpus, cases[i].tp * cases[i].cp);
    }
}
END_TEST

/* Exposed time of the p2p ring worked from the public pieces: the flash step's time in the
 * schedule and one send as nccl-tests' sendrecv would take it. */
static void
ring_exposure(const struct spsim_hardware *hw, const struct spsim_model *m,
              const struct spsim_parallel *p, uint32_t nodes, double *fwd, double *bwd)
{
    struct spsim_schedule_step steps[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = 0;
    ck_assert_int_eq(spsim_layer_schedule(m, hw, p, steps, SPSIM_MAX_SCHEDULE_STEPS, &n, NULL),
                     SPSIM_OK);
    double af = 0, ab = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(steps[i].op, "flash attention", 15) == 0)
            *(steps[i].phase == SPSIM_PHASE_BACKWARD ? &ab : &af) = steps[i].time_s;
    ck_assert(af > 0 && ab > 0);
    uint64_t blk = 4ull * p->mbs * (p->seq / p->cp) * KV / p->tp;
    struct spsim_collective_prediction one, two;
    ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_SEND_RECV, 2, nodes, blk, &one, NULL),
                     SPSIM_OK);
    ck_assert_int_eq(
        spsim_collective_predict(hw, SPSIM_COLL_SEND_RECV, 2, nodes, 2 * blk, &two, NULL),
        SPSIM_OK);
    /* c equal steps (each half a (s/c)² block); forward: c−1 blocks, each beside one step;
     * backward (steps 2.5× as long, already in the schedule's flash time): KV_blk at step 0,
     * KV_blk + dKV_blk at the c−2 middle steps, the last dKV_blk after the last step. */
    double c = p->cp, a = af / c, b = ab / c;
    *fwd = (c - 1) * fmax(0, one.time_s - a);
    *bwd = fmax(0, one.time_s - b) + (c - 2) * fmax(0, two.time_s - b) + one.time_s;
}

START_TEST(p2p_ring_bytes_and_exposure)
{
    /* tp·cp ≤ 8: the ring inside one DGX H100 (NVLink); tp 8, cp 2: across two nodes. */
    static const struct {
        uint32_t tp, cp, nodes;
        enum spsim_tier tier;
    } cases[] = {
        {2, 2, 1, SPSIM_TIER_NVLINK},
        {2, 4, 1, SPSIM_TIER_NVLINK},
        {8, 2, 2, SPSIM_TIER_NETWORK},
        {4, 4, 2, SPSIM_TIER_HIERARCHICAL},
    };
    struct spsim_model *m = testutil_model_named("llama3-8b");
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct spsim_parallel p = cp_config(cases[i].tp, cases[i].cp, SPSIM_CP_P2P, 16384);
        p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
        struct spsim_result r;
        ck_assert_int_eq(spsim_evaluate(m, hw, &p, &r, NULL), SPSIM_OK);
        uint64_t c = cases[i].cp, blk = 4ull * (16384 / c) * KV / cases[i].tp;
        ck_assert_uint_eq(r.comm.cp_forward_wire_bytes_per_layer, (c - 1) * blk);
        ck_assert_uint_eq(r.comm.cp_backward_wire_bytes_per_layer, 2 * (c - 1) * blk);
        /* Selective recompute replays core attention, ring included. */
        ck_assert_uint_eq(r.comm.cp_recompute_wire_bytes_per_layer, (c - 1) * blk);
        ck_assert_uint_eq(r.comm.cp_wire_bytes_per_iteration, 32 * 4 * 4 * (c - 1) * blk);
        ck_assert_int_eq(r.comm.cp_tier, cases[i].tier);
        double fwd, bwd;
        /* A ring that leaves the NVLink domain is as slow as its network hop. */
        ring_exposure(hw, m, &p, cases[i].tier == SPSIM_TIER_NVLINK ? 1 : 2, &fwd, &bwd);
        double want = 4.0 * 32.0 * (2 * fwd + bwd); /* micro-batches × layers × passes */
        ck_assert_double_eq_tol(r.time.cp_exposed_s, want, 1e-12 * want + 1e-15);
        ck_assert(r.time.cp_exposed_s > 0);
        struct spsim_parallel none = p;
        none.cp_comm_type = SPSIM_CP_P2P;
        none.cp = 1;
        struct spsim_result r1;
        ck_assert_int_eq(spsim_evaluate(m, hw, &none, &r1, NULL), SPSIM_OK);
        ck_assert_double_eq(r1.time.cp_exposed_s, 0);
        ck_assert_uint_eq(r1.comm.cp_forward_wire_bytes_per_layer, 0);
    }
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

/*
 * Full recomputation of the first k of a stage's L layers (--recompute-method block) replays
 * k layers' forward: every per-layer line lies between no recomputation's (k = 0) and all of
 * them's (uniform, k = L), k/L of the way: cp_block = cp_none + k/L·(cp_all − cp_none), TP
 * likewise; and the iteration holds the CP exchanges once, as the micro-batch's wall does
 * (pp 1: m micro-batches × microbatch_s + the DP reduction and the optimizer step).
 * llama3-8b (L = 32), tp 2, cp 2, dp 2, seq 8192, gbs 16 (m = 8), k = 4; the p2p ring and
 * all_gather (whose recompute phase gathers K and V again, exposed).
 */
START_TEST(cp_with_block_recompute)
{
    struct spsim_model *m = testutil_model_named("llama3-8b");
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    const enum spsim_cp_comm types[] = {SPSIM_CP_P2P, SPSIM_CP_ALL_GATHER};
    for (size_t i = 0; i < 2; i++) {
        struct spsim_parallel p = cp_config(2, 2, types[i], 8192);
        p.dp = 2;
        p.gbs = 16;
        struct spsim_result none, all, block;
        ck_assert_int_eq(spsim_evaluate(m, hw, &p, &none, NULL), SPSIM_OK);
        p.recompute = SPSIM_RECOMPUTE_FULL;
        p.recompute_method = SPSIM_RECOMPUTE_METHOD_UNIFORM;
        p.recompute_layers = 1;
        ck_assert_int_eq(spsim_evaluate(m, hw, &p, &all, NULL), SPSIM_OK);
        p.recompute_method = SPSIM_RECOMPUTE_METHOD_BLOCK;
        p.recompute_layers = 4;
        ck_assert_int_eq(spsim_evaluate(m, hw, &p, &block, NULL), SPSIM_OK);
        const struct spsim_time_report *n = &none.time, *a = &all.time, *t = &block.time;
        ck_assert(n->cp_exposed_s > 0);
        double cp = n->cp_exposed_s + 4.0 / 32 * (a->cp_exposed_s - n->cp_exposed_s);
        double tp = n->tp_exposed_s + 4.0 / 32 * (a->tp_exposed_s - n->tp_exposed_s);
        ck_assert_double_eq_tol(t->cp_exposed_s, cp, 1e-9 * cp);
        ck_assert_double_eq_tol(t->tp_exposed_s, tp, 1e-9 * tp);
        double it = 8 * t->microbatch_s + t->dp_exposed_s + t->optimizer_s +
                    t->optimizer_host_exposed_s + t->log_host_s;
        ck_assert_double_eq_tol(t->iteration_s, it, 1e-9 * it);
    }
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(all_gather_and_a2a_bytes)
{
    struct spsim_model *m = testutil_model_named("llama3-8b");
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    for (uint32_t c = 2; c <= 4; c *= 2) {
        uint64_t n = 8192 / c, t = 2, blk = 4 * n * KV / t;
        /* all_gather: AG of K and V (c·KV_blk) forward, again backward, RS of dK, dV:
         * (c−1)/c of c·KV_blk each; on the critical path. */
        struct spsim_parallel p = cp_config(2, c, SPSIM_CP_ALL_GATHER, 8192);
        struct spsim_result r;
        ck_assert_int_eq(spsim_evaluate(m, hw, &p, &r, NULL), SPSIM_OK);
        ck_assert_uint_eq(r.comm.cp_forward_wire_bytes_per_layer, (c - 1) * blk);
        ck_assert_uint_eq(r.comm.cp_backward_wire_bytes_per_layer, 2 * (c - 1) * blk);
        ck_assert_uint_eq(r.memory.activation_cp_working_bytes, 2 * c * blk);
        struct spsim_collective_prediction ag, rs;
        ck_assert_int_eq(
            spsim_collective_predict(hw, SPSIM_COLL_ALL_GATHER, c, 1, c * blk, &ag, NULL), 0);
        ck_assert_int_eq(
            spsim_collective_predict(hw, SPSIM_COLL_REDUCE_SCATTER, c, 1, c * blk, &rs, NULL), 0);
        double want = 4.0 * 32.0 * (2 * ag.time_s + rs.time_s);
        ck_assert_double_eq_tol(r.time.cp_exposed_s, want, 1e-12 * want);
        /* a2a: Q, K, V (2·n·(q+2kv)/t B) before attention and O (2·n·q/t) after, (c−1)/c each,
         * the same again backward (dO, then dQ, dK, dV). */
        p.cp_comm_type = SPSIM_CP_A2A;
        ck_assert_int_eq(spsim_evaluate(m, hw, &p, &r, NULL), SPSIM_OK);
        uint64_t qkv = 2 * n * (Q + 2 * KV) / t, o = 2 * n * Q / t;
        uint64_t wire = qkv / c * (c - 1) + o / c * (c - 1);
        ck_assert_uint_eq(r.comm.cp_forward_wire_bytes_per_layer, wire);
        ck_assert_uint_eq(r.comm.cp_backward_wire_bytes_per_layer, wire);
        ck_assert_uint_eq(r.memory.activation_cp_working_bytes, qkv);
        struct spsim_collective_prediction x1, x2;
        ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_TO_ALL, c, 1, qkv, &x1, NULL),
                         0);
        ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_TO_ALL, c, 1, o, &x2, NULL),
                         0);
        want = 4.0 * 32.0 * 2 * (x1.time_s + x2.time_s);
        ck_assert_double_eq_tol(r.time.cp_exposed_s, want, 1e-12 * want);
    }
    /* a2a+p2p, sizes 2·2: A2A over 2 (heads for sequence: the rank then holds s/2 tokens of
     * 1/2 of its heads), then the ring over 2 of the same KV_blk bytes. */
    struct spsim_parallel p = cp_config(2, 4, SPSIM_CP_A2A_P2P, 8192);
    p.hcp_sizes[0] = 2;
    p.hcp_sizes[1] = 2;
    struct spsim_result r;
    ck_assert_int_eq(spsim_evaluate(m, hw, &p, &r, NULL), SPSIM_OK);
    uint64_t n = 2048, blk = 4 * n * KV / 2;
    uint64_t qkv = 2 * n * (Q + 2 * KV) / 2, o = 2 * n * Q / 2;
    ck_assert_uint_eq(r.comm.cp_forward_wire_bytes_per_layer, qkv / 2 + o / 2 + blk);
    ck_assert_uint_eq(r.comm.cp_backward_wire_bytes_per_layer, qkv / 2 + o / 2 + 2 * blk);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

/* The CP exchange buffers sit on every stage, also with an uneven pipeline (rank_activations):
 * llama3-8b at tp 2, cp 2, pp 2 with 15 + 17 layers; p2p's working set 4·KV_blk against a2a's
 * Q, K, V 2·n·(q + 2kv)/t, all else equal, so the stage totals differ by exactly that. */
START_TEST(cp_buffers_uneven_pipeline)
{
    uint64_t n = 8192 / 2, t = 2, blk = 4 * n * KV / t, qkv = 2 * n * (Q + 2 * KV) / t;
    struct spsim_parallel p = cp_config(2, 2, SPSIM_CP_P2P, 8192);
    p.pp = 2;
    p.first_stage_layers = 15;
    struct spsim_result a = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    p.cp_comm_type = SPSIM_CP_A2A;
    struct spsim_result b = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_uint_eq(a.memory.activation_cp_working_bytes, 4 * blk);
    ck_assert_uint_eq(b.memory.activation_cp_working_bytes, qkv);
    ck_assert_uint_eq(a.memory.activation_first_stage_bytes - b.memory.activation_first_stage_bytes,
                      4 * blk - qkv);
    ck_assert_uint_eq(a.memory.activation_last_stage_bytes - b.memory.activation_last_stage_bytes,
                      4 * blk - qkv);
}
END_TEST

START_TEST(gradients_over_dp_cp)
{
    /* DDP reduces over intra_dp_cp_group (distributed_data_parallel.py): cp 2 × dp 2 moves what
     * dp 4 moves, and the distributed optimizer shards over the 4 ranks. */
    struct spsim_parallel p = cp_config(2, 2, SPSIM_CP_P2P, 8192);
    p.dp = 2;
    p.gbs = 8;
    p.distributed_optimizer = true;
    struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    uint64_t P = r.memory.parameters_per_gpu, g = 4 * P;
    uint64_t frac = g / 4 * 3 + (g % 4) * 3 / 4;
    ck_assert_uint_eq(r.gpus, 8);
    ck_assert_uint_eq(r.comm.dp_grad_bytes, g);
    ck_assert_uint_eq(r.comm.dp_wire_bytes_per_rank, frac + frac / 2);
    ck_assert_uint_eq(r.memory.optimizer_bytes, (12 * P + 3) / 4);
    ck_assert_int_eq(r.comm.dp_tier, SPSIM_TIER_NVLINK);
    ck_assert_uint_eq(r.comm.microbatches, 4); /* gbs / (mbs · dp): cp ranks share a sample */
    /* cp 2 alone still reduces gradients, over the 2 CP ranks. */
    p.dp = 1;
    p.gbs = 4;
    r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    g = 4 * r.memory.parameters_per_gpu;
    ck_assert_uint_eq(r.comm.dp_grad_bytes, g);
    ck_assert_uint_eq(r.comm.dp_wire_bytes_per_rank, g / 2 + (g / 2) / 2);
    /* The whole CP group does the causal work of one sequence: hardware FLOPs equal cp 1's. */
    struct spsim_parallel one = p;
    one.cp = 1;
    struct spsim_result r1 = testutil_evaluate_config("llama3-8b", "dgx-h100", &one);
    ck_assert_double_eq_tol(r.time.hardware_flops, r1.time.hardware_flops,
                            1e-12 * r1.time.hardware_flops);
    ck_assert_double_eq(r.time.model_flops, r1.time.model_flops);
    /* GEMMs on s/c tokens: the layer's forward compute is about half. */
    ck_assert(r.time.layer_forward_s < 0.6 * r1.time.layer_forward_s);
}
END_TEST

START_TEST(megatron_rules)
{
    struct spsim_parallel p = cp_config(1, 3, SPSIM_CP_P2P, 8192);
    testutil_expect_rule("llama3-8b", &p,
                         "seq-length should be a multiple of 2 * context-parallel-size");
    p = cp_config(8, 4, SPSIM_CP_P2P, 8192 + 8); /* divisible by 2·4 and 8, not by 2·4·8 */
    testutil_expect_rule("llama3-8b", &p, "must be a multiple of 2·cp·tp");
    p = cp_config(1, 2, SPSIM_CP_P2P, 8192);
    p.flash_attn = 0;
    testutil_expect_rule("llama3-8b", &p,
                         "Context parallelism is only supported by TEDotProductAttention");
    p = cp_config(8, 2, SPSIM_CP_A2A, 8192); /* 8 KV heads over tp 8: 1 per rank */
    testutil_expect_rule("llama3-8b", &p, "requires num_heads % cp_size == 0");
    p = cp_config(2, 4, SPSIM_CP_A2A_P2P, 8192);
    testutil_expect_rule("llama3-8b", &p, "--hierarchical-context-parallel-sizes must be set");
    p.hcp_sizes[0] = 2;
    p.hcp_sizes[1] = 4;
    testutil_expect_rule("llama3-8b", &p, "must equal context_parallel_size");
    p = cp_config(1, 0, SPSIM_CP_P2P, 8192);
    testutil_expect_rule("llama3-8b", &p, "field 'cp'");
    /* validate replays one TP group: it refuses CP rather than replay it wrongly. */
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_model *m8 = testutil_model_named("llama3-8b");
    struct spsim_gpu_validate_report *rep = calloc(1, sizeof(*rep));
    struct spsim_error err = {0};
    p = cp_config(2, 2, SPSIM_CP_P2P, 8192);
    ck_assert_int_eq(spsim_gpu_validate_plan(m8, hw, &p, rep, &err), SPSIM_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "context parallelism (cp = 2) is not replayed"));
    free(rep);
    spsim_model_destroy(m8);
    spsim_hardware_destroy(hw);
    /* Valid: p2p and all_gather need no head divisibility. */
    struct spsim_model *m = testutil_model_named("llama3-8b");
    p = cp_config(8, 2, SPSIM_CP_ALL_GATHER, 8192);
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, NULL), SPSIM_OK);
    spsim_model_destroy(m);
}
END_TEST

static Suite *
cp_suite(void)
{
    Suite *s = suite_create("cp");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, activations_divide_by_cp);
    tcase_add_test(tc, p2p_ring_bytes_and_exposure);
    tcase_add_test(tc, all_gather_and_a2a_bytes);
    tcase_add_test(tc, gradients_over_dp_cp);
    tcase_add_test(tc, megatron_rules);
    tcase_add_test(tc, cp_buffers_uneven_pipeline);
    tcase_add_test(tc, cp_with_block_recompute);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(cp_suite());
}
