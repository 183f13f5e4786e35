/*
 * Host-side kernel launches and CUDA graphs (engine/host.c), worked by hand on the
 * hand-worked terms profile (tests/data/terms/, test_terms.c) with a host.kernel_launch_us
 * added. The kernel counts below are read off the GPT layer's op list at tp 1 (LayerNorm,
 * GeLU, dropout, flash attention, no biases, no recomputation: `spsim explain` lists the same
 * steps), one kernel per pass of each row:
 *   forward  10: LayerNorm 1, QKV, flash attention, projection, dropout-add | LayerNorm 2, FC1,
 *                GeLU, FC2, dropout-add (the attention module is the first five);
 *   backward 14: dropout-add, FC2 dgrad + wgrad, GeLU, FC1 dgrad + wgrad, LayerNorm 2 |
 *                dropout-add, projection dgrad + wgrad, flash attention, QKV dgrad + wgrad,
 *                LayerNorm 1 (the MLP module is the first seven).
 * At tp 2 with SP each TP collective is one more launch (test below).
 * The backward also runs each parameter tensor's DDP hook (engine/mb_host.c): the layer's 8
 * tensors (two LayerNorms' weight and bias, QKV, projection, FC1, FC2), one torch call each,
 * and for the 4 whose gradient TE's linears do not accumulate into main_grad (the LayerNorms')
 * main_grad.add_: 2 calls and a kernel: 16 calls, 4 launches more, 18 in all.
 * At 1 ms a launch every block is host-bound (one layer's GPU forward is 0.34 ms on this
 * profile), so a layer's phase takes launches × 1 ms whatever the GPU model says; at 0.1 µs
 * none is, and the host adds only what follows the loss checks' wait (see below).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define EQ(got, want) ck_assert_double_eq_tol((got), (want), 1e-9 * fabs((double)(want)) + 1e-15)

/* An FP8 peak for terms-hw.json (it has none): launches do not depend on the rate. */
static const char *fp8_peak = NULL;
#define FP8_PEAK "\"fp8\": {\"value\": 200, \"source\": \"test: any FP8 rate\"}, "

/* Parse terms-hw.json with `host` (a JSON member, without a trailing comma) added, and
 * fp8_peak inside its peak_dense_tflops; NULL: as is. */
static int
host_parse(const char *host, struct spsim_hardware **hw, struct spsim_error *err)
{
    char path[4096], *text = malloc(1 << 16);
    snprintf(path, sizeof(path), "%s/tests/data/terms/terms-hw.json", getenv("SPSIM_DATA_DIR"));
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(text);
    size_t n = fread(text, 1, (1 << 16) - 1024, f);
    fclose(f);
    text[n] = '\0';
    if (fp8_peak) {
        char *peaks = strstr(text, "\"peak_dense_tflops\": {");
        ck_assert_ptr_nonnull(peaks);
        peaks += strlen("\"peak_dense_tflops\": {");
        memmove(peaks + strlen(fp8_peak), peaks, strlen(peaks) + 1);
        memcpy(peaks, fp8_peak, strlen(fp8_peak));
    }
    if (host) {
        char *brace = strchr(text, '{');
        size_t add = strlen(host) + 2;
        memmove(brace + 1 + add, brace + 1, strlen(brace + 1) + 1);
        memcpy(brace + 1, host, add - 2);
        memcpy(brace + 1 + add - 2, ", ", 2);
    }
    int rc = spsim_hardware_parse(text, strlen(text), "terms-hw+host", hw, err);
    free(text);
    return rc;
}

static struct spsim_hardware *
host_hw(const char *host)
{
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(host_parse(host, &hw, &err) == SPSIM_OK, "%s", err.message);
    return hw;
}

#define LAUNCH_1MS "\"host\": {\"kernel_launch_us\": {\"value\": 1000, \"source\": \"test\"}}"

static struct spsim_parallel
layer_config(enum spsim_cuda_graph_impl impl, uint32_t scope)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.mbs = 1;
    p.gbs = 2;
    p.cuda_graph_impl = impl;
    p.cuda_graph_scope = scope;
    return p;
}

/* Evaluate the model file `model` (relative to the source tree) on terms-hw.json + `host`. */
static struct spsim_result
run_on(const char *model, const char *host, const struct spsim_parallel *p)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", getenv("SPSIM_DATA_DIR"), model);
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_model_load(path, &m, &err) == SPSIM_OK, "%s", err.message);
    struct spsim_hardware *hw = host_hw(host);
    struct spsim_result r;
    ck_assert_msg(spsim_evaluate(m, hw, p, &r, &err) == SPSIM_OK, "%s", err.message);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
    return r;
}

static struct spsim_result
run(const char *host, const struct spsim_parallel *p)
{
    return run_on("tests/data/terms/terms-model.json", host, p);
}

/* The iteration is its breakdown, the host-bound line included. */
static void
assert_breakdown(const struct spsim_time_report *t)
{
    double sum = t->forward_s + t->backward_s + t->recompute_s + t->tp_exposed_s + t->cp_exposed_s +
                 t->pp_bubble_s + t->pp_p2p_s + t->dp_exposed_s + t->tied_embedding_allreduce_s +
                 t->optimizer_s + t->offload_exposed_s + t->ep_exposed_s + t->host_exposed_s +
                 t->optimizer_host_exposed_s + t->moe_aux_allreduce_s +
                 t->moe_expert_bias_allreduce_s + t->log_host_s;
    EQ(t->iteration_s, sum);
}

START_TEST(eager_layer_is_host_bound)
{
    struct spsim_parallel p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    struct spsim_result r = run(LAUNCH_1MS, &p), gpu = run(NULL, &p);
    const struct spsim_time_report *t = &r.time;
    ck_assert_uint_eq(t->layer_forward_launches, 10);
    ck_assert_uint_eq(t->layer_backward_launches, 18);
    EQ(t->kernel_launch_us, 1000);
    EQ(t->layer_forward_s, 10 * 1e-3);
    EQ(t->layer_backward_s, 18 * 1e-3);
    /* Without the figure the same counts, no host term. */
    ck_assert_uint_eq(gpu.time.layer_forward_launches, 10);
    EQ(gpu.time.kernel_launch_us, 0);
    EQ(gpu.time.host_exposed_s, 0);
    ck_assert(gpu.time.layer_forward_s < 1e-3);
    /* Per micro-batch the 8 layers' host excess over their GPU time, twice (2 micro-batches),
     * plus the embedding's and the output layer's (host-bound too): at least the layers'. */
    double layers = 2 * 8 * (28e-3 - gpu.time.layer_forward_s - gpu.time.layer_backward_s);
    ck_assert(t->host_exposed_s >= layers * (1 - 1e-12));
    /* embedding + output: < 20 launches of their schedules, 28 of get_batch, loss_func and
     * their hooks (mb_host.c) */
    ck_assert(t->host_exposed_s <= layers + 2 * 48e-3);
    EQ(t->iteration_s - t->host_exposed_s - t->optimizer_host_exposed_s - t->log_host_s -
           t->pp_p2p_host_s,
       gpu.time.iteration_s);
    assert_breakdown(t);
}
END_TEST

