/* Helpers shared by the Check suites. */
#ifndef SPSIM_TESTUTIL_H
#define SPSIM_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spsim/spsim.h"

/** How a shell runs the spsim at `exe`: quoted, and under SPSIM_WRAPPER where the valgrind
 * test setup sets it (tests/valgrind.sh), so that memcheck sees the spsim the tests start. */
static inline const char *
testutil_spsim_command(const char *exe)
{
    static char buf[4096];
    const char *w = getenv("SPSIM_WRAPPER");
    snprintf(buf, sizeof(buf), "%s%s'%s'", w ? w : "", w ? " " : "", exe);
    return buf;
}

/** Run a suite; exit status for meson (0 ok, 1 failures). */
static inline int
testutil_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/** Run a suite in this process: CUDA and MPI do not survive fork() once initialised. */
static inline int
testutil_run_nofork(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/** The synthetic round-number profile of the hand-worked tests (tests/data/terms/terms-hw.json:
 * GEMM ceiling 100 TFLOP/s, 8 SMs, HBM 1 TB/s achieved, NVLink ring busbw 50 GB/s, no
 * latencies), loaded from SPSIM_DATA_DIR. */
static inline struct spsim_hardware *
testutil_terms_hw(void)
{
    char path[4096];
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    snprintf(path, sizeof(path), "%s/tests/data/terms/terms-hw.json", getenv("SPSIM_DATA_DIR"));
    ck_assert_msg(spsim_hardware_load(path, &hw, &err) == SPSIM_OK, "%s", err.message);
    return hw;
}

/** The step of a schedule with this phase, op name and pass (the test fails without one). */
static inline const struct spsim_schedule_step *
testutil_step(const struct spsim_schedule_step *st, size_t n, enum spsim_phase ph, const char *op,
              const char *pass)
{
    for (size_t i = 0; i < n; i++)
        if (st[i].phase == ph && strcmp(st[i].op, op) == 0 && strcmp(st[i].pass, pass) == 0)
            return &st[i];
    ck_abort_msg("no step '%s' %s", op, pass);
    return NULL;
}

/** The paper's GPT layer (Korthikanti et al. 2022 §3): GeLU MLP of 4h, LayerNorm, dropout,
 * standard attention, learned positions, biases, tied embeddings. */
static inline struct spsim_model_shape
testutil_gpt_shape(uint32_t layers, uint32_t hidden, uint32_t heads, uint32_t seq, uint32_t vocab)
{
    struct spsim_model_shape m = {
        .layers = layers,
        .hidden = hidden,
        .heads = heads,
        .kv_heads = heads,
        .head_dim = hidden / heads,
        .ffn_hidden = 4 * hidden,
        .vocab = vocab,
        .seq_len = seq,
        .mlp = SPSIM_MLP_GELU,
        .norm = SPSIM_NORM_LAYERNORM,
        .dropout = true,
        .attention = SPSIM_ATTENTION_STANDARD,
        .position = SPSIM_POSITION_LEARNED,
        .linear_bias = true,
        .tied_embeddings = true,
    };
    return m;
}

static inline struct spsim_model *
testutil_model(const struct spsim_model_shape *shape)
{
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    int rc = spsim_model_create(shape, "test", &m, &err);
    ck_assert_msg(rc == SPSIM_OK, "spsim_model_create: %s", err.message);
    return m;
}

/* The small MoE model the hand-worked MoE tests share (test_moe_terms, test_moe_aux,
 * test_moe_imbalance): 2 layers of h 1024, 8 heads of 128, SwiGLU FFN 4096, 128 experts of
 * width 128, top-8, every layer MoE. Fields after these (shared experts, aux losses) are the
 * tests' own. */
#define TESTUTIL_MOE_SHAPE                                                                         \
    .layers = 2, .hidden = 1024, .heads = 8, .kv_heads = 8, .head_dim = 128, .ffn_hidden = 4096,   \
    .vocab = 32768, .seq_len = 1024, .mlp = SPSIM_MLP_SWIGLU, .norm = SPSIM_NORM_RMSNORM,          \
    .attention = SPSIM_ATTENTION_FLASH, .position = SPSIM_POSITION_ROPE, .experts = 128,           \
    .experts_per_token = 8, .expert_ffn_hidden = 128, .moe_layer_freq = 1

/** A hardware profile with round numbers and no measured curves (test_time.c works its
 * collective formula by hand): GEMMs at 50 of 100 TFLOP/s (fp8 100 of 200, nvfp4 200 of
 * 400), 100 SMs, HBM 1000 GB/s achieved (spec 2000);
 * 8 GPUs and 8 NICs a node; NVLink ring busbw 200 GB/s, 5 µs + 1 µs a step, 10 channels;
 * network 10 µs + 3 µs a step at NIC_GBPS (a string literal) per NIC. */
#define TESTUTIL_SYNTHETIC_HW(NIC_GBPS)                                                            \
    "{\"schema\": \"spsim-hardware/1\", \"name\": \"synthetic\", \"gpu\": {\"model\": \"X\","      \
    " \"peak_dense_tflops\": {\"bf16\": {\"value\": 100, \"source\": \"t\"},"                      \
    " \"fp8\": {\"value\": 200, \"source\": \"t\"},"                                               \
    " \"nvfp4\": {\"value\": 400, \"source\": \"t\"}},"                                            \
    " \"gemm_achievable_tflops\": {\"bf16\": {\"value\": 50, \"source\": \"t\"},"                  \
    " \"fp8\": {\"value\": 100, \"source\": \"t\"},"                                               \
    " \"nvfp4\": {\"value\": 200, \"source\": \"t\"}},"                                            \
    " \"sm_count\": {\"value\": 100, \"source\": \"t\"},"                                          \
    " \"hbm_capacity_GB\": {\"value\": 80, \"source\": \"t\"},"                                    \
    " \"hbm_bandwidth_GBps\": {\"value\": 2000, \"source\": \"t\"},"                               \
    " \"hbm_achievable_GBps\": {\"value\": 1000, \"source\": \"t\"}},"                             \
    " \"node\": {\"gpus_per_node\": {\"value\": 8, \"source\": \"t\"},"                            \
    " \"nvlink_domain_gpus\": {\"value\": 8, \"source\": \"t\"},"                                  \
    " \"nics_per_node\": {\"value\": 8, \"source\": \"t\"}},"                                      \
    " \"nvlink\": {\"bandwidth_per_direction_GBps\": {\"value\": 300, \"source\": \"t\"},"         \
    " \"ring_busbw_GBps\": {\"value\": 200, \"source\": \"t\"},"                                   \
    " \"base_latency_us\": {\"value\": 5, \"source\": \"t\"},"                                     \
    " \"hop_latency_us\": {\"value\": 1, \"source\": \"t\"},"                                      \
    " \"nccl_channels\": {\"value\": 10, \"source\": \"t\"}},"                                     \
    " \"network\": {\"nic_line_rate_Gbit_s\": {\"value\": 400, \"source\": \"t\"},"                \
    " \"nic_achievable_GBps\": {\"value\": " NIC_GBPS ", \"source\": \"t\"},"                      \
    " \"base_latency_us\": {\"value\": 10, \"source\": \"t\"},"                                    \
    " \"hop_latency_us\": {\"value\": 3, \"source\": \"t\"},"                                      \
    " \"uplink_oversubscription\": {\"value\": 1, \"source\": \"t\"}}}"

/** A file of tests/data/megatron/ (at most 1 MiB), NUL-terminated; the caller frees it. */
static inline char *
testutil_megatron_data(const char *name, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/data/megatron/%s", getenv("SPSIM_DATA_DIR"), name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    char *buf = malloc(1 << 20);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

/** Load a shipped profile by name (the source tree's data directory). */
static inline struct spsim_hardware *
testutil_hardware(const char *name)
{
    char path[4096];
    struct spsim_error err = {0};
    struct spsim_hardware *hw = NULL;
    int rc = spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, name, path, sizeof(path), &err);
    if (rc == SPSIM_OK)
        rc = spsim_hardware_load(path, &hw, &err);
    ck_assert_msg(rc == SPSIM_OK, "%s: %s", name, err.message);
    return hw;
}

/** Whether the hardware profile at path is one only list and check read: it marks figures the
 * time model needs unsourced (spsim_hardware_load_listing), so no time can be asked of it. */
static inline bool
testutil_listing_only(const char *path)
{
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_hardware_load_listing(path, &hw, &err) == SPSIM_OK, "%s: %s", path,
                  err.message);
    struct spsim_hardware_info i;
    spsim_hardware_get_info(hw, &i);
    bool listing = i.unsourced_fields != NULL;
    spsim_hardware_destroy(hw);
    return listing;
}

