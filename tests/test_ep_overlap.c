/*
 * Expert-parallel communication: the token exchanges' bytes over the stage that runs the most
 * MoE layers, against closed forms worked by hand (Megatron-Core token_dispatcher.py and
 * nccl-tests' alltoall size convention, as tests/test_moe.c).
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
    struct spsim_result r = testutil_evaluate_config("deepseek-v3", "dgx-h100", &p);
    ck_assert_uint_eq(r.comm.ep_forward_wire_bytes_per_layer, 880926720ull);
    ck_assert_uint_eq(r.comm.ep_backward_wire_bytes_per_layer, 880926720ull);
    ck_assert_uint_eq(r.comm.ep_wire_bytes_per_iteration, 5ull * 2 * 880926720ull * 8);
    /* The time terms count the same stage: it is the critical one. */
    ck_assert_uint_eq(r.time.critical_stage, 15);
}
END_TEST

static Suite *
ep_overlap_suite(void)
{
    Suite *s = suite_create("ep_overlap");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, ep_bytes_of_the_busiest_stage);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(ep_overlap_suite());
}