START_TEST(tp_collectives_are_launches)
{
    /* tp 2 with SP: forward adds the four boundary collectives (g before QKV and FC1, ḡ after
     * the projection and FC2): 14. Backward adds ḡ's two AllGathers as their own steps and,
     * beside QKV's and FC1's dgrad and wgrad, the weight-gradient re-gather and g's
     * ReduceScatter: 14 + 2 + 4 = 20, and the 4 hooks' add_: 24. */
    struct spsim_parallel p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    p.tp = 2;
    p.sp = true;
    struct spsim_result r = run(LAUNCH_1MS, &p);
    ck_assert_uint_eq(r.time.layer_forward_launches, 14);
    ck_assert_uint_eq(r.time.layer_backward_launches, 24);
    EQ(r.time.layer_forward_s, 14e-3);
    EQ(r.time.layer_backward_s, 24e-3);
    assert_breakdown(&r.time);
}
END_TEST

/* FP8 (issue 23: every host test was BF16, so a GEMM pass's cast kernel could go uncounted):
 * a GEMM pass but the wgrad launches TE's cast of its input (forward) or of its output gradient
 * (dgrad) before the matmul, the wgrads reusing the dgrad's columnwise copies. After a norm
 * (TE LayerNormLinear: QKV, FC1) delayed scaling writes the norm's output in FP8 from the norm
 * kernel itself (normalization.cpp), so only the projection's and FC2's inputs are cast
 * forward: 10 + 2 = 12; current scaling and MXFP8 norm in high precision and quantize after it:
 * 10 + 4 = 14. Backward, every recipe casts the 4 dgrads' dY unfused: 14 + 4 = 18, and the 4
 * hooks' add_: 22. */
START_TEST(fp8_casts_are_launches)
{
    static const struct {
        enum spsim_fp8_recipe recipe;
        uint32_t fwd;
    } cases[] = {{SPSIM_FP8_DELAYED, 12}, {SPSIM_FP8_CURRENT, 14}, {SPSIM_FP8_MXFP8, 14}};
    fp8_peak = FP8_PEAK;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct spsim_parallel p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
        p.dtype = SPSIM_DTYPE_FP8;
        p.fp8_recipe = cases[i].recipe;
        struct spsim_result r = run(LAUNCH_1MS, &p);
        ck_assert_uint_eq(r.time.layer_forward_launches, cases[i].fwd);
        ck_assert_uint_eq(r.time.layer_backward_launches, 22);
        EQ(r.time.layer_forward_s, cases[i].fwd * 1e-3);
        EQ(r.time.layer_backward_s, 22e-3);
        assert_breakdown(&r.time);
    }
    fp8_peak = NULL;
}
END_TEST

START_TEST(graph_scopes_replace_launches)
{
    /* attn captured: its five forward kernels are one replay, the MLP's five stay; backward
     * the MLP's seven and one replay, and the DDP hooks' 4 add_, which run eager (autograd's
     * AccumulateGrad after the graph's backward). */
    struct spsim_parallel p = layer_config(SPSIM_CUDA_GRAPH_TE, SPSIM_CGS_ATTN);
    struct spsim_result r = run(LAUNCH_1MS, &p);
    ck_assert_uint_eq(r.time.layer_forward_launches, 6);
    ck_assert_uint_eq(r.time.layer_backward_launches, 12);
    EQ(r.time.layer_forward_s, 6e-3);
    EQ(r.time.layer_backward_s, 12e-3);
    assert_breakdown(&r.time);
    /* mlp alone: the mirror image (attention's five and seven eager). */
    p = layer_config(SPSIM_CUDA_GRAPH_LOCAL, SPSIM_CGS_MLP);
    r = run(LAUNCH_1MS, &p);
    ck_assert_uint_eq(r.time.layer_forward_launches, 6);
    ck_assert_uint_eq(r.time.layer_backward_launches, 12);
    /* No scope: the whole layer, one replay each way; 1 ms is still above the GPU's 0.34 ms
     * forward. */
    p = layer_config(SPSIM_CUDA_GRAPH_TE, 0);
    r = run(LAUNCH_1MS, &p);
    ck_assert_uint_eq(r.time.layer_forward_launches, 1);
    ck_assert_uint_eq(r.time.layer_backward_launches, 5);
    EQ(r.time.layer_forward_s, 1e-3);
    EQ(r.time.layer_backward_s, 5e-3);
}
END_TEST

START_TEST(full_iteration_and_fast_host_add_nothing)
{
    struct spsim_parallel eager = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    struct spsim_result gpu = run(NULL, &eager);
    struct spsim_parallel p = layer_config(SPSIM_CUDA_GRAPH_FULL_ITERATION, 0);
    struct spsim_result r = run(LAUNCH_1MS, &p);
    ck_assert_uint_eq(r.time.layer_forward_launches, 0);
    ck_assert_uint_eq(r.time.layer_backward_launches, 0);
    EQ(r.time.host_exposed_s, 0);
    /* the optimizer step stays eager (training.py: only --optimizer-cuda-graph captures it) */
    ck_assert(r.time.optimizer_host_exposed_s > 0);
    EQ(r.time.iteration_s - r.time.optimizer_host_exposed_s - r.time.log_host_s -
           r.time.pp_p2p_host_s,
       gpu.time.iteration_s);
    /* 0.1 µs a launch: 10 of them (1 µs) are far below the GPU's forward; what the host does
     * after the loss check's device-to-host wait finds the GPU idle and adds whole (mb_host.c:
     * isinf, its bool and forward_step_calc_loss's three kernels, 5 launches; no op_us, so the
     * calls cost nothing): 2 micro-batches x 5 x 0.1 µs. */
    r = run("\"host\": {\"kernel_launch_us\": {\"value\": 0.1, \"source\": \"test\"}}", &eager);
    EQ(r.time.host_exposed_s, 2 * 5 * 0.1e-6);
    EQ(r.time.iteration_s - r.time.optimizer_host_exposed_s - r.time.host_exposed_s -
           r.time.log_host_s - r.time.pp_p2p_host_s,
       gpu.time.iteration_s);
    /* Graphs without a launch figure change the counts only. */
    p = layer_config(SPSIM_CUDA_GRAPH_TE, SPSIM_CGS_ATTN);
    r = run(NULL, &p);
    ck_assert_uint_eq(r.time.layer_forward_launches, 6);
    EQ(r.time.iteration_s, gpu.time.iteration_s);
}
END_TEST

