/* The communication engine: the collectives of one layer (paper §4.2, the seed's f/g table,
 * Megatron's LinearWithGradAccumulationAndAsyncCommunication) and the iteration totals. */
#include <string.h>

#include "testutil.h"

/* paper-22b at the Table 4 setting: s = 2048, b = 4, h = 6144, t = 8. */
static const uint64_t S = 2048, B = 4, H = 6144, T = 8;
#define M    (B * S * H * 2)   /* seed eq. M_SP = b·s·h·dtype_size */
#define RING (M / T * (T - 1)) /* (t−1)/t · M per rank, AG or RS */

static void
run(bool sp, enum spsim_recompute rec, struct spsim_result *r)
{
    struct spsim_model *m = testutil_model_named("paper-22b");
    struct spsim_hardware *hw = testutil_hardware("dgx-a100-80g");
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = T;
    p.sp = sp;
    p.recompute = rec;
    p.mbs = B;
    p.gbs = 4 * B;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, &p, r, &err) == SPSIM_OK, "%s", err.message);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}

struct expect {
    enum spsim_phase phase;
    enum spsim_coll_op op;
    enum spsim_overlap overlap;
};

static void
check_list(const struct spsim_result *r, const struct expect *e, uint32_t n)
{
    ck_assert_uint_eq(r->comm.per_layer_count, n);
    for (uint32_t i = 0; i < n; i++) {
        const struct spsim_collective_entry *c = &r->comm.per_layer[i];
        ck_assert_msg(c->phase == e[i].phase && c->op == e[i].op && c->overlap == e[i].overlap,
                      "entry %u: %s %s beside %s", i, spsim_phase_name(c->phase),
                      spsim_coll_op_name(c->op), spsim_overlap_name(c->overlap));
        ck_assert_uint_eq(c->message_bytes, M);
        ck_assert_uint_eq(c->wire_bytes_per_rank, c->op == SPSIM_COLL_ALL_REDUCE ? 2 * RING : RING);
        ck_assert_uint_eq(c->group_size, T);
        ck_assert_int_eq(c->tier, SPSIM_TIER_NVLINK);
        ck_assert(c->time_s > 0 && c->exposed_s >= 0 && c->exposed_s <= c->time_s + 1e-15);
    }
}

START_TEST(tp_uses_four_allreduces)
{
    /* f/f̄: 2 AllReduce forward (after projection and FC2), 2 backward (before QKV and FC1),
     * the backward ones beside the wgrad GEMM. */
    static const struct expect e[] = {
        {SPSIM_PHASE_FORWARD, SPSIM_COLL_ALL_REDUCE, SPSIM_OVERLAP_NONE},
        {SPSIM_PHASE_FORWARD, SPSIM_COLL_ALL_REDUCE, SPSIM_OVERLAP_NONE},
        {SPSIM_PHASE_BACKWARD, SPSIM_COLL_ALL_REDUCE, SPSIM_OVERLAP_WGRAD},
        {SPSIM_PHASE_BACKWARD, SPSIM_COLL_ALL_REDUCE, SPSIM_OVERLAP_WGRAD},
    };
    struct spsim_result r;
    run(false, SPSIM_RECOMPUTE_NONE, &r);
    check_list(&r, e, 4);
}
END_TEST

