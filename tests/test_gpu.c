/*
 * The GPU part on a real GPU (suite 'cuda'). Exits 77 (skipped) where spsim_gpu_device_count()
 * finds none. Each check is a property any correct measurement has: NCCL sums known data
 * exactly, measured times are positive and the sizes increasing, bandwidths follow nccl-tests'
 * definitions, no GEMM beats the GPU's vendor peak and no copy its HBM bandwidth, and the
 * replay of a layer runs every step of the schedule. `test_gpu --multi` runs the replays across
 * GPUs instead, and exits 77 where fewer than 2 are visible.
 */
#include <stdio.h>
#include <string.h>

#include "gpu/gpu_internal.h"
#include "testutil.h"

/* The vendor peaks of the GPU under test: the shipped profile whose GPU name it carries
 * (hardware/README.md), else the largest BF16 peak shipped (GB200, 2500 TFLOPS dense,
 * [ML-ACC]) and no HBM bound. */
static void
gpu_bounds(double *peak_tflops, double *hbm_GBps)
{
    static const struct {
        const char *needle, *profile;
    } map[] = {
        {"H200", "hgx-h200"},     {"H100", "dgx-h100"},     {"A100-SXM4-40GB", "dgx-a100-40g"},
        {"A100", "dgx-a100-80g"}, {"GB200", "gb200-nvl72"}, {"B200", "dgx-b200"}};
    struct spsim_gpu_info g;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_gpu_info(0, &g, &err) == SPSIM_OK, "%s", err.message);
    *peak_tflops = 2500;
    *hbm_GBps = 0;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(map); i++) {
        if (!strstr(g.name, map[i].needle))
            continue;
        struct spsim_hardware *hw = testutil_hardware(map[i].profile);
        struct spsim_hardware_info info;
        spsim_hardware_get_info(hw, &info);
        *peak_tflops = info.peak_tflops[SPSIM_DTYPE_BF16];
        *hbm_GBps = info.hbm_bandwidth_GBps;
        spsim_hardware_destroy(hw);
        return;
    }
}

START_TEST(gpu_info_describes_device)
{
    struct spsim_gpu_info g;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_gpu_info(0, &g, &err) == SPSIM_OK, "%s", err.message);
    ck_assert(g.name[0] != '\0');
    ck_assert_int_ge(g.cc_major, 3);
    ck_assert_int_gt(g.sm_count, 0);
    ck_assert_int_ge(g.nccl_version, 20000); /* NCCL 2.x: 10000·major + 100·minor + patch */
    ck_assert_int_eq(spsim_gpu_info(g.device_count, &g, &err), SPSIM_EINVAL);
}
END_TEST

/* Rank r sends `count` floats of value r + 1; an AllReduce (sum) gives n(n+1)/2 everywhere. */
START_TEST(allreduce_of_known_data_gives_known_sum)
{
    struct spsim_gpu_comm c;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_gpu_comm_open(&c, 0, false, 1 << 20, &err) == SPSIM_OK, "%s", err.message);
    enum { COUNT = 4096 };
    static float host[COUNT];
    for (int i = 0; i < c.nlocal; i++) {
        for (int j = 0; j < COUNT; j++)
            host[j] = (float)(i + 1);
        /* On the communicator's non-blocking stream, which the legacy stream does not order. */
        ck_assert_int_eq(cudaSetDevice(c.devices[i]), cudaSuccess);
        ck_assert_int_eq(
            cudaMemcpyAsync(c.send[i], host, sizeof(host), cudaMemcpyHostToDevice, c.streams[i]),
            cudaSuccess);
        ck_assert_int_eq(cudaStreamSynchronize(c.streams[i]), cudaSuccess);
    }
    ck_assert_msg(spsim_gpu_coll_launch(&c, SPSIM_COLL_ALL_REDUCE, COUNT, ncclFloat32, &err) == 0,
                  "%s", err.message);
    double want = c.nranks * (c.nranks + 1) / 2.0;
    for (int i = 0; i < c.nlocal; i++) {
        ck_assert_int_eq(cudaSetDevice(c.devices[i]), cudaSuccess);
        ck_assert_int_eq(cudaStreamSynchronize(c.streams[i]), cudaSuccess);
        ck_assert_int_eq(
            cudaMemcpyAsync(host, c.recv[i], sizeof(host), cudaMemcpyDeviceToHost, c.streams[i]),
            cudaSuccess);
        ck_assert_int_eq(cudaStreamSynchronize(c.streams[i]), cudaSuccess);
        for (int j = 0; j < COUNT; j++)
            ck_assert_msg((double)host[j] == want, "GPU %d element %d: %g, want %g", i, j,
                          (double)host[j], want);
    }
    /* The library's own check of AllReduce and AllGather agrees. */
    ck_assert_msg(spsim_gpu_coll_verify(&c, COUNT, &err) == SPSIM_OK, "%s", err.message);
    spsim_gpu_comm_close(&c);
}
END_TEST

