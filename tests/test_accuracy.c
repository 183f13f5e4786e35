/*
 * Predicted times against the measurements of Korthikanti et al. 2022 on Selene (DGX A100
 * 80GB, 8× HDR per node), using the shipped dgx-a100-80g profile, whose numbers all come from
 * hardware-facts.md (nothing here is fitted to these figures).
 */
#include <math.h>
#include <stdio.h>

#include "testutil.h"

/* §6: "All models use tensor parallel size 8"; Selene = DGX A100 80GB. The 2022 runs sent
 * between pipeline stages blocking: Megatron-LM gained overlap_p2p_comm on 2023-05-31 (commit
 * f9283c5a8a, "Add option to overlap p2p communication"). */
static struct spsim_result
evaluate(const char *model, uint32_t pp, uint32_t vpp, uint32_t mbs, uint64_t gbs, bool sp,
         enum spsim_recompute rec)
{
    struct spsim_parallel p = testutil_config(8, pp, vpp, mbs, gbs, sp, rec);
    p.no_overlap_p2p = true;
    return testutil_evaluate_config(model, "dgx-a100-80g", &p);
}

/* Table 4: one layer of the 22B model, s = 2048, b = 4 (Table 3), forward and backward (ms). */
static const struct {
    const char *name;
    bool sp;
    enum spsim_recompute rec;
    double fwd_ms, bwd_ms;
} table4[] = {
    {"baseline no recompute", false, SPSIM_RECOMPUTE_NONE, 7.7, 11.9},
    {"sequence parallelism", true, SPSIM_RECOMPUTE_NONE, 7.2, 11.8},
    {"baseline with recompute", false, SPSIM_RECOMPUTE_FULL, 7.7, 19.5},
    {"selective recompute", false, SPSIM_RECOMPUTE_SELECTIVE, 7.7, 13.2},
    {"selective + sequence", true, SPSIM_RECOMPUTE_SELECTIVE, 7.2, 13.1},
};

START_TEST(table4_within_10_percent_and_ordered)
{
    double fwd[5], bwd[5];
    for (int i = 0; i < 5; i++) {
        struct spsim_result r = evaluate("paper-22b", 1, 1, 4, 4, table4[i].sp, table4[i].rec);
        fwd[i] = r.time.layer_forward_s * 1e3;
        bwd[i] = r.time.layer_backward_s * 1e3;
        double ef = fwd[i] / table4[i].fwd_ms - 1, eb = bwd[i] / table4[i].bwd_ms - 1;
        printf("table 4, %-24s forward %.2f ms (paper %.1f, %+.1f%%), backward %.2f ms (paper "
               "%.1f, %+.1f%%)\n",
               table4[i].name, fwd[i], table4[i].fwd_ms, 100 * ef, bwd[i], table4[i].bwd_ms,
               100 * eb);
        ck_assert_msg(fabs(ef) <= 0.10 && fabs(eb) <= 0.10, "%s off by more than 10%%",
                      table4[i].name);
    }
    /* The paper's ordering. Forward: SP rows (7.2) below the others (7.7), which are equal.
     * Backward: SP 11.8 < baseline 11.9 < selective+SP 13.1 < selective 13.2 < full 19.5. */
    ck_assert(fwd[1] < fwd[0] && fwd[4] < fwd[0]);
    ck_assert_double_eq_tol(fwd[0], fwd[2], 1e-9);
    ck_assert_double_eq_tol(fwd[0], fwd[3], 1e-9);
    ck_assert(bwd[1] < bwd[0] && bwd[0] < bwd[4] && bwd[4] < bwd[3] && bwd[3] < bwd[2]);
}
END_TEST

