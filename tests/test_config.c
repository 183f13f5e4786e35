/* Megatron-LM's configuration rules (paper-and-megatron-facts.md §11) and spsim's own limits. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static struct spsim_model *model175;

static void
setup(void)
{
    struct spsim_model_shape s = testutil_gpt_shape(96, 12288, 96, 2048, 51200);
    model175 = testutil_model(&s);
}

static void
teardown(void)
{
    spsim_model_destroy(model175);
}

struct rule_case {
    const char *name;
    void (*edit)(struct spsim_parallel *p);
    const char *message; /* a fragment the error must contain */
};

/* clang-format off */
static void sp_without_tp(struct spsim_parallel *p) { p->tp = 1; p->sp = true; }
static void heads_not_divisible(struct spsim_parallel *p) { p->tp = 5; }
static void layers_not_divisible(struct spsim_parallel *p) { p->pp = 5; }
static void layers_not_divisible_vpp(struct spsim_parallel *p) { p->pp = 8; p->vpp = 5; p->gbs = 64; }
static void gbs_not_divisible(struct spsim_parallel *p) { p->mbs = 2; p->dp = 2; p->gbs = 10; }
static void vpp_without_pp(struct spsim_parallel *p) { p->vpp = 2; }
static void micro_not_multiple_of_pp(struct spsim_parallel *p) { p->pp = 8; p->vpp = 2; p->gbs = 12; }
static void group_below_pp(struct spsim_parallel *p) { p->pp = 8; p->vpp = 2; p->gbs = 16; p->microbatch_group = 6; }
static void last_group_below_pp(struct spsim_parallel *p) { p->pp = 8; p->vpp = 2; p->gbs = 20; p->microbatch_group = 9; }
static void ep_tp_without_sp(struct spsim_parallel *p) { p->tp = 8; p->ep = 2; }
static void ep_dense_model(struct spsim_parallel *p) { p->tp = 8; p->sp = true; p->ep = 2; }
static void seq_beyond_positions(struct spsim_parallel *p) { p->seq = 4096; }
static void sp_seq_not_divisible(struct spsim_parallel *p) { p->tp = 8; p->sp = true; p->seq = 2044; }
static void zero_tp(struct spsim_parallel *p) { p->tp = 0; }
static void absurd_gbs(struct spsim_parallel *p) { p->gbs = 1ull << 40; }
static void bad_recompute(struct spsim_parallel *p) { p->recompute = (enum spsim_recompute)7; }
static void bad_flash(struct spsim_parallel *p) { p->flash_attn = 2; }
static void too_many_gpus(struct spsim_parallel *p) { p->tp = 4096; p->pp = 4096; p->dp = 4096; }
/* clang-format on */

static const struct rule_case rules[] = {
    /* megatron/core/model_parallel_config.py, verbatim */
    {"sp_without_tp", sp_without_tp, "Cannot use sequence parallelism without tensor parallelism"},
    {"heads", heads_not_divisible, "attention heads are not divisible by tp = 5"},
    {"layers_pp", layers_not_divisible, "96 layers are not divisible by pp·vpp"},
    {"layers_pp_vpp", layers_not_divisible_vpp, "not divisible by pp·vpp = 8·5"},
    {"gbs", gbs_not_divisible, "not divisible by micro-batch size × dp"},
    {"vpp_pp1", vpp_without_pp, "needs pp >= 2"},
    /* megatron/core/pipeline_parallel/schedules.py (interleaved, d98e8a64), verbatim: with the
     * default group of pp micro-batches, M mod pp = 12 mod 8 = 4 < pp */
    {"interleaved_micro", micro_not_multiple_of_pp,
     "should be 0, or larger than or equal to the pipeline-parallel size, but it is 4 (M = 12, "
     "N = 8, pp = 8)"},
    /* N = 6 < pp = 8 */
    {"interleaved_group", group_below_pp,
     "a virtual pipeline stageshould range in [PP=8 , M=16] (it is 6)"},
    /* M = 20, N = 9: 20 mod 9 = 2 < pp */
    {"interleaved_last_group", last_group_below_pp, "but it is 2 (M = 20, N = 9, pp = 8)"},
    /* model_parallel_config.py (2023-10 .. 2025-08 error, now a warning; moe_layer.py still
     * refuses at run time) */
    {"ep_tp_no_sp", ep_tp_without_sp,
     "When using expert parallelism and tensor parallelism, sequence parallelism must be used"},
    {"ep_dense", ep_dense_model, "needs a mixture-of-experts model"},
    {"seq_positions", seq_beyond_positions, "learned position embeddings"},
    {"sp_seq", sp_seq_not_divisible, "seq = 2044 is not divisible"},
    {"tp_zero", zero_tp, "field 'tp': must be an integer in [1, 65536], got 0"},
    {"gbs_absurd", absurd_gbs, "field 'gbs'"},
    {"recompute_enum", bad_recompute, "field 'recompute'"},
    {"flash_enum", bad_flash, "field 'flash_attn'"},
    {"gpus", too_many_gpus, "GPUs is more than"},
};

START_TEST(rule_is_refused_with_its_message)
{
    const struct rule_case *c = &rules[_i];
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    c->edit(&p);
    struct spsim_error err = {0};
    uint32_t warnings = 0xdead;
    ck_assert_int_eq(spsim_parallel_check(model175, NULL, &p, &warnings, &err), SPSIM_ECONFIG);
    ck_assert_int_eq(err.code, SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, c->message), "%s: '%s' does not contain '%s'", c->name,
                  err.message, c->message);
    ck_assert_uint_eq(warnings, 0xdead); /* untouched on failure */
    /* evaluate refuses the same way and leaves the result untouched */
    struct spsim_result r;
    memset(&r, 0x5a, sizeof(r));
    ck_assert_int_eq(spsim_evaluate(model175, NULL, &p, &r, NULL), SPSIM_ECONFIG);
    ck_assert_uint_eq(r.gpus, 0x5a5a5a5a);
}
END_TEST