START_TEST(sp_uses_gathers_and_scatters)
{
    /* g/ḡ: AG before QKV, RS after projection, AG before FC1, RS after FC2; backward: ḡ's AG of
     * the FC2 gradient, then FC1's re-gather (beside dgrad) and g's RS (beside wgrad), the same
     * for the attention block. */
    static const struct expect e[] = {
        {SPSIM_PHASE_FORWARD, SPSIM_COLL_ALL_GATHER, SPSIM_OVERLAP_NONE},
        {SPSIM_PHASE_FORWARD, SPSIM_COLL_REDUCE_SCATTER, SPSIM_OVERLAP_NONE},
        {SPSIM_PHASE_FORWARD, SPSIM_COLL_ALL_GATHER, SPSIM_OVERLAP_NONE},
        {SPSIM_PHASE_FORWARD, SPSIM_COLL_REDUCE_SCATTER, SPSIM_OVERLAP_NONE},
        {SPSIM_PHASE_BACKWARD, SPSIM_COLL_ALL_GATHER, SPSIM_OVERLAP_NONE},
        {SPSIM_PHASE_BACKWARD, SPSIM_COLL_ALL_GATHER, SPSIM_OVERLAP_DGRAD},
        {SPSIM_PHASE_BACKWARD, SPSIM_COLL_REDUCE_SCATTER, SPSIM_OVERLAP_WGRAD},
        {SPSIM_PHASE_BACKWARD, SPSIM_COLL_ALL_GATHER, SPSIM_OVERLAP_NONE},
        {SPSIM_PHASE_BACKWARD, SPSIM_COLL_ALL_GATHER, SPSIM_OVERLAP_DGRAD},
        {SPSIM_PHASE_BACKWARD, SPSIM_COLL_REDUCE_SCATTER, SPSIM_OVERLAP_WGRAD},
    };
    struct spsim_result r;
    run(true, SPSIM_RECOMPUTE_NONE, &r);
    check_list(&r, e, 10);
}
END_TEST

START_TEST(tp_and_sp_move_the_same_forward_bytes)
{
    /* Paper §4.2.2: "the communication bandwidth used for tensor parallelism and tensor
     * together with sequence parallelism are the same": 2 AR = 2 (AG + RS) = 4·(t−1)/t·M. */
    struct spsim_result tp, sp;
    run(false, SPSIM_RECOMPUTE_NONE, &tp);
    run(true, SPSIM_RECOMPUTE_NONE, &sp);
    ck_assert_uint_eq(tp.comm.tp_forward_wire_bytes_per_layer, 4 * RING);
    ck_assert_uint_eq(sp.comm.tp_forward_wire_bytes_per_layer, 4 * RING);
    /* Backward: the same plus SP's two weight-gradient re-gathers, (t−1)/t·M each. */
    ck_assert_uint_eq(tp.comm.tp_backward_wire_bytes_per_layer, 4 * RING);
    ck_assert_uint_eq(sp.comm.tp_backward_wire_bytes_per_layer, 6 * RING);
    ck_assert_uint_eq(sp.comm.tp_wgrad_gather_wire_bytes_per_layer, 2 * RING);
    ck_assert_uint_eq(tp.comm.tp_wgrad_gather_wire_bytes_per_layer, 0);
}
END_TEST

START_TEST(full_recompute_repeats_forward_collectives)
{
    struct spsim_result tp, sp, sel;
    run(false, SPSIM_RECOMPUTE_FULL, &tp);
    run(true, SPSIM_RECOMPUTE_FULL, &sp);
    run(true, SPSIM_RECOMPUTE_SELECTIVE, &sel);
    ck_assert_uint_eq(tp.comm.per_layer_count, 6);
    ck_assert_uint_eq(sp.comm.per_layer_count, 14);
    ck_assert_uint_eq(tp.comm.tp_recompute_wire_bytes_per_layer, 4 * RING);
    ck_assert_uint_eq(sp.comm.tp_recompute_wire_bytes_per_layer, 4 * RING);
    /* Selective recomputation replays core attention only: no collective. */
    ck_assert_uint_eq(sel.comm.tp_recompute_wire_bytes_per_layer, 0);
    ck_assert_uint_eq(sel.comm.per_layer_count, 10);
}
END_TEST