/** A shipped hardware profile's text (static storage, replaced by the next call); its path
 * into `path`. */
static inline char *
testutil_hardware_file_text(const char *name, char *path, size_t cap)
{
    ck_assert_int_eq(spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, name, path, cap, NULL),
                     SPSIM_OK);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = 0;
    return text;
}

/** A model file (a profile or a Hugging Face config's folder) by its path in the tree. */
static inline struct spsim_model *
testutil_model_path(const char *rel)
{
    char path[4096];
    const char *root = getenv("SPSIM_DATA_DIR");
    snprintf(path, sizeof(path), "%s/%s", root ? root : ".", rel);
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_model_load(path, &m, &err) == SPSIM_OK, "%s: %s", rel, err.message);
    return m;
}

static inline struct spsim_model *
testutil_model_named(const char *name)
{
    char path[4096];
    struct spsim_error err = {0};
    struct spsim_model *m = NULL;
    int rc = spsim_profile_resolve(SPSIM_PROFILE_MODEL, name, path, sizeof(path), &err);
    if (rc == SPSIM_OK)
        rc = spsim_model_load(path, &m, &err);
    ck_assert_msg(rc == SPSIM_OK, "%s: %s", name, err.message);
    return m;
}

/** The defaults with tp, pp, vpp, mbs, gbs, sp and recompute set (dp 1). */
static inline struct spsim_parallel
testutil_config(uint32_t tp, uint32_t pp, uint32_t vpp, uint32_t mbs, uint64_t gbs, bool sp,
                enum spsim_recompute rec)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = tp;
    p.pp = pp;
    p.vpp = vpp;
    p.mbs = mbs;
    p.gbs = gbs;
    p.sp = sp;
    p.recompute = rec;
    return p;
}