static void
check_collectives(const struct spsim_bw_table *t)
{
    uint64_t last[SPSIM_COLL_COUNT] = {0};
    size_t seen[SPSIM_COLL_COUNT] = {0};
    for (size_t i = 0; i < spsim_bw_table_size(t); i++) {
        const struct spsim_bw_sample *s = spsim_bw_table_get(t, i);
        ck_assert_msg(s->size_bytes > last[s->op], "%s sizes not increasing",
                      spsim_coll_op_name(s->op));
        last[s->op] = s->size_bytes;
        seen[s->op]++;
        ck_assert(s->time_s > 0 && s->time_s < 10);
        /* nccl-tests: algbw = size / time / 1e9; busbw = algbw · 2(n−1)/n, (n−1)/n or 1. */
        double n = s->ranks, alg = (double)s->size_bytes / s->time_s / 1e9;
        double factor = s->op == SPSIM_COLL_ALL_REDUCE  ? 2 * (n - 1) / n
                        : s->op == SPSIM_COLL_SEND_RECV ? 1
                                                        : (n - 1) / n;
        ck_assert_double_eq_tol(s->algbw_GBps, alg, 1e-9 * alg);
        ck_assert_double_eq_tol(s->busbw_GBps, alg * factor, 1e-9 * alg);
    }
    for (int op = 0; op < SPSIM_COLL_COUNT; op++)
        ck_assert_msg(seen[op] > 0, "no %s samples", spsim_coll_op_name(op));
    const char *keys[] = {"gpu",
                          "compute_capability",
                          "cuda_driver",
                          "cuda_runtime",
                          "nccl_version",
                          "gpus",
                          "nodes",
                          "hosts",
                          "gemm_shapes_skipped"};
    for (size_t k = 0; k < SPSIM_ARRAY_LENGTH(keys); k++)
        ck_assert_msg(spsim_bw_table_info(t, keys[k]), "provenance '%s' missing", keys[k]);
}

START_TEST(calibrate_measures_plausible_values)
{
    struct spsim_gpu_calibrate_options o;
    spsim_gpu_calibrate_defaults(&o);
    o.max_bytes = 1 << 20;
    o.warmup_iters = 1;
    o.iters = 3;
    o.fp8 = true;
    struct spsim_bw_table *t = NULL;
    struct spsim_gemm_sample *g = NULL;
    struct spsim_hbm_sample *h = NULL;
    size_t ng = 0, nh = 0;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_bw_table_create(&t), SPSIM_OK);
    ck_assert_msg(spsim_gpu_calibrate(&o, t, &g, &ng, &h, &nh, &err) == SPSIM_OK, "%s",
                  err.message);
    check_collectives(t);
    double peak = 0, hbm = 0;
    gpu_bounds(&peak, &hbm);
    ck_assert_uint_gt(ng, 0);
    for (size_t i = 0; i < ng; i++) {
        double bound = g[i].dtype == SPSIM_DTYPE_FP8 ? 2 * peak : peak; /* FP8 peak = 2 × BF16 */
        ck_assert_msg(g[i].tflops > 0 && g[i].tflops < bound, "GEMM %llux%llux%llu: %g TFLOP/s",
                      (unsigned long long)g[i].m, (unsigned long long)g[i].n,
                      (unsigned long long)g[i].k, g[i].tflops);
    }
    ck_assert_uint_gt(nh, 0);
    for (size_t i = 0; i < nh; i++)
        ck_assert_msg(h[i].GBps > 0 && (hbm == 0 || h[i].GBps < hbm), "copy %llu B: %g GB/s",
                      (unsigned long long)h[i].bytes, h[i].GBps);
    free(g);
    free(h);
    spsim_bw_table_destroy(t);
}
END_TEST

/* A small GPT layer (h = 1024, a = 16, s = 512) replayed: every step of the schedule runs, in
 * its order, and takes time; with two GPUs its collectives run too. */