START_TEST(iteration_totals)
{
    /* L × per-layer × micro-batches (the TP-boundary count of the Megatron TP article:
     * L × 4 × num_microbatches AllReduces). */
    struct spsim_result r;
    run(false, SPSIM_RECOMPUTE_NONE, &r);
    uint64_t per_layer = 8 * RING; /* 4 AllReduces of 2(t−1)/t·M */
    ck_assert_uint_eq(r.comm.microbatches, 4);
    ck_assert_uint_eq(r.comm.tp_wire_bytes_per_microbatch, 48 * per_layer);
    ck_assert_uint_eq(r.comm.tp_wire_bytes_per_iteration, 4 * 48 * per_layer);
    ck_assert_uint_eq(r.comm.tp_wire_bytes_per_iteration_all_layers, 4 * 48 * per_layer);
    ck_assert_int_eq(r.comm.dp_tier, SPSIM_TIER_LOCAL);
    ck_assert_uint_eq(r.comm.pp_message_bytes, 0);
}
END_TEST

START_TEST(dp_and_pp_bytes)
{
    struct spsim_model *m = testutil_model_named("paper-175b");
    struct spsim_hardware *hw = testutil_hardware("dgx-a100-80g");
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 8;
    p.pp = 8;
    p.dp = 4;
    p.sp = true;
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    p.gbs = 64;
    struct spsim_result r;
    ck_assert_int_eq(spsim_evaluate(m, hw, &p, &r, NULL), SPSIM_OK);
    /* fp32 gradients of the most loaded stage, ring AllReduce 2(d−1)/d. */
    uint64_t g = 4 * r.memory.parameters_per_gpu;
    ck_assert_uint_eq(r.comm.dp_grad_bytes, g);
    ck_assert_uint_eq(r.comm.dp_wire_bytes_per_rank, 2 * (g / 4 * 3 + (g % 4) * 3 / 4));
    /* DP peers are t = 8 ranks apart: one per DGX, over the NICs. */
    ck_assert_int_eq(r.comm.dp_tier, SPSIM_TIER_NETWORK);
    /* PP: one send is s·b·h·2/t bytes; a middle stage sends forward and backward once per
     * micro-batch: 2 · 16 micro-batches · message. */
    uint64_t msg = 2048ull * 12288 * 2 / 8;
    ck_assert_uint_eq(r.comm.pp_message_bytes, msg);
    ck_assert_uint_eq(r.comm.pp_wire_bytes_per_rank, 2 * 16 * msg);
    ck_assert_int_eq(r.comm.pp_tier, SPSIM_TIER_NETWORK);
    /* Distributed optimizer: RS of fp32 gradients + AG of bf16 parameters, (d−1)/d each. */
    p.distributed_optimizer = true;
    ck_assert_int_eq(spsim_evaluate(m, hw, &p, &r, NULL), SPSIM_OK);
    uint64_t frac = g / 4 * 3 + (g % 4) * 3 / 4;
    ck_assert_uint_eq(r.comm.dp_wire_bytes_per_rank, frac + frac / 2);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(no_collectives_at_tp_1)
{
    struct spsim_model *m = testutil_model_named("llama3-8b");
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.dp = 8;
    p.gbs = 8;
    struct spsim_result r;
    ck_assert_int_eq(spsim_evaluate(m, hw, &p, &r, NULL), SPSIM_OK);
    ck_assert_uint_eq(r.comm.per_layer_count, 0);
    ck_assert_uint_eq(r.comm.tp_wire_bytes_per_iteration, 0);
    ck_assert_int_eq(r.comm.tp_tier, SPSIM_TIER_LOCAL);
    /* DP of 8 inside one DGX H100: NVLink. */
    ck_assert_int_eq(r.comm.dp_tier, SPSIM_TIER_NVLINK);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

static Suite *
comm_suite(void)
{
    Suite *s = suite_create("comm");
    TCase *tc = tcase_create("layer");
    tcase_add_test(tc, tp_uses_four_allreduces);
    tcase_add_test(tc, sp_uses_gathers_and_scatters);
    tcase_add_test(tc, tp_and_sp_move_the_same_forward_bytes);
    tcase_add_test(tc, full_recompute_repeats_forward_collectives);
    suite_add_tcase(s, tc);
    tc = tcase_create("iteration");
    tcase_add_test(tc, iteration_totals);
    tcase_add_test(tc, dp_and_pp_bytes);
    tcase_add_test(tc, no_collectives_at_tp_1);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(comm_suite());
}