START_TEST(kv_heads_must_divide)
{
    /* Llama-2-70B: 8 KV heads; tp = 16 divides the 64 query heads but not the 8 KV heads. */
    struct spsim_model *m = testutil_model_named("llama2-70b");
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 16;
    p.sp = true;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "8 key/value heads"));
    spsim_model_destroy(m);
}
END_TEST

START_TEST(paper_settings_are_valid)
{
    /* Table 3 with §6: every row is a valid configuration. */
    static const struct {
        const char *model;
        uint32_t tp, pp, vpp, mbs;
        uint64_t gbs;
    } rows[] = {{"paper-22b", 8, 1, 1, 4, 4},
                {"paper-175b", 8, 8, 3, 1, 64},
                {"paper-530b", 8, 35, 3, 1, 280},
                {"paper-1t", 8, 64, 1, 1, 512}};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct spsim_model *m = testutil_model_named(rows[i].model);
        struct spsim_parallel p;
        spsim_parallel_defaults(&p);
        p.tp = rows[i].tp;
        p.pp = rows[i].pp;
        p.vpp = rows[i].vpp;
        p.mbs = rows[i].mbs;
        p.gbs = rows[i].gbs;
        p.sp = true;
        p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
        struct spsim_error err = {0};
        ck_assert_msg(spsim_parallel_check(m, NULL, &p, NULL, &err) == SPSIM_OK, "%s: %s",
                      rows[i].model, err.message);
        spsim_model_destroy(m);
    }
}
END_TEST

START_TEST(tp_beyond_nvlink_domain_warns)
{
    struct spsim_model *m = testutil_model_named("paper-1t");
    struct spsim_hardware *hw = testutil_hardware("dgx-a100-80g");
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 16;
    p.sp = true;
    p.pp = 8;
    p.gbs = 8;
    uint32_t w = 0;
    ck_assert_int_eq(spsim_parallel_check(m, hw, &p, &w, NULL), SPSIM_OK);
    ck_assert(w & SPSIM_WARN_TP_SPANS_DOMAIN);
    ck_assert_str_ne(spsim_warning_text(SPSIM_WARN_TP_SPANS_DOMAIN), "");
    /* It still evaluates, with its TP collectives on the hierarchical tier. */
    struct spsim_result r;
    ck_assert_int_eq(spsim_evaluate(m, hw, &p, &r, NULL), SPSIM_OK);
    ck_assert_int_eq(r.comm.tp_tier, SPSIM_TIER_HIERARCHICAL);
    ck_assert(r.warnings & SPSIM_WARN_TP_SPANS_DOMAIN);
    /* Inside the domain: no warning, NVLink. */
    p.tp = 8;
    ck_assert_int_eq(spsim_evaluate(m, hw, &p, &r, NULL), SPSIM_OK);
    ck_assert_uint_eq(r.warnings & SPSIM_WARN_TP_SPANS_DOMAIN, 0);
    ck_assert_int_eq(r.comm.tp_tier, SPSIM_TIER_NVLINK);
    /* pp = 8 with 8 micro-batches: full pipeline; 4 would warn. */
    p.gbs = 4;
    ck_assert_int_eq(spsim_parallel_check(m, hw, &p, &w, NULL), SPSIM_OK);
    ck_assert(w & SPSIM_WARN_FEW_MICROBATCHES);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(dtype_needs_a_peak)
{
    /* A100 has no FP8 units ([ML-ACC]: "X"). */
    struct spsim_hardware *hw = testutil_hardware("dgx-a100-80g");
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.dtype = SPSIM_DTYPE_FP8;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_parallel_check(model175, hw, &p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "no fp8 peak"));
    spsim_hardware_destroy(hw);
}
END_TEST

/* MPI launch detection, shared by the GPU module and `spsim sweep`: the variables Open MPI's
 * mpirun, MPICH's Hydra (PMI) and PMIx launchers export. */
START_TEST(mpi_launch_detection)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"};
    for (size_t i = 0; i < 3; i++)
        unsetenv(vars[i]);
    uint32_t n = 7;
    ck_assert(!spsim_mpi_launched(&n));
    ck_assert_uint_eq(n, 0);
    setenv("OMPI_COMM_WORLD_SIZE", "16", 1);
    ck_assert(spsim_mpi_launched(&n));
    ck_assert_uint_eq(n, 16);
    unsetenv("OMPI_COMM_WORLD_SIZE");
    setenv("PMI_SIZE", "4", 1);
    ck_assert(spsim_mpi_launched(&n));
    ck_assert_uint_eq(n, 4);
    unsetenv("PMI_SIZE");
    setenv("PMIX_RANK", "0", 1);
    ck_assert(spsim_mpi_launched(NULL));
    ck_assert(spsim_mpi_launched(&n));
    ck_assert_uint_eq(n, 0); /* PMIx does not say */
    unsetenv("PMIX_RANK");
}
END_TEST

static Suite *
config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("rules");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, rule_is_refused_with_its_message, 0, sizeof(rules) / sizeof(rules[0]));
    tcase_add_test(tc, kv_heads_must_divide);
    tcase_add_test(tc, paper_settings_are_valid);
    tcase_add_test(tc, tp_beyond_nvlink_domain_warns);
    tcase_add_test(tc, dtype_needs_a_peak);
    tcase_add_test(tc, mpi_launch_detection);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(config_suite());
}