START_TEST(table5_530b)
{
    /* Table 5: 530B, tp 8, pp 35, three interleaving stages (§6), 280 GPUs, batch 280,
     * micro-batch 1 (Table 3), no data parallelism. */
    struct spsim_result full = evaluate("paper-530b", 35, 3, 1, 280, false, SPSIM_RECOMPUTE_FULL);
    struct spsim_result sel =
        evaluate("paper-530b", 35, 3, 1, 280, true, SPSIM_RECOMPUTE_SELECTIVE);
    double ef = full.time.iteration_s / 49.05 - 1, es = sel.time.iteration_s / 37.83 - 1;
    /* Table 5's MFU and HFU of the SP + selective run, 56.0% and 57.0% (§6.3, after PaLM:
     * model, resp. hardware, FLOPs per second over the GPUs' 312 TFLOP/s bf16 peak). MFU's
     * model FLOPs are Korthikanti et al. 2022 Appendix A Eq. 7, 72·B·L·s·h²·(1 + s/(6h) +
     * v/(12hL)) (time.model_flops, test_time.c). The paper's HFU is its Eq. 8,
     * 72·B·L·s·h²·(1 + s/(3h) + v/(12hL)): 57.0/56.0 = 1.018 is Eq. 9's 1 + s/(6h) = 1.017,
     * not the 1.005 of the recomputation its Appendix A text describes (4·B·s²·h per layer),
     * which is what spsim executes and reports as time.hfu. So HFU is checked as Eq. 8 over
     * spsim's iteration time, and time.hfu is printed beside it. */
    double B = 280, L = 105, s = 2048, h = 20480, v = 51200;
    double eq8 = 72 * B * L * s * h * h * (1 + s / (3 * h) + v / (12 * h * L));
    double hfu_eq8 = eq8 / (sel.time.iteration_s * 280 * 312e12);
    printf("table 5, full recompute: %.2f s (paper 49.05, %+.1f%%); SP + selective: %.2f s "
           "(paper 37.83, %+.1f%%); MFU (Eq. 7) %.1f%% (paper 56.0), HFU (Eq. 8) %.1f%% (paper "
           "57.0; executed FLOPs %.1f%%)\n",
           full.time.iteration_s, 100 * ef, sel.time.iteration_s, 100 * es, 100 * sel.time.mfu,
           100 * hfu_eq8, 100 * sel.time.hfu);
    ck_assert_msg(fabs(ef) <= 0.05, "full recompute off by %.1f%%", 100 * ef);
    ck_assert_msg(fabs(es) <= 0.05, "SP + selective off by %.1f%%", 100 * es);
    ck_assert_msg(fabs(sel.time.mfu / 0.560 - 1) <= 0.05, "MFU (Eq. 7) %.1f%%", 100 * sel.time.mfu);
    ck_assert_msg(fabs(hfu_eq8 / 0.570 - 1) <= 0.05, "HFU (Eq. 8) %.1f%%", 100 * hfu_eq8);
    /* Selective + SP must be the faster of the two. */
    ck_assert(sel.time.iteration_s < full.time.iteration_s);
}
END_TEST

START_TEST(megatron_readme_mfu)
{
    /* MFU measured with data-parallel size 1 (Megatron-LM README table quoting Korthikanti et
     * al.; hardware-facts.md §2): 22B 41.5%, 175B 51.4%, 530B 56.0%, 1T 56.3%, the paper's
     * definition (§6.3): Korthikanti et al. 2022 Appendix A Eq. 7 model FLOPs per second over
     * 312 TFLOP/s per GPU, which time.mfu is. Settings from Table 3 and §6 (SP + selective;
     * vpp 3 for 175B and 530B). None of them was used to build the model; 22B is the worst
     * (+9%, see README "Accuracy"). */
    static const struct {
        const char *model;
        uint32_t pp, vpp, mbs;
        uint64_t gbs;
        double mfu;
    } rows[] = {{"paper-22b", 1, 1, 4, 4, 0.415},
                {"paper-175b", 8, 3, 1, 64, 0.514},
                {"paper-530b", 35, 3, 1, 280, 0.560},
                {"paper-1t", 64, 1, 1, 512, 0.563}};
    for (size_t i = 0; i < 4; i++) {
        struct spsim_result r = evaluate(rows[i].model, rows[i].pp, rows[i].vpp, rows[i].mbs,
                                         rows[i].gbs, true, SPSIM_RECOMPUTE_SELECTIVE);
        double e = r.time.mfu / rows[i].mfu - 1;
        printf("MFU (Eq. 7) %-11s %.1f%% (measured %.1f%%, %+.1f%%)\n", rows[i].model,
               100 * r.time.mfu, 100 * rows[i].mfu, 100 * e);
        ck_assert_msg(fabs(e) <= 0.10, "%s: MFU (Eq. 7) off by %.1f%%", rows[i].model, 100 * e);
    }
}
END_TEST

static Suite *
accuracy_suite(void)
{
    Suite *s = suite_create("accuracy");
    TCase *tc = tcase_create("paper");
    tcase_add_test(tc, table4_within_10_percent_and_ordered);
    tcase_add_test(tc, table5_530b);
    tcase_add_test(tc, megatron_readme_mfu);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(accuracy_suite());
}