static void
expect_refused(const char *model, enum spsim_cuda_graph_impl impl, uint32_t scope,
               enum spsim_recompute rec, const char *text)
{
    struct spsim_parallel p = layer_config(impl, scope);
    p.tp = 1;
    p.pp = 1;
    p.recompute = rec;
    testutil_expect_rule(model, &p, text);
}

START_TEST(megatron_rules)
{
    expect_refused("llama3-8b", SPSIM_CUDA_GRAPH_NONE, SPSIM_CGS_ATTN, SPSIM_RECOMPUTE_NONE,
                   "needs a cuda_graph_impl");
    expect_refused("llama3-8b", SPSIM_CUDA_GRAPH_FULL_ITERATION, SPSIM_CGS_ATTN,
                   SPSIM_RECOMPUTE_NONE, "takes no modules");
    expect_refused("llama3-8b", SPSIM_CUDA_GRAPH_TE, SPSIM_CGS_FULL_ITERATION, SPSIM_RECOMPUTE_NONE,
                   "full_iteration goes alone");
    expect_refused("qwen3-30b-a3b", SPSIM_CUDA_GRAPH_TE, SPSIM_CGS_MOE | SPSIM_CGS_MOE_ROUTER,
                   SPSIM_RECOMPUTE_NONE, "mutually exclusive");
    expect_refused("qwen3-30b-a3b", SPSIM_CUDA_GRAPH_TE, SPSIM_CGS_MOE_PREPROCESS,
                   SPSIM_RECOMPUTE_NONE, "requires moe_router");
    expect_refused("qwen3-30b-a3b", SPSIM_CUDA_GRAPH_TE, 0, SPSIM_RECOMPUTE_NONE, "drop-and-pad");
    expect_refused("llama3-8b", SPSIM_CUDA_GRAPH_TE, SPSIM_CGS_ATTN, SPSIM_RECOMPUTE_FULL,
                   "full recomputation");
}
END_TEST

START_TEST(moe_router_scope)
{
    /* Qwen3-30B-A3B, tp 1, ep 1: moe_router captures RMSNorm 2 and the router (the layer's
     * forward list from its attention block through the router is graphed); the experts and
     * the dispatch stay eager. attn + moe_router + moe_preprocess leaves the fewest launches;
     * each scope removes launches, none adds. */
    struct spsim_model *m = testutil_model_named("qwen3-30b-a3b");
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_error err = {0};
    uint32_t fwd[3];
    const uint32_t scopes[3] = {0, SPSIM_CGS_MOE_ROUTER,
                                SPSIM_CGS_ATTN | SPSIM_CGS_MOE_ROUTER | SPSIM_CGS_MOE_PREPROCESS};
    for (int i = 0; i < 3; i++) {
        struct spsim_parallel p =
            layer_config(i ? SPSIM_CUDA_GRAPH_TE : SPSIM_CUDA_GRAPH_NONE, scopes[i]);
        p.tp = 1;
        p.pp = 1;
        p.seq = 4096;
        struct spsim_result r;
        ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s", err.message);
        fwd[i] = r.time.layer_forward_launches;
    }
    ck_assert_uint_lt(fwd[1], fwd[0]);
    ck_assert_uint_lt(fwd[2], fwd[1]);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

/* The figure every shipped profile gives (doc/profiles.md "host"): cudaLaunchKernel's host time,
 * 3.259 us, as torch.profiler measured it in gpu-mode/lectures lecture_004 (RTX 3090). */
#define SHIPPED_LAUNCH_US 3.259
/* And a framework op's beyond its launches (host.op_us): ml-engineering's eager Llama 3.2 1B
 * forward on a B200, 8.1 ms over 16 layers of 11 ops, less the launch:
 * 8100 / 16 / 11 - 3.259 = 42.76 us. */
#define SHIPPED_OP_US 42.76
/* And a torch call's beyond its launch (host.torch_call_us), the same run per aten op: about 50
 * a layer × 16 = 800, 8100 / 800 - 3.259 = 6.866 us. */
#define SHIPPED_CALL_US 6.866

static int
each_hardware(void *ctx, const char *name, const char *path)
{
    (void)ctx;
    if (testutil_listing_only(path)) /* hgx-h20: the time model refuses it (test_profiles.c) */
        return 0;
    struct spsim_hardware *hw = testutil_hardware(name);
    struct spsim_hardware_info info;
    spsim_hardware_get_info(hw, &info);
    if (info.fitted) { /* a fitted profile: its host time is the runs' fit */
        spsim_hardware_destroy(hw);
        return 0;
    }
    struct spsim_result r;
    struct spsim_model *m = testutil_model_named("llama3-8b");
    struct spsim_parallel p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    p.tp = 1;
    p.pp = 1;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_msg(r.time.kernel_launch_us == SHIPPED_LAUNCH_US,
                  "%s: host.kernel_launch_us %g, not the sourced %g", name, r.time.kernel_launch_us,
                  SHIPPED_LAUNCH_US);
    ck_assert_msg(r.time.host_op_us == SHIPPED_OP_US, "%s: host.op_us %g, not the sourced %g", name,
                  r.time.host_op_us, SHIPPED_OP_US);
    ck_assert_msg(r.time.host_torch_call_us == SHIPPED_CALL_US,
                  "%s: host.torch_call_us %g, not the sourced %g", name, r.time.host_torch_call_us,
                  SHIPPED_CALL_US);
    /* Llama 3 8B at its 8192 tokens: every layer's GPU time is far above 46 us an op (only
     * the embedding's and output layer's few small steps may wait for the host). */
    ck_assert_msg(r.time.host_exposed_s < 1e-3 * r.time.iteration_s, "%s: a host-bound 8B layer",
                  name);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
    return 0;
}

START_TEST(shipped_profiles_price_a_launch)
{
    ck_assert_int_eq(spsim_profile_list(SPSIM_PROFILE_HARDWARE, each_hardware, NULL, NULL),
                     SPSIM_OK);
}
END_TEST

START_TEST(shipped_launch_binds_a_small_layer)
{
    /* The terms model (10 forward, 14 backward launches a layer, the header's count, each
     * its own framework op) at 16 tokens on the shipped dgx-h100: a layer's forward is
     * 10 x (3.259 + 42.76) us = 460.19 us of host time against about 10 us of GPU time, so it
     * takes the host's; backward 14 x 46.019 us = 644.27 us. full_iteration graphs launch
     * nothing: the GPU-only iteration. */
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/data/terms/terms-model.json", getenv("SPSIM_DATA_DIR"));
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_model_load(path, &m, &err) == SPSIM_OK, "%s", err.message);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0), g = p;
    p.seq = g.seq = 16;
    g.cuda_graph_impl = SPSIM_CUDA_GRAPH_FULL_ITERATION;
    struct spsim_result r, gpu;
    ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_msg(spsim_evaluate(m, hw, &g, &gpu, &err) == SPSIM_OK, "%s", err.message);
    const struct spsim_time_report *t = &r.time;
    ck_assert_uint_eq(t->layer_forward_launches, 10);
    ck_assert_uint_eq(t->layer_backward_launches, 18);
    const double op_s = (SHIPPED_LAUNCH_US + SHIPPED_OP_US) * 1e-6;
    EQ(t->layer_forward_s, 10 * op_s);
    /* and the DDP hooks: 16 torch calls, 4 launches (see the top) */
    EQ(t->layer_backward_s, 14 * op_s + 16 * SHIPPED_CALL_US * 1e-6 + 4 * SHIPPED_LAUNCH_US * 1e-6);
    ck_assert(gpu.time.layer_forward_s < 0.5 * 10 * op_s);
    /* 2 micro-batches x 8 layers of forward excess at least. */
    ck_assert(t->host_exposed_s >= 2 * 8 * (10 * op_s - gpu.time.layer_forward_s) * (1 - 1e-12));
    EQ(t->iteration_s - t->host_exposed_s, gpu.time.iteration_s);
    assert_breakdown(t);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(framework_ops_cost_host_time)
{
    /* At 1 ms a launch and 1 ms a framework op (host.op_us) the terms layer's 10 forward steps,
     * one kernel each, take 10 x 2 ms; its 14 backward steps 14 x 2 ms and the DDP hooks' 16
     * torch calls (at op_us: no torch_call_us) and 4 launches. A graph replay is one launch and
     * one call: whole-layer capture leaves one replay forward. */
    const char *host = "\"host\": {\"kernel_launch_us\": {\"value\": 1000, \"source\": \"t\"}, "
                       "\"op_us\": {\"value\": 1000, \"source\": \"t\"}}";
    struct spsim_parallel p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    struct spsim_result r = run(host, &p);
    EQ(r.time.host_op_us, 1000);
    EQ(r.time.layer_forward_s, 10 * 2e-3);
    EQ(r.time.layer_backward_s, 14 * 2e-3 + 16e-3 + 4e-3);
    assert_breakdown(&r.time);
    p = layer_config(SPSIM_CUDA_GRAPH_TE, 0);
    r = run(host, &p);
    ck_assert_uint_eq(r.time.layer_forward_launches, 1);
    EQ(r.time.layer_forward_s, 2e-3);
}
END_TEST