/** Evaluate a shipped model on a shipped hardware profile at tp, pp, vpp, mbs, gbs (dp 1). */
static inline struct spsim_result
testutil_evaluate(const char *model, const char *hw_name, uint32_t tp, uint32_t pp, uint32_t vpp,
                  uint32_t mbs, uint64_t gbs, bool sp, enum spsim_recompute rec)
{
    struct spsim_model *m = testutil_model_named(model);
    struct spsim_hardware *hw = testutil_hardware(hw_name);
    struct spsim_parallel p = testutil_config(tp, pp, vpp, mbs, gbs, sp, rec);
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s: %s", model, err.message);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
    return r;
}

/** Evaluate a shipped model on `hw` (freed here). */
static inline struct spsim_result
testutil_evaluate_on(const char *model, struct spsim_hardware *hw, const struct spsim_parallel *p)
{
    struct spsim_model *m = testutil_model_named(model);
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, p, &r, &err) == SPSIM_OK, "%s: %s", model, err.message);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
    return r;
}

/** Evaluate a configuration of a shipped model on a shipped hardware profile. */
static inline struct spsim_result
testutil_evaluate_config(const char *model, const char *hw_name, const struct spsim_parallel *p)
{
    return testutil_evaluate_on(model, testutil_hardware(hw_name), p);
}

/** A configuration of a shipped model that Megatron's rules refuse with `text` in the message. */
static inline void
testutil_expect_rule(const char *model, const struct spsim_parallel *p, const char *text)
{
    struct spsim_model *m = testutil_model_named(model);
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_parallel_check(m, NULL, p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, text), "'%s' lacks '%s'", err.message, text);
    spsim_model_destroy(m);
}

/** TESTUTIL_SYNTHETIC_HW with 40 GB/s NICs, for the formulas by hand. */
static const char testutil_synthetic_hw[] = TESTUTIL_SYNTHETIC_HW("40");

/** A hardware profile from its JSON text, which must parse. */
static inline struct spsim_hardware *
testutil_hardware_text(const char *text)
{
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_hardware_parse(text, strlen(text), "synthetic", &hw, &err) == SPSIM_OK,
                  "%s", err.message);
    return hw;
}

/** Parse the synthetic profile with `extra` (JSON members and a trailing comma) added to its
 * gpu section. */
static inline int
testutil_parse_synthetic(const char *extra, struct spsim_hardware **hw, struct spsim_error *err)
{
    static const char at[] = "\"model\": \"X\",";
    const char *cut = strstr(testutil_synthetic_hw, at) + strlen(at);
    char text[sizeof(testutil_synthetic_hw) + 512];
    snprintf(text, sizeof(text), "%.*s %s %s", (int)(cut - testutil_synthetic_hw),
             testutil_synthetic_hw, extra, cut);
    return spsim_hardware_parse(text, strlen(text), "synthetic", hw, err);
}

/** The synthetic profile with `extra`, which must parse. */
static inline struct spsim_hardware *
testutil_synthetic(const char *extra)
{
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(testutil_parse_synthetic(extra, &hw, &err) == SPSIM_OK, "%s", err.message);
    return hw;
}

/** The synthetic profile with `extra` must be refused (SPSIM_EFIELD), the message holding
 * `needle`. */
static inline void
testutil_synthetic_refused(const char *extra, const char *needle)
{
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(testutil_parse_synthetic(extra, &hw, &err), SPSIM_EFIELD);
    ck_assert_msg(strstr(err.message, needle), "%s: %s", extra, err.message);
    ck_assert_ptr_null(hw);
}

#endif