static void
replay_small_layer(uint32_t tp, bool sp)
{
    struct spsim_model_shape ms = testutil_gpt_shape(2, 1024, 16, 512, 51200);
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_hardware *hw = testutil_hardware("hgx-h200");
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = tp;
    p.sp = sp;
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    struct spsim_gpu_validate_options o = {.warmup_iters = 1, .iters = 2};
    static struct spsim_gpu_validate_report r;
    static struct spsim_schedule_step steps[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = 0;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_gpu_validate(m, hw, &p, &o, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_int_eq(spsim_layer_schedule(m, hw, &p, steps, SPSIM_MAX_SCHEDULE_STEPS, &n, &err), 0);
    ck_assert_uint_eq(r.nsteps, n);
    for (size_t i = 0; i < n; i++) {
        const struct spsim_gpu_validate_step *s = &r.steps[i];
        ck_assert_str_eq(s->op, steps[i].op);
        ck_assert_str_eq(s->pass, steps[i].pass);
        /* An identity step (f forward, f-bar backward) runs nothing: it may time as 0. */
        ck_assert_msg(s->measured_s >= 0 && s->measured_compute_s >= 0, "step %zu '%s'", i, s->op);
        if (s->gemms || s->copy_bytes)
            ck_assert_msg(s->measured_compute_s > 0 && s->measured_s > 0,
                          "step %zu '%s': no compute time", i, s->op);
        if (s->coll != SPSIM_COLL_COUNT)
            ck_assert_msg(s->measured_comm_s > 0 && s->measured_s > 0,
                          "step %zu '%s': no collective time", i, s->op);
    }
    ck_assert(r.measured_forward_s > 0 && r.measured_backward_s > 0);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}

START_TEST(validate_replays_every_step_tp1)
{
    replay_small_layer(1, false);
}
END_TEST

/* Run only as `test_gpu --multi` (meson test 'gpu-multi'), which exits 77 below 2 GPUs. */
START_TEST(validate_replays_collectives_tp2)
{
    replay_small_layer(2, true);
    replay_small_layer(2, false);
}
END_TEST

/* Every tp of 4 and 8 the GPUs allow, one thread per GPU, with SP. */
START_TEST(validate_replays_collectives_all_gpus)
{
    int count = 0;
    ck_assert_int_eq(spsim_gpu_device_count(&count, NULL), SPSIM_OK);
    for (uint32_t tp = 4; tp <= 8 && (int)tp <= count; tp *= 2)
        replay_small_layer(tp, true);
}
END_TEST

START_TEST(validate_needs_tp_gpus)
{
    int count = 0;
    ck_assert_int_eq(spsim_gpu_device_count(&count, NULL), SPSIM_OK);
    struct spsim_model_shape ms = testutil_gpt_shape(2, 1024, 16, 512, 51200);
    struct spsim_model *m = testutil_model(&ms);
    struct spsim_hardware *hw = testutil_hardware("hgx-h200");
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 16; /* more than any machine spsim ships a profile for has in one process */
    static struct spsim_gpu_validate_report r;
    struct spsim_error err = {0};
    if (count < 16)
        ck_assert_int_eq(spsim_gpu_validate(m, hw, &p, NULL, &r, &err), SPSIM_ENOTSUP);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

static TCase *
add_case(Suite *s, const char *name, double timeout_s)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, timeout_s);
    suite_add_tcase(s, tc);
    return tc;
}

/* One GPU's checks, or with `multi` the replays across GPUs. */
static Suite *
gpu_suite(bool multi)
{
    Suite *s = suite_create(multi ? "gpu_multi" : "gpu");
    if (multi) {
        TCase *tp = add_case(s, "validate", 240);
        tcase_add_test(tp, validate_replays_collectives_tp2);
        tcase_add_test(tp, validate_replays_collectives_all_gpus);
        return s;
    }
    TCase *dev = add_case(s, "device", 120);
    tcase_add_test(dev, gpu_info_describes_device);
    tcase_add_test(dev, allreduce_of_known_data_gives_known_sum);
    tcase_add_test(add_case(s, "calibrate", 240), calibrate_measures_plausible_values);
    TCase *val = add_case(s, "validate", 120);
    tcase_add_test(val, validate_replays_every_step_tp1);
    tcase_add_test(val, validate_needs_tp_gpus);
    return s;
}

/* test_gpu: one GPU suffices; test_gpu --multi: the replays across GPUs, skipped (exit 77, not
 * passed) where fewer than 2 are visible, so that a one-GPU run does not claim them. */
int
main(int argc, char **argv)
{
    bool multi = argc > 1 && strcmp(argv[1], "--multi") == 0;
    int count = 0;
    struct spsim_error err = {0};
    if (spsim_gpu_device_count(&count, &err) != SPSIM_OK) {
        printf("skipped: %s\n", err.message);
        return 77;
    }
    if (multi && count < 2) {
        printf("skipped: the multi-GPU replays need 2 GPUs, %d visible\n", count);
        return 77;
    }
    /* The check above initialised CUDA: the tests must run in this process. */
    return testutil_run_nofork(gpu_suite(multi));
}