/* One layer's schedule (spsim explain's steps) into `steps`; returns their count. */
static size_t
layer_steps(const struct spsim_model *m, const struct spsim_hardware *hw,
            const struct spsim_parallel *p, struct spsim_schedule_step *steps)
{
    size_t n = 0;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_layer_schedule(m, hw, p, steps, SPSIM_MAX_SCHEDULE_STEPS, &n, &err) ==
                      SPSIM_OK,
                  "%s", err.message);
    return n;
}

/*
 * The MoE dispatcher's device-to-host copy of the tokens per expert (token_dispatcher.py): the
 * host waits for the GPU before it launches the experts' side, so a layer's forward is two
 * segments, each max(host, GPU), not max over the whole. Qwen3-30B-A3B at tp 1, ep 1, bf16,
 * the allgather dispatcher (the default): the wait is before "permute (the local experts'
 * token copies)", after the router. Each forward step with a time is one kernel here (bf16:
 * no casts); the GPU times are the schedule's own, so the segments are summed by hand from
 * `spsim explain`'s steps. The launch cost is set between the two sides' GPU time per kernel,
 * so that one side is host-bound and the other GPU-bound: the sum then exceeds the unsplit
 * max (on the terms profile 12 kernels in 4.60 ms, then 260 (the grouped GEMMs' 2 x 128) in
 * 3.71 ms).
 */
START_TEST(moe_dispatch_waits_for_the_gpu)
{
    struct spsim_model *m = testutil_model_named("qwen3-30b-a3b");
    struct spsim_parallel p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    p.tp = 1;
    p.pp = 1;
    p.seq = 4096;
    struct spsim_hardware *hw = host_hw(NULL);
    static struct spsim_schedule_step steps[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = layer_steps(m, hw, &p, steps);
    spsim_hardware_destroy(hw);
    double g[2] = {0, 0};
    uint32_t k[2] = {0, 0}, seg = 0;
    for (size_t i = 0; i < n; i++) {
        if (steps[i].phase != SPSIM_PHASE_FORWARD)
            continue;
        if (!strcmp(steps[i].op, "permute (the local experts' token copies)"))
            seg = 1;
        g[seg] += steps[i].time_s;
        /* TE's grouped GEMM launches one cuBLASLt GEMM per local expert (128 at ep 1). */
        k[seg] += strstr(steps[i].op, "grouped GEMM") ? 128 : steps[i].time_s > 0;
    }
    ck_assert_uint_eq(seg, 1);
    /* Between the two sides' GPU time per kernel: one side host-bound, the other GPU-bound. */
    double launch_s = (g[0] / k[0] + g[1] / k[1]) / 2;
    double split = fmax(k[0] * launch_s, g[0]) + fmax(k[1] * launch_s, g[1]),
           whole = fmax(g[0] + g[1], (k[0] + k[1]) * launch_s);
    ck_assert(split > whole * 1.01);
    char host[160];
    snprintf(host, sizeof(host),
             "\"host\": {\"kernel_launch_us\": {\"value\": %.17g, \"source\": \"t\"}}",
             launch_s * 1e6);
    hw = host_hw(host);
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(r.time.layer_forward_launches, k[0] + k[1]);
    EQ(r.time.layer_forward_s, split);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/* Qwen3-30B-A3B's MoE layer at tp 1, ep 8 (dp 8): 16 local experts; `d` flex is HybridEP. */
static struct spsim_parallel
ep8_config(enum spsim_dtype dtype, enum spsim_moe_dispatcher d)
{
    struct spsim_parallel p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    p.tp = 1;
    p.pp = 1;
    p.dp = 8;
    p.ep = 8;
    p.gbs = 8;
    p.seq = 4096;
    p.dtype = dtype;
    p.moe_dispatcher = d;
    p.moe_flex_backend = SPSIM_FLEX_HYBRIDEP;
    return p;
}

/*
 * TE's split_quantize (engine/host.c split_quantize_kernels): the experts' grouped GEMMs cast
 * their input (forward: FC1, FC2) and their output gradient (dgrad: FC2, FC1) per local expert
 * unless the recipe is delayed scaling (one fused multi_cast_transpose for all of them).
 * Qwen3-30B-A3B, tp 1, ep 8: E = 128 / 8 = 16 local experts, the alltoall dispatcher. Against
 * the same layer in BF16 (no casts), FP8 adds the dense casts of fp8_casts_are_launches (QKV
 * follows a norm: delayed fuses its cast into the norm, so forward 1 (the projection), else 2;
 * backward the 2 dgrads' dY), TEGroupedMLP's 3 padding copies (Fp8Padding of the tokens and of
 * the probabilities, Fp8Unpadding of FC2's output: one kernel each, both passes;
 * moe_fp8_padding_copies below) and the experts' 2 casts forward and 2 backward, each of
 *   delayed 1, MXFP8 E = 16 (one nvte_quantize_v2 a split), current scaling 3E = 48 (amax,
 *   scale, cast a split):
 * forward delayed 1 + 3 + 2 = 6, MXFP8 2 + 3 + 32 = 37, current 2 + 3 + 96 = 101; backward
 * 2 + 3 + 2 = 7, 2 + 3 + 32 = 37, 2 + 3 + 96 = 101. At 1 ms a launch every phase is
 * host-bound: launches × 1 ms.
 */
START_TEST(grouped_gemm_casts_each_expert)
{
    static const struct {
        enum spsim_dtype dtype;
        enum spsim_fp8_recipe recipe;
        uint32_t fwd, bwd; /* beyond BF16's */
    } cases[] = {{SPSIM_DTYPE_BF16, SPSIM_FP8_DELAYED, 0, 0},
                 {SPSIM_DTYPE_FP8, SPSIM_FP8_DELAYED, 6, 7},
                 {SPSIM_DTYPE_FP8, SPSIM_FP8_MXFP8, 37, 37},
                 {SPSIM_DTYPE_FP8, SPSIM_FP8_CURRENT, 101, 101}};
    struct spsim_model *m = testutil_model_named("qwen3-30b-a3b");
    struct spsim_error err = {0};
    uint32_t base[2] = {0, 0};
    fp8_peak = FP8_PEAK;
    struct spsim_hardware *hw = host_hw(LAUNCH_1MS);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct spsim_parallel p = ep8_config(cases[i].dtype, SPSIM_MOE_ALLTOALL);
        p.fp8_recipe = cases[i].recipe;
        struct spsim_result r;
        ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s", err.message);
        if (i == 0) {
            base[0] = r.time.layer_forward_launches;
            base[1] = r.time.layer_backward_launches;
        }
        ck_assert_uint_eq(r.time.layer_forward_launches, base[0] + cases[i].fwd);
        ck_assert_uint_eq(r.time.layer_backward_launches, base[1] + cases[i].bwd);
        EQ(r.time.layer_forward_s, r.time.layer_forward_launches * 1e-3);
    }
    fp8_peak = NULL;
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * TEGroupedMLP's quantization padding (engine/layer.c experts_pad; Megatron-LM d98e8a64
 * moe/experts.py:896-904, 1043): in FP8, with the alltoall dispatcher, the experts' tokens
 * are copied into padded rows before FC1 and FC2's output copied back after it, each reading
 * and writing the rows' 2-byte elements: 4 B × rows × h a pass, the same bytes as the unsort
 * of the experts' output into rank order (sort_chunks_by_idxs: 4 B × rows × h), so the three
 * memory-bound steps take the same time in each pass. BF16 runs no padding; HybridEP pads in
 * its dispatch (skip_routed_expert_padding), so neither has the steps. Qwen3-30B-A3B, tp 1,
 * ep 8 on DGX H100.
 */
static uint32_t
padding_steps(enum spsim_dtype dtype, enum spsim_moe_dispatcher d, double *pad, double *unsort)
{
    struct spsim_model *m = testutil_model_named("qwen3-30b-a3b");
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = ep8_config(dtype, d);
    static struct spsim_schedule_step steps[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = layer_steps(m, hw, &p, steps);
    uint32_t found = 0;
    for (size_t i = 0; i < n; i++) {
        int ph = steps[i].phase == SPSIM_PHASE_FORWARD ? 0 : 1;
        if (strstr(steps[i].op, "padded for quantization") || strstr(steps[i].op, "unpadded")) {
            pad[2 * ph + (strstr(steps[i].op, "unpadded") != NULL)] = steps[i].time_s;
            found++;
        } else if (strstr(steps[i].op, "probabilities padded"))
            found++;
        else if (!strcmp(steps[i].op, "unsort chunks (rank order)"))
            unsort[ph] = steps[i].time_s;
    }
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
    return found;
}

START_TEST(moe_fp8_padding_copies)
{
    double pad[4] = {0, 0, 0, 0}, unsort[2] = {0, 0};
    ck_assert_uint_eq(padding_steps(SPSIM_DTYPE_FP8, SPSIM_MOE_ALLTOALL, pad, unsort), 6);
    for (int i = 0; i < 4; i++) {
        ck_assert(unsort[i / 2] > 0);
        EQ(pad[i], unsort[i / 2]);
    }
    ck_assert_uint_eq(padding_steps(SPSIM_DTYPE_BF16, SPSIM_MOE_ALLTOALL, pad, unsort), 0);
    ck_assert_uint_eq(padding_steps(SPSIM_DTYPE_FP8, SPSIM_MOE_FLEX, pad, unsort), 0);
}
END_TEST

static void
host_refused(const char *host, const char *needle)
{
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(host_parse(host, &hw, &err), SPSIM_EFIELD);
    ck_assert_msg(strstr(err.message, needle), "%s: %s", host, err.message);
    ck_assert_ptr_null(hw);
}

/*
 * The optimizer step and the training loop on the host (engine/opt_host.c), worked by hand on
 * the terms model: 8 layers of LayerNorm (weight, bias) + QKV + projection | LayerNorm + FC1 +
 * FC2 (no biases): 8 tensors a layer, 64; the word and the learned position embeddings 2; the
 * final LayerNorm 2; the tied output layer none at pp 1: 68 tensors.
 * Float16OptimizerWithFloat16Params (dp 1): 8 torch calls per tensor (main_grad.float(),
 * grad.type() and detach() of the clip loop, FusedAdam's p_grad.data twice and p.data, .data of
 * the model and main parameters) = 544, and once 6 (grad norm) + 5 (clip) + 2 (Adam's two
 * groups) + 2 (fill_, the copy's applier) + 3 (logical_and) = 18: 562 before train_step's
 * .item(); after it 4 (the grad norm's reduce_max_stat) + 1 (loss_scale) + 1 (one gradient
 * buffer's zero_) + 2 + 4 (the loss average over 2 micro-batches) = 12.
 * At 250 us a torch call (host.torch_call_us; the layers' framework ops stay at host.op_us,
 * 1 ms) and 0.001 us a launch (a few hundred launches: under 1e-6 s) the host takes 574 calls
 * = 0.1435 s; the 562 before the wait run beside the GPU's optimizer step (dp 1: no exposed
 * reduction), the 12 after it add whole.
 * --log-num-zeros-in-grad: 4 per tensor + 3 before, 4 after; --log-params-norm after: 2 per
 * tensor (param.data.float(): no main_param without the distributed optimizer), 3 for the one
 * list with tensors, 7 for the empty ones, 6 AllReduces, 7 additions, 1 .item(): 160.
 * Distributed optimizer at dp 2: the rank's shard meets 68/2 + 1 (the bucket it cuts) = 35
 * tensors, 12 calls each, 16 once: 436 before the wait.
 * The stage whose host time is most exposed sets it (train_step's wait is over the whole
 * model-parallel group).
 * A profile without host.torch_call_us prices the calls at host.op_us (doc/profiles.md): 574
 * calls at 1 ms, 0.574 s; the layers' host time is the same either way.
 */
START_TEST(optimizer_step_on_the_host)
{
    const char *host = "\"host\": {\"kernel_launch_us\": {\"value\": 0.001, \"source\": \"t\"}, "
                       "\"op_us\": {\"value\": 1000, \"source\": \"t\"}, "
                       "\"torch_call_us\": {\"value\": 250, \"source\": \"t\"}}";
    const char *op_only = "\"host\": {\"kernel_launch_us\": {\"value\": 0.001, \"source\": "
                          "\"t\"}, \"op_us\": {\"value\": 1000, \"source\": \"t\"}}";
    const double tol = 1e-6, call = 250e-6;
    struct spsim_parallel p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    struct spsim_result r = run(host, &p);
    const struct spsim_time_report *t = &r.time;
    ck_assert_uint_eq(t->optimizer_host_tensors, 68);
    EQ(t->host_torch_call_us, 250);
    ck_assert_double_eq_tol(t->optimizer_host_s, 574 * call, tol);
    ck_assert_double_eq_tol(t->optimizer_host_exposed_s, 562 * call - t->optimizer_s + 12 * call,
                            tol);
    assert_breakdown(t);
    double layer_fwd = t->layer_forward_s;
    r = run(op_only, &p);
    EQ(t->host_torch_call_us, 1000);
    ck_assert_double_eq_tol(t->optimizer_host_s, 0.574, tol);
    EQ(t->layer_forward_s, layer_fwd);
    p.log_num_zeros_in_grad = p.log_params_norm = true;
    r = run(host, &p);
    ck_assert_double_eq_tol(t->optimizer_host_s, (574 + 275 + 4 + 160) * call, tol);
    ck_assert_double_eq_tol(t->optimizer_host_exposed_s, 837 * call - t->optimizer_s + 176 * call,
                            tol);
    p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    p.dp = 2;
    p.gbs = 4;
    p.distributed_optimizer = true;
    r = run(host, &p);
    ck_assert_uint_eq(t->optimizer_host_tensors, 35);
    ck_assert_double_eq_tol(t->optimizer_host_s, (436 + 12) * call, tol);
    double gpu = t->dp_exposed_s + t->optimizer_s;
    ck_assert_double_eq_tol(t->optimizer_host_exposed_s, fmax(0, 436 * call - gpu) + 12 * call,
                            tol);
    assert_breakdown(t);
    /* pp 2: rank 0 holds 4 layers (32) and the embeddings (2): 34; rank 1 its 4 layers, the
     * final LayerNorm and the tied embedding's copy (1): 35, and the loss average: 35 × 8 + 18 =
     * 298 before the wait, 12 after it, beside the GPU's tied-embedding AllReduce and step. */
    p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    p.pp = 2;
    r = run(host, &p);
    ck_assert_uint_eq(t->optimizer_host_tensors, 35);
    ck_assert_double_eq_tol(t->optimizer_host_s, (298 + 12) * call, tol);
    gpu = t->tied_embedding_allreduce_s + t->optimizer_s;
    ck_assert(t->tied_embedding_allreduce_s > 0);
    ck_assert_double_eq_tol(t->optimizer_host_exposed_s, fmax(0, 298 * call - gpu) + 12 * call,
                            tol);
    /* Without a launch price the host is not modelled. */
    r = run(NULL, &p);
    ck_assert_double_eq(t->optimizer_host_s, 0);
}
END_TEST

/*
 * The micro-batch's host work outside the layers' schedule (engine/mb_host.c), worked by hand
 * on the terms model (8 layers, LayerNorm, learned positions, tied embeddings, 2 micro-batches)
 * at 10 ms a torch call (host.torch_call_us; no op_us, so the schedules' ops cost nothing) and
 * 0.001 us a launch (a few hundred: under 1e-6 s), where every block it touches is host-bound:
 * - each layer's backward: 8 hooks (one call each) and the 4 LayerNorm tensors' add_ (2
 *   calls): 16 calls; --no-gradient-accumulation-fusion adds the 4 linear weights' add_: 24;
 * - the embedding's forward: get_batch's 5 .cuda() and the broadcasts of tokens, position_ids
 *   and the attention mask: 8 calls (6 with --no-create-attention-mask-in-dataloader); its
 *   backward the word and position embeddings' hooks and add_: 6;
 * - the output block's forward: labels' and loss_mask's broadcasts (2), loss_func's 15 calls,
 *   isnan and its bool (2) before the wait; isinf and its bool (2) and forward_step_calc_loss's
 *   4 after it: 25 (21 with --no-check-for-nan-in-loss-and-grad, all beside the forward); its
 *   backward the final LayerNorm's weight and bias: 6.
 * Per micro-batch 8 x 16 + 8 + 6 + 25 + 6 = 173 calls: 2 x 173 x 10 ms = 3.46 s of host time,
 * of which the iteration shows all but the GPU time of those block phases; each flag moves it
 * by its calls exactly: +2 x 8 x 8 (1.28 s), -2 x 4 (80 ms), -2 x 2 (40 ms).
 */
START_TEST(micro_batch_host_work)
{
    const char *host = "\"host\": {\"kernel_launch_us\": {\"value\": 0.001, \"source\": \"t\"}, "
                       "\"torch_call_us\": {\"value\": 10000, \"source\": \"t\"}}";
    const double call = 10e-3, tol = 1e-6;
    struct spsim_parallel p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    struct spsim_result gpu = run(NULL, &p), r = run(host, &p);
    const struct spsim_time_report *t = &r.time;
    double base = t->iteration_s - t->optimizer_host_exposed_s - t->log_host_s;
    double work = 2 * 173 * call;
    ck_assert_double_le(base - gpu.time.iteration_s, work + tol);
    ck_assert_double_ge(base - gpu.time.iteration_s, work - gpu.time.iteration_s - tol);
    assert_breakdown(t);
    p.no_gradient_accumulation_fusion = true;
    r = run(host, &p);
    ck_assert_double_eq_tol(t->iteration_s - t->optimizer_host_exposed_s - t->log_host_s - base,
                            2 * 8 * 8 * call, tol);
    ck_assert_uint_eq(t->layer_backward_launches, 14 + 8);
    p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    p.no_check_for_nan_in_loss_and_grad = true;
    r = run(host, &p);
    ck_assert_double_eq_tol(t->iteration_s - t->optimizer_host_exposed_s - t->log_host_s - base,
                            -2 * 4 * call, tol);
    p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    p.no_create_attention_mask_in_dataloader = true;
    r = run(host, &p);
    ck_assert_double_eq_tol(t->iteration_s - t->optimizer_host_exposed_s - t->log_host_s - base,
                            -2 * 2 * call, tol);
    /* A full-iteration graph replays it all: only the optimizer step's and training_log's host
     * time (outside the graph) is left. */
    p = layer_config(SPSIM_CUDA_GRAPH_FULL_ITERATION, 0);
    r = run(host, &p);
    EQ(t->iteration_s - t->optimizer_host_exposed_s - t->log_host_s,
       run(NULL, &p).time.iteration_s);
}
END_TEST

/* training_log and the blocking pipeline transfers (engine/log_host.c), at 10 ms a torch call
 * and 0.001 us a launch (under 1e-6 s in all), on terms-hw.json (every latency 0: a 4-byte
 * AllReduce is under 1e-9 s), pp 2, 2 micro-batches:
 * - training_log on the last rank, every iteration: the loss's addition (1 call), the learning
 *   rate's reduce_max_stat (torch.tensor, all_reduce, .item() twice: 4): 5 calls; every
 *   log_interval (Megatron's 100): two barriers and two synchronisations (4), the loss's .item()
 *   and its reset tensor (2): 6 calls / 100. 5.06 calls: 50.6 ms;
 * - with --tensorboard-dir, --log-interval 1, --log-timers-to-tensorboard,
 *   --log-memory-to-tensorboard, --log-num-zeros-in-grad and --log-params-norm: add_scalar pairs
 *   of the learning rate, batch size, loss, loss scale, grad norm, num-zeros and params-norm
 *   (14), memory_stats and its 4 scalars (5): 5 + 19 = 24 calls a iteration; every iteration
 *   now 6 + the iteration-time scalar = 7: 31 calls, 310 ms;
 * - each blocking transfer (p2p_communication.py _communicate): the receive buffer and
 *   batch_isend_irecv before it (2 calls and a launch), torch.cuda.synchronize after (1), the two
 *   waits beside it where they outlast it: 30 ms + max(0, 20 ms − send). 2 transfers a
 *   micro-batch, m + p − 1 = 3 micro-batch slots (the steady state's 2 and the bubble's 1):
 *   pp_p2p_host_s = 6 × that; of it pp_p2p_s holds the steady state's 2 × 2.
 */
START_TEST(training_log_and_transfers_on_the_host)
{
    const char *host = "\"host\": {\"kernel_launch_us\": {\"value\": 0.001, \"source\": \"t\"}, "
                       "\"torch_call_us\": {\"value\": 10000, \"source\": \"t\"}}";
    const double call = 10e-3, tol = 1e-6;
    struct spsim_parallel p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    p.pp = 2;
    struct spsim_result gpu = run(NULL, &p), r = run(host, &p);
    const struct spsim_time_report *t = &r.time;
    ck_assert_double_eq(gpu.time.log_host_s, 0);
    ck_assert_double_eq(gpu.time.pp_p2p_host_s, 0);
    ck_assert_double_eq_tol(t->log_host_s, 5.06 * call, tol);
    double send = gpu.time.pp_p2p_s / (2 * 2), per = 3 * call + fmax(0, 2 * call - send);
    ck_assert_double_eq_tol(t->pp_p2p_host_s, 6 * per, tol);
    ck_assert_double_eq_tol(t->pp_p2p_s - gpu.time.pp_p2p_s, 4 * per, tol);
    assert_breakdown(t);
    p.tensorboard = p.log_timers_to_tensorboard = p.log_memory_to_tensorboard = true;
    p.log_num_zeros_in_grad = p.log_params_norm = true;
    p.log_interval = 1;
    r = run(host, &p);
    ck_assert_double_eq_tol(t->log_host_s, 31 * call, tol);
    assert_breakdown(t);
    /* The interleaved schedule overlaps its transfers (no batch_p2p_sync); a full-iteration
     * graph replays them; training_log stays eager in both. */
    p.vpp = 2;
    r = run(host, &p);
    ck_assert_double_eq(t->pp_p2p_host_s, 0);
    ck_assert_double_eq_tol(t->log_host_s, 31 * call, tol);
    p = layer_config(SPSIM_CUDA_GRAPH_FULL_ITERATION, 0);
    p.pp = 2;
    r = run(host, &p);
    ck_assert_double_eq(t->pp_p2p_host_s, 0);
    ck_assert_double_eq_tol(t->log_host_s, 5.06 * call, tol);
}
END_TEST

/* The logged statistics from a launch line, a Bridge recipe (LoggerConfig.log_params_norm,
 * OptimizerConfig.log_num_zeros_in_grad) and back into a launch line; and the micro-batch's
 * flags (engine/mb_host.c) from the line and back. */
START_TEST(logged_statistics_are_read)
{
    static const char line[] =
        "pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 "
        "--vocab-size 100 --bf16 --log-params-norm --log-num-zeros-in-grad "
        "--no-gradient-accumulation-fusion --no-create-attention-mask-in-dataloader "
        "--no-check-for-nan-in-loss-and-grad\n";
    static const char recipe[] =
        "model:\n  num_layers: 2\n  hidden_size: 64\n"
        "  num_attention_heads: 4\n  seq_length: 32\n"
        "  max_position_embeddings: 32\n  vocab_size: 100\n"
        "mixed_precision:\n  bf16: true\nlogger:\n  log_params_norm: true\n"
        "optimizer:\n  log_num_zeros_in_grad: false\n";
    struct spsim_megatron_config mc, back;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_parse(line, strlen(line), "launch.sh", &mc, &err) == SPSIM_OK,
                  "%s", err.message);
    ck_assert(mc.par.log_params_norm && mc.par.log_num_zeros_in_grad);
    char text[8192];
    ck_assert(spsim_megatron_format(mc.model, &mc.par, 8, text, sizeof(text)) < sizeof(text));
    ck_assert_msg(spsim_megatron_parse(text, strlen(text), "out.sh", &back, &err) == SPSIM_OK, "%s",
                  err.message);
    ck_assert(back.par.log_params_norm && back.par.log_num_zeros_in_grad);
    ck_assert(mc.par.no_gradient_accumulation_fusion && back.par.no_gradient_accumulation_fusion);
    ck_assert(mc.par.no_create_attention_mask_in_dataloader &&
              back.par.no_create_attention_mask_in_dataloader);
    ck_assert(mc.par.no_check_for_nan_in_loss_and_grad &&
              back.par.no_check_for_nan_in_loss_and_grad);
    spsim_model_destroy(back.model);
    spsim_model_destroy(mc.model);
    ck_assert_msg(spsim_megatron_parse(recipe, strlen(recipe), "r.yaml", &mc, &err) == SPSIM_OK,
                  "%s", err.message);
    ck_assert(mc.par.log_params_norm && !mc.par.log_num_zeros_in_grad);
    spsim_model_destroy(mc.model);
}
END_TEST

/*
 * The tensors of an MoE model (engine/opt_host.c rank_tensors), Mixtral 8x7B (32 layers,
 * RMSNorm, no biases, RoPE, untied): a layer's attention 3 (the norm fused into linear_qkv, QKV,
 * projection), its MoE block the pre-MLP norm, the router and fc1 + fc2 of each local expert
 * (TE registers one weight per expert); the embedding 1, the final norm and the output layer 2.
 * ep 1: 32 × (3 + 2 + 16) + 3 = 675. ep 2 at dp 2 with the distributed optimizer: the dense
 * tensors 32 × 5 + 3 = 163 over dp 2, 82; the experts' 32 × 4 × 2 = 256 over edp 1 (dp·tp / ep),
 * all; one more per bucket a shard cuts (the dense buckets and the experts' buffer).
 */
START_TEST(moe_tensors_per_expert)
{
    const char *host = "\"host\": {\"kernel_launch_us\": {\"value\": 3, \"source\": \"t\"}, "
                       "\"op_us\": {\"value\": 40, \"source\": \"t\"}}";
    struct spsim_parallel p = layer_config(SPSIM_CUDA_GRAPH_NONE, 0);
    struct spsim_result r = run_on("models/mixtral-8x7b.json", host, &p);
    ck_assert_uint_eq(r.time.optimizer_host_tensors, 675);
    p.ep = p.dp = 2;
    p.gbs = 4;
    p.distributed_optimizer = true;
    r = run_on("models/mixtral-8x7b.json", host, &p);
    ck_assert_uint_eq(r.time.optimizer_host_tensors, 82 + 256 + r.time.dp_buckets + 1);
}
END_TEST

START_TEST(host_field_is_validated)
{
    host_refused("\"host\": {\"kernel_launch_us\": 5}", "kernel_launch_us");
    host_refused("\"host\": {\"kernel_launch_us\": {\"value\": 0, \"source\": \"t\"}}",
                 "kernel_launch_us");
    host_refused("\"host\": {\"launch_us\": {\"value\": 5, \"source\": \"t\"}}", "launch_us");
    host_refused("\"host\": {\"kernel_launch_us\": {\"value\": 5, \"source\": \"t\"}, "
                 "\"op_us\": {\"value\": -1, \"source\": \"t\"}}",
                 "op_us");
    host_refused("\"host\": {\"kernel_launch_us\": {\"value\": 5, \"source\": \"t\"}, "
                 "\"torch_call_us\": {\"value\": 2e4, \"source\": \"t\"}}",
                 "torch_call_us");
    host_refused("\"host\": {\"kernel_launch_us\": {\"value\": 5, \"source\": \"t\"}, "
                 "\"torch_call_us\": 7}",
                 "torch_call_us");
}
END_TEST

static Suite *
host_suite(void)
{
    Suite *s = suite_create("host");
    TCase *tc = tcase_create("launches");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, eager_layer_is_host_bound);
    tcase_add_test(tc, tp_collectives_are_launches);
    tcase_add_test(tc, fp8_casts_are_launches);
    tcase_add_test(tc, graph_scopes_replace_launches);
    tcase_add_test(tc, full_iteration_and_fast_host_add_nothing);
    tcase_add_test(tc, megatron_rules);
    tcase_add_test(tc, moe_router_scope);
    tcase_add_test(tc, shipped_profiles_price_a_launch);
    tcase_add_test(tc, shipped_launch_binds_a_small_layer);
    tcase_add_test(tc, framework_ops_cost_host_time);
    tcase_add_test(tc, moe_dispatch_waits_for_the_gpu);
    tcase_add_test(tc, optimizer_step_on_the_host);
    tcase_add_test(tc, logged_statistics_are_read);
    tcase_add_test(tc, micro_batch_host_work);
    tcase_add_test(tc, training_log_and_transfers_on_the_host);
    tcase_add_test(tc, moe_tensors_per_expert);
    tcase_add_test(tc, grouped_gemm_casts_each_expert);
    tcase_add_test(tc, moe_fp8_padding_copies);
    tcase_add_test(tc, host_field_is_validated);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    SRunner *sr = srunner_create(host_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
