/*
 * Calibrated profiles end to end: each public log calibrated, its profile loaded by the real
 * loader, and `spsim collective`'s prediction held against the log's measured times (issue 5:
 * within 10 % for every size >= 1 MiB); the profile's contents; the atomic write; the GPU
 * measurement path; the errors; and the shipped profiles' predictions, which the changes to the
 * collective model and the curve loader must leave as they were.
 */
#include <cjson/cJSON.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static const char *
data_path(const char *dir, const char *name)
{
    static char path[4096];
    const char *root = getenv("SPSIM_DATA_DIR");
    snprintf(path, sizeof(path), "%s/%s/%s", root ? root : ".", dir, name);
    return path;
}

static struct spsim_bw_table *
load_log(const char *text_or_file, bool is_text)
{
    struct spsim_bw_table *t = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_bw_table_create(&t), SPSIM_OK);
    int rc = is_text ? spsim_nccl_log_parse(text_or_file, strlen(text_or_file), "synthetic.txt",
                                            NULL, t, NULL, &err)
                     : spsim_nccl_log_load(data_path("tests/data/nccl-tests", text_or_file), NULL,
                                           t, NULL, &err);
    ck_assert_msg(rc == SPSIM_OK, "%s", err.message);
    return t;
}

static int
calibrate_gpu(const char *base, struct spsim_bw_table *t, const struct spsim_gemm_sample *gemms,
              size_t ngemms, struct spsim_calibration *cal, struct spsim_error *err)
{
    struct spsim_calibrate_options o;
    spsim_calibrate_defaults(&o);
    char base_path[4096];
    ck_assert_int_eq(
        spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, base, base_path, sizeof(base_path), NULL),
        SPSIM_OK);
    o.base_path = base_path;
    o.name = "calibrated-test";
    o.date = "2026-01-02T03:04:05Z";
    o.command_line = "spsim calibrate --from-nccl-tests test";
    const struct spsim_bw_table *tables[1] = {t};
    return spsim_calibrate_profile(&o, tables, t ? 1 : 0, gemms, ngemms, NULL, 0, cal, err);
}

static int
calibrate(const char *base, struct spsim_bw_table *t, struct spsim_calibration *cal,
          struct spsim_error *err)
{
    return calibrate_gpu(base, t, NULL, 0, cal, err);
}

static struct spsim_hardware *
load_profile(const struct spsim_calibration *cal)
{
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    int rc = spsim_hardware_parse(cal->profile_json, cal->profile_len, "calibrated", &hw, &err);
    ck_assert_msg(rc == SPSIM_OK, "%s", err.message);
    return hw;
}

/* The worst |predicted − measured| / measured over the table's sizes >= 1 MiB. */
static double
worst_error_from_1MiB(const struct spsim_hardware *hw, const struct spsim_bw_table *t)
{
    double worst = 0;
    size_t n = 0;
    for (size_t i = 0; i < spsim_bw_table_size(t); i++) {
        const struct spsim_bw_sample *x = spsim_bw_table_get(t, i);
        if (x->size_bytes < (1u << 20))
            continue;
        struct spsim_collective_prediction p;
        struct spsim_error err = {0};
        int rc = spsim_collective_predict(hw, x->op, x->ranks, x->nodes, x->size_bytes, &p, &err);
        ck_assert_msg(rc == SPSIM_OK, "%s", err.message);
        worst = fmax(worst, fabs(p.time_s - x->time_s) / x->time_s);
        n++;
    }
    ck_assert_uint_gt(n, 0);
    return worst;
}

/* ---- every public log ---------------------------------------------------------------------- */

/* Base profiles: the shipped one of the log's GPU (DGX A100 80GB, DGX H100), the 40 GB A100 for
 * the PCIe A100 40GB (closest GPU), DGX H100 for the Snellius H100 nodes. */
static const struct {
    const char *file, *base;
} logs[] = {
    {"a100x8_all_reduce_thanos_threads.txt", "dgx-a100-80g"},
    {"a100x8x2nodes_ib_hdr_all_reduce_azure_ndmv4_aks.txt", "dgx-a100-80g"},
    {"a100pcie_x2_pcie_all_reduce_medium_1MB-1GB_step10MB_thomaslie210.txt", "dgx-a100-40g"},
    {"h100x8_all_reduce_dgxc_benchmarking.txt", "dgx-h100"},
    {"h100x4of8_all_reduce_waynehacking8.txt", "dgx-h100"},
    {"h100x4of8_all_gather_waynehacking8.txt", "dgx-h100"},
    {"h100x4of8_reduce_scatter_waynehacking8.txt", "dgx-h100"},
    {"h100x6of8_all_reduce_NCCL_ALGO_Ring_waynehacking8.txt", "dgx-h100"},
    {"h100x4x2nodes_ib_ndr200_all_reduce_snellius_odissei.txt", "dgx-h100"},
};

START_TEST(calibrated_profile_reproduces_its_log)
{
    struct spsim_bw_table *t = load_log(logs[_i].file, false);
    struct spsim_calibration cal;
    struct spsim_error err = {0};
    ck_assert_msg(calibrate(logs[_i].base, t, &cal, &err) == SPSIM_OK, "%s: %s", logs[_i].file,
                  err.message);
    struct spsim_hardware *hw = load_profile(&cal);
    double worst = worst_error_from_1MiB(hw, t);
    ck_assert_msg(worst <= 0.10, "%s: %.2f %% off at some size >= 1 MiB", logs[_i].file,
                  100 * worst);
    /* The rows the library reports are the same predictions. */
    for (size_t i = 0; i < cal.nrows; i++)
        if (cal.rows[i].size_bytes >= (1u << 20))
            ck_assert_double_le(fabs(cal.rows[i].predicted_s - cal.rows[i].measured_s),
                                0.10 * cal.rows[i].measured_s);
    struct spsim_hardware_info info;
    spsim_hardware_get_info(hw, &info);
    ck_assert(info.calibrated);
    ck_assert_str_eq(info.name, "calibrated-test");
    spsim_hardware_destroy(hw);
    spsim_calibration_free(&cal);
    spsim_bw_table_destroy(t);
}
END_TEST

/* ---- what the profile holds ---------------------------------------------------------------- */

static const char *
source_of(const cJSON *root, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, a), b);
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "source"));
}

static double
value_of(const cJSON *root, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, a), b);
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(v, "value"));
}

START_TEST(profile_keeps_the_base_and_names_the_calibration)
{
    struct spsim_bw_table *t = load_log("a100x8_all_reduce_thanos_threads.txt", false);
    struct spsim_calibration cal;
    ck_assert_int_eq(calibrate("dgx-a100-80g", t, &cal, NULL), SPSIM_OK);
    cJSON *root = cJSON_Parse(cal.profile_json);
    FILE *f = fopen(data_path("hardware", "dgx-a100-80g.json"), "r");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 16];
    text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
    fclose(f);
    cJSON *base = cJSON_Parse(text);
    /* Untouched fields keep their sources; the measured ones name the calibration. */
    ck_assert_str_eq(source_of(root, "gpu", "sm_count"), source_of(base, "gpu", "sm_count"));
    ck_assert_str_eq(source_of(root, "network", "nic_achievable_GBps"),
                     source_of(base, "network", "nic_achievable_GBps"));
    ck_assert_ptr_nonnull(
        strstr(source_of(root, "nvlink", "allreduce_busbw_GBps"), "calibration:"));
    /* A ring AllReduce (A100: no NVLS) measures the ring AllGather and ReduceScatter run on:
     * its peak becomes the ring busbw, its efficiency their curves. */
    ck_assert_ptr_nonnull(strstr(source_of(root, "nvlink", "ring_busbw_GBps"), "calibration:"));
    ck_assert_double_eq(value_of(root, "nvlink", "ring_busbw_GBps"),
                        value_of(root, "nvlink", "allreduce_busbw_GBps"));
    ck_assert_ptr_nonnull(
        strstr(source_of(root, "nvlink", "hop_latency_us"), "2026-01-02T03:04:05Z"));
    ck_assert_ptr_nonnull(strstr(source_of(root, "nvlink", "hop_latency_us"),
                                 "command: spsim calibrate --from-nccl-tests test"));
    /* The log's largest busbw, 232.44 GB/s at 4 GiB, net of a latency of tens of µs in 32 ms. */
    ck_assert_double_eq_tol(value_of(root, "nvlink", "allreduce_busbw_GBps"), 232.44, 0.5);
    const cJSON *curve = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "nvlink"),
                                         "busbw_curves"),
        "all_reduce");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(curve, "points")), 30);
    const cJSON *prov = cJSON_GetObjectItemCaseSensitive(root, "calibration");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(prov, "date")),
                     "2026-01-02T03:04:05Z");
    const cJSON *in0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(prov, "inputs"), 0);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in0, "gpu")),
                     "NVIDIA A100-SXM4-80GB");
    cJSON_Delete(base);
    cJSON_Delete(root);
    spsim_calibration_free(&cal);
    spsim_bw_table_destroy(t);
}
END_TEST

START_TEST(multi_node_log_sets_the_node_and_network_tier)
{
    /* Snellius: 8 ranks on 2 hosts (gcn151, gcn154), so 4 GPUs per node. */
    struct spsim_bw_table *t =
        load_log("h100x4x2nodes_ib_ndr200_all_reduce_snellius_odissei.txt", false);
    struct spsim_calibration cal;
    ck_assert_int_eq(calibrate("dgx-h100", t, &cal, NULL), SPSIM_OK);
    cJSON *root = cJSON_Parse(cal.profile_json);
    ck_assert_double_eq(value_of(root, "node", "gpus_per_node"), 4);
    ck_assert_double_eq(value_of(root, "node", "nvlink_domain_gpus"), 4);
    ck_assert_ptr_nonnull(
        strstr(source_of(root, "network", "nic_achievable_GBps"), "calibration:"));
    /* 156.14 GB/s busbw at 8 GiB over the base's 8 NICs: about 19.5 GB/s each. */
    ck_assert_double_eq_tol(value_of(root, "network", "nic_achievable_GBps"), 156.14 / 8, 0.2);
    ck_assert(cal.tier[1].measured && !cal.tier[0].measured);
    ck_assert_int_eq(cal.rows[0].tier, SPSIM_TIER_HIERARCHICAL);
    /* Its NCCL logged "NVLS multicast support is not available" (4-GPU HGX boards, no
     * NVSwitch): the calibrated nodes have no NVLS, so NCCL's NVLSTree is not weighed. */
    ck_assert_double_eq(value_of(root, "nvlink", "nvls"), 0);
    ck_assert_ptr_nonnull(strstr(source_of(root, "nvlink", "nvls"), "NVLS multicast support"));
    struct spsim_hardware *hw = load_profile(&cal);
    struct spsim_collective_prediction p;
    for (uint64_t size = 1 << 20; size <= 1ull << 33; size *= 2) {
        ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_REDUCE, 8, 2, size, &p, NULL),
                         SPSIM_OK);
        ck_assert_str_ne(p.algorithm, "NVLSTree");
    }
    spsim_hardware_destroy(hw);
    cJSON_Delete(root);
    spsim_calibration_free(&cal);
    spsim_bw_table_destroy(t);
}
END_TEST

/* An nccl-tests log of `binary` whose times follow time = alpha + size·factor/B exactly, with
 * algbw and busbw printed from the printed time as nccl-tests does (nccl-tests.md §1.1). */
static char *
synthetic_log(const char *binary, uint32_t ranks, uint32_t nodes, double alpha_us, double B_GBps,
              double factor)
{
    static char buf[1 << 15];
    size_t n = (size_t)snprintf(buf, sizeof(buf), "# Collective test starting: %s\n", binary);
    for (uint32_t r = 0; r < ranks; r++)
        n += (size_t)snprintf(
            buf + n, sizeof(buf) - n,
            "#  Rank %2u Group  0 Pid %4u on  node%u device %2u [0x07] NVIDIA H100 "
            "80GB HBM3\n",
            r, 100 + r, r / (ranks / nodes), r % (ranks / nodes));
    for (double size = 1024; size <= 1 << 30; size *= 4) {
        double t = round((alpha_us + size * factor / (B_GBps * 1e3)) * 100) / 100;
        double algbw = size / t / 1e3;
        n += (size_t)snprintf(buf + n, sizeof(buf) - n,
                              "%12.0f %13.0f     float     sum      -1 %8.2f %7.2f %7.2f      0\n",
                              size, size / 4, t, algbw, algbw * factor);
    }
    return buf;
}

START_TEST(all_to_all_and_send_recv_logs)
{
    /* all_to_all on 2 nodes of 4 (hierarchical: each rank's 4/8 of S crosses the NICs), and
     * send/recv on 2 GPUs of one node. */
    struct spsim_bw_table *t =
        load_log(synthetic_log("alltoall_perf", 8, 2, 30, 60, 7.0 / 8), true);
    struct spsim_calibration cal;
    struct spsim_error err = {0};
    ck_assert_msg(calibrate("dgx-h100", t, &cal, &err) == SPSIM_OK, "%s", err.message);
    struct spsim_hardware *hw = load_profile(&cal);
    ck_assert_double_le(worst_error_from_1MiB(hw, t), 1e-9);
    ck_assert_int_eq(cal.rows[0].op, SPSIM_COLL_ALL_TO_ALL);
    spsim_hardware_destroy(hw);
    spsim_calibration_free(&cal);
    spsim_bw_table_destroy(t);
    t = load_log(synthetic_log("sendrecv_perf", 2, 1, 10, 150, 1), true);
    ck_assert_msg(calibrate("dgx-h100", t, &cal, &err) == SPSIM_OK, "%s", err.message);
    hw = load_profile(&cal);
    ck_assert_double_le(worst_error_from_1MiB(hw, t), 1e-9);
    /* An exact α + wire/B log is fitted exactly: B = 150 GB/s (to the 0.01 µs print rounding). */
    ck_assert_double_eq_tol(cal.tier[0].fit_busbw_GBps[SPSIM_COLL_SEND_RECV], 150, 0.01);
    spsim_hardware_destroy(hw);
    spsim_calibration_free(&cal);
    spsim_bw_table_destroy(t);
}
END_TEST

/* ---- GPU measurements ---------------------------------------------------------------------- */

START_TEST(serial_epilogue_points_that_beat_hbm_are_left_out)
{
    /* dgx-a100-80g has a serial GEMM epilogue and 1700 GB/s of HBM: a 16384 × 16384 output
     * (536,870,912 B) takes 316 µs to write, so 2·16384²·16 FLOPs "at 100 TFLOP/s" (86 µs)
     * cannot be represented and is left out; 8192³ at 250 TFLOP/s stays. */
    struct spsim_bw_table *t = load_log("a100x8_all_reduce_thanos_threads.txt", false);
    struct spsim_gemm_sample gemms[] = {{16384, 16384, 16, SPSIM_DTYPE_BF16, 8.6e-5, 100.0, false},
                                        {8192, 8192, 8192, SPSIM_DTYPE_BF16, 4.4e-3, 250.0, false}};
    struct spsim_calibration cal;
    struct spsim_error err = {0};
    ck_assert_msg(calibrate_gpu("dgx-a100-80g", t, gemms, 2, &cal, &err) == SPSIM_OK, "%s",
                  err.message);
    cJSON *root = cJSON_Parse(cal.profile_json);
    const cJSON *table = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "gpu"), "gemm_table");
    const cJSON *points = cJSON_GetObjectItemCaseSensitive(table, "points");
    ck_assert_int_eq(cJSON_GetArraySize(points), 1);
    ck_assert_double_eq(cJSON_GetArrayItem(cJSON_GetArrayItem(points, 0), 0)->valuedouble, 8192);
    ck_assert_ptr_nonnull(
        strstr(cJSON_GetObjectItemCaseSensitive(table, "source")->valuestring, "1 left out"));
    cJSON_Delete(root);
    spsim_hardware_destroy(load_profile(&cal)); /* the loader accepts what was written */
    spsim_calibration_free(&cal);
    spsim_bw_table_destroy(t);
}
END_TEST

START_TEST(gemm_and_hbm_samples_go_into_the_gpu_section)
{
    struct spsim_bw_table *t = load_log("h100x8_all_reduce_dgxc_benchmarking.txt", false);
    /* Below the H100's 989 TFLOP/s bf16 peak and 3350 GB/s HBM spec (hardware/dgx-h100.json). */
    struct spsim_gemm_sample gemms[] = {{4096, 4096, 4096, SPSIM_DTYPE_BF16, 2e-4, 687.2, false},
                                        {8192, 8192, 8192, SPSIM_DTYPE_BF16, 1.5e-3, 733.0, false},
                                        {8192, 8192, 8192, SPSIM_DTYPE_FP8, 8e-4, 1374.4, true}};
    struct spsim_hbm_sample hbm[] = {{1u << 30, 7.6e-4, 2825.2}, {1u << 28, 2e-4, 2684.4}};
    char base[4096];
    ck_assert_int_eq(
        spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, "dgx-h100", base, sizeof(base), NULL),
        SPSIM_OK);
    struct spsim_calibrate_options o;
    spsim_calibrate_defaults(&o);
    o.base_path = base;
    o.name = "gpu-run";
    const struct spsim_bw_table *tables[1] = {t};
    struct spsim_calibration cal;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_calibrate_profile(&o, tables, 1, gemms, 3, hbm, 2, &cal, &err) == SPSIM_OK,
                  "%s", err.message);
    cJSON *root = cJSON_Parse(cal.profile_json);
    ck_assert_double_eq(value_of(root, "gpu", "hbm_achievable_GBps"), 2825.2);
    const cJSON *table = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "gpu"), "gemm_table");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(table, "points")), 2);
    cJSON_Delete(root);
    spsim_calibration_free(&cal);
    /* One GPU: its one-rank "collectives" cross no link; the GEMMs and copies still count. */
    struct spsim_bw_table *one = NULL;
    ck_assert_int_eq(spsim_bw_table_create(&one), SPSIM_OK);
    struct spsim_bw_sample lone = {SPSIM_COLL_ALL_REDUCE, 1, 1, 1048576, 5e-6, 209.7, 0};
    ck_assert_int_eq(spsim_bw_table_add(one, &lone), SPSIM_OK);
    const struct spsim_bw_table *single[1] = {one};
    ck_assert_msg(spsim_calibrate_profile(&o, single, 1, gemms, 3, hbm, 2, &cal, &err) == SPSIM_OK,
                  "%s", err.message);
    ck_assert_uint_eq(cal.nrows, 0);
    ck_assert_uint_eq(cal.nnotes, 1);
    ck_assert(!cal.tier[0].measured && !cal.tier[1].measured);
    spsim_hardware_destroy(load_profile(&cal));
    spsim_calibration_free(&cal);
    spsim_bw_table_destroy(one);
    /* A copy faster than the spec, or a GEMM above the peak, means a wrong base. */
    hbm[0].GBps = 4000;
    ck_assert_int_eq(spsim_calibrate_profile(&o, tables, 1, gemms, 3, hbm, 2, &cal, &err),
                     SPSIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "HBM"));
    hbm[0].GBps = 2825.2;
    gemms[0].tflops = 1200;
    ck_assert_int_eq(spsim_calibrate_profile(&o, tables, 1, gemms, 3, hbm, 2, &cal, &err),
                     SPSIM_EINVAL);
    ck_assert_ptr_null(cal.profile_json);
    spsim_bw_table_destroy(t);
}
END_TEST

/* ---- errors and the atomic write ----------------------------------------------------------- */

START_TEST(refused_calibrations)
{
    struct spsim_calibration cal;
    struct spsim_error err = {0};
    ck_assert_int_eq(calibrate("dgx-a100-80g", NULL, &cal, &err), SPSIM_EINVAL);
    /* 400 GB/s busbw across 2 DGX A100 nodes needs 50 GB/s from each 200 Gb/s (25 GB/s) NIC. */
    struct spsim_bw_table *t =
        load_log(synthetic_log("all_reduce_perf", 16, 2, 40, 400, 30.0 / 16), true);
    ck_assert_int_eq(calibrate("dgx-a100-80g", t, &cal, &err), SPSIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "NIC"));
    ck_assert_ptr_null(cal.profile_json);
    spsim_bw_table_destroy(t);
    struct spsim_calibrate_options o;
    spsim_calibrate_defaults(&o);
    o.base_path = "/nonexistent/base.json";
    o.name = "x";
    t = load_log("a100x8_all_reduce_thanos_threads.txt", false);
    const struct spsim_bw_table *tables[1] = {t};
    ck_assert_int_eq(spsim_calibrate_profile(&o, tables, 1, NULL, 0, NULL, 0, &cal, &err),
                     SPSIM_EIO);
    o.name = "";
    ck_assert_int_eq(spsim_calibrate_profile(&o, tables, 1, NULL, 0, NULL, 0, &cal, &err),
                     SPSIM_EINVAL);
    spsim_bw_table_destroy(t);
}
END_TEST

START_TEST(write_is_atomic)
{
    struct spsim_bw_table *t = load_log("a100x8_all_reduce_thanos_threads.txt", false);
    struct spsim_calibration cal;
    ck_assert_int_eq(calibrate("dgx-a100-80g", t, &cal, NULL), SPSIM_OK);
    char dir[] = "/tmp/spsim-calib-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char out[4200], blocker[4200], inner[4300];
    snprintf(out, sizeof(out), "%s/out.json", dir);
    snprintf(blocker, sizeof(blocker), "%s/blocker.json", dir);
    snprintf(inner, sizeof(inner), "%s/keep", blocker);
    /* A directory where the file should go: the rename fails, nothing else appears. */
    ck_assert_int_eq(mkdir(blocker, 0755), 0);
    FILE *f = fopen(inner, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_calibration_write(&cal, blocker, &err), SPSIM_EIO);
    char listing[8192];
    snprintf(listing, sizeof(listing), "ls -A %s | wc -l", dir);
    FILE *ls = popen(listing, "r");
    int entries = -1;
    ck_assert_int_eq(fscanf(ls, "%d", &entries), 1);
    pclose(ls);
    ck_assert_int_eq(entries, 1); /* blocker.json only: no temporary file left */
    /* A successful write replaces the whole file; what is read back loads. */
    ck_assert_int_eq(spsim_calibration_write(&cal, out, &err), SPSIM_OK);
    struct spsim_hardware *hw = NULL;
    ck_assert_int_eq(spsim_hardware_load(out, &hw, &err), SPSIM_OK);
    spsim_hardware_destroy(hw);
    unlink(out);
    unlink(inner);
    rmdir(blocker);
    rmdir(dir);
    spsim_calibration_free(&cal);
    spsim_bw_table_destroy(t);
}
END_TEST

START_TEST(base_profile_for_a_gpu_name)
{
    char name[64];
    struct spsim_error err = {0};
    /* gpu.model of hardware/dgx-a100-80g.json */
    ck_assert_int_eq(
        spsim_calibrate_base_for_gpu("NVIDIA A100-SXM4-80GB", name, sizeof(name), &err), SPSIM_OK);
    ck_assert_str_eq(name, "dgx-a100-80g");
    /* The DGX H100's name for its GPU
     * (tests/data/nccl-tests/h100x8_all_reduce_dgxc_benchmarking.txt) */
    ck_assert_int_eq(
        spsim_calibrate_base_for_gpu("NVIDIA H100 80GB HBM3", name, sizeof(name), &err), SPSIM_OK);
    ck_assert_str_eq(name, "dgx-h100");
    ck_assert_int_eq(spsim_calibrate_base_for_gpu("NVIDIA H100", name, sizeof(name), &err),
                     SPSIM_EFIELD);
    ck_assert_ptr_nonnull(strstr(err.message, "--base"));
}
END_TEST

START_TEST(network_curve_must_span_domains)
{
    /* The loader derives a network curve on its own group: one inside an NVLink domain is no
     * network measurement. */
    struct spsim_bw_table *t =
        load_log("a100x8x2nodes_ib_hdr_all_reduce_azure_ndmv4_aks.txt", false);
    struct spsim_calibration cal;
    ck_assert_int_eq(calibrate("dgx-a100-80g", t, &cal, NULL), SPSIM_OK);
    cJSON *root = cJSON_Parse(cal.profile_json);
    cJSON *curve = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "network"),
                                         "busbw_curves"),
        "all_reduce");
    cJSON_ReplaceItemInObjectCaseSensitive(curve, "gpus", cJSON_CreateNumber(8));
    cJSON_ReplaceItemInObjectCaseSensitive(curve, "nodes", cJSON_CreateNumber(1));
    char *text = cJSON_Print(root);
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_hardware_parse(text, strlen(text), "edited", &hw, &err), SPSIM_EFIELD);
    ck_assert_ptr_nonnull(strstr(err.message, "network.busbw_curves.all_reduce.nodes"));
    cJSON_free(text);
    cJSON_Delete(root);
    spsim_calibration_free(&cal);
    spsim_bw_table_destroy(t);
}
END_TEST

/* nvlink.ring_measured_on names the collective the written ring busbw was measured on, so that
 * the engine adds only the ring tails beyond it (an unmeasured ReduceScatter on an AllGather
 * calibration, engine/collective_model.c spsim_ring_tail_extra_s). */
static const struct {
    const char *file, *basis;
} ring_bases[] = {
    {"h100x4of8_all_gather_waynehacking8.txt", "all_gather"},
    {"h100x4of8_reduce_scatter_waynehacking8.txt", "reduce_scatter"},
    {"h100x4of8_all_reduce_waynehacking8.txt", "all_reduce"},
};

START_TEST(ring_measured_on_names_the_measurement)
{
    struct spsim_bw_table *t = load_log(ring_bases[_i].file, false);
    struct spsim_calibration cal;
    ck_assert_int_eq(calibrate("dgx-h100", t, &cal, NULL), SPSIM_OK);
    cJSON *root = cJSON_Parse(cal.profile_json);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "nvlink"), "ring_measured_on");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "value")),
                     ring_bases[_i].basis);
    ck_assert_ptr_nonnull(strstr(source_of(root, "nvlink", "ring_measured_on"), "tails"));
    cJSON_Delete(root);
    spsim_calibration_free(&cal);
    spsim_bw_table_destroy(t);
}
END_TEST

/* ---- the shipped profiles' predictions ----------------------------------------------------- */

/* `spsim collective --format csv` at commit 646cf2c, before the model and loader changes of
 * this branch (time_s, full precision). A regression guard: these must not move. */
static const struct {
    const char *hw;
    enum spsim_coll_op op;
    uint32_t gpus, nodes;
    uint64_t size;
    double time_s;
} shipped[] = {
    /* Moved on purpose with NCCL's protocols across nodes (collective_model.c
     * spanning_terms): at 1 MiB the ring runs LL, whose bus bandwidth across 8 nodes is at
     * most llMaxBw 20.4 GB/s (was the NICs' 189.2: 0.0001796353884032283); at 1 GiB Simple
     * adds NCCL's Simple latency beyond LL's, (8.4 + 56·3.4 + 7·14) − (6.6 + 56·1 + 7·2.7) =
     * 215.32 µs (was 0.005679204). */
    {"dgx-a100-40g", SPSIM_COLL_ALL_GATHER, 64, 8, 1048576, 0.0002247776470588235},
    {"dgx-a100-40g", SPSIM_COLL_ALL_GATHER, 64, 8, 1073741824, 0.005894504},
    {"dgx-a100-80g", SPSIM_COLL_ALL_REDUCE, 8, 1, 1048576, 5.346846827240593e-05},
    {"dgx-a100-80g", SPSIM_COLL_ALL_REDUCE, 8, 1, 1073741824, 0.00820401760391198},
    /* Moved on purpose with NCCL's algorithm choice (engine/nccl_tuning.c): NCCL's tuner runs
     * this 2-node AllReduce of 1 MiB as Tree/LL128 (hand-worked in test_nccl_tuning.c). */
    /* Moved again with NCCL's protocols across nodes: Tree/LL128 at 120/128 and 0.92 of the
     * tree's bandwidth and LL128's latency beyond LL's (was 6.222281856815953e-05). */
    {"dgx-h100", SPSIM_COLL_ALL_REDUCE, 16, 2, 1048576, 9.050068819496757e-05},
    /* Moved on purpose with NVLSTree across nodes: NCCL's tuner runs 2 × 8 H100 at 1 GiB as
     * NVLSTree (test_nccl_nvls_tree.c), NVLink-bound here (was Ring/Simple, 0.005292876).
     * Moved again with NVLSTree's pipeline fill and NCCL's perChMaxNVLSTreeBw (8 · 57.7 GB/s,
     * test_nccl_nvls_tree.c spsim_times_nvls_tree; was 0.004018381984775384). */
    {"dgx-h100", SPSIM_COLL_ALL_REDUCE, 16, 2, 1073741824, 0.004580653688041595},
    /* Moved on purpose with the ring tails (nvlink.ring_measured_on "all_reduce"): an
     * AllGather (ReduceScatter) of S on n ranks inside the domain adds its loops' local-only
     * tails beyond the AllReduce's held in ring_busbw, 2·S/n − 2·(S/2)/n = S/n (3·S/n − S/n =
     * 2·S/n) HBM bytes at hbm_achievable_GBps (H100 2970, H200 4150). */
    {"dgx-h100", SPSIM_COLL_ALL_GATHER, 8, 1, 1048576,
     2.673231659348135e-05 + 1048576.0 / (8 * 2970e9)},
    {"dgx-h100", SPSIM_COLL_ALL_GATHER, 8, 1, 1073741824,
     0.002613072827962411 + 1073741824.0 / (8 * 2970e9)},
    {"hgx-h200", SPSIM_COLL_REDUCE_SCATTER, 4, 1, 1048576,
     1.4264399214670762e-05 + 2 * 1048576.0 / (4 * 4150e9)},
    {"hgx-h200", SPSIM_COLL_REDUCE_SCATTER, 4, 1, 1073741824,
     0.0023110157420988754 + 2 * 1073741824.0 / (4 * 4150e9)},
    {"dgx-b200", SPSIM_COLL_SEND_RECV, 16, 2, 1048576, 1.2109851880726261e-05},
    {"dgx-b200", SPSIM_COLL_SEND_RECV, 16, 2, 1073741824, 0.0028055026666666664},
    /* Moved on purpose with nvlink.nvls_min_gpus: the GB200 curve is a 4-GPU ring measurement
     * ([AZ-GB200]) and is now taken against the ring peak, not the NVLS one.
     * Moved again with NCCL's algorithm choice: two 72-GPU domains run Tree (LL at 1 MiB,
     * Simple at 1 GiB), whose NICs carry S per domain instead of the ring's 2(n−1)/n·S.
     * Moved again at 1 MiB with NVLSTree across nodes: NVLSTree/Simple's 2·log2(2) network
     * hops and one NVLS step instead of the tree's chain of 71 NVLink hops (was
     * 0.00022824488270377732).
     * Moved again with NVLSTree's fill (1 MiB, was 1.93204629997791e-05) and Simple's latency
     * beyond LL's on the 1 GiB tree (was 0.002858781716140801). */
    {"gb200-nvl72", SPSIM_COLL_ALL_REDUCE, 144, 36, 1048576, 2.4651881830065358e-05},
    {"gb200-nvl72", SPSIM_COLL_ALL_REDUCE, 144, 36, 1073741824, 0.003590700126240001},
};

START_TEST(shipped_predictions_unchanged)
{
    struct spsim_hardware *hw = testutil_hardware(shipped[_i].hw);
    struct spsim_collective_prediction p;
    ck_assert_int_eq(spsim_collective_predict(hw, shipped[_i].op, shipped[_i].gpus,
                                              shipped[_i].nodes, shipped[_i].size, &p, NULL),
                     SPSIM_OK);
    ck_assert_double_eq_tol(p.time_s, shipped[_i].time_s, 1e-14 * shipped[_i].time_s);
    spsim_hardware_destroy(hw);
}
END_TEST

static Suite *
calibrate_suite(void)
{
    Suite *s = suite_create("calibrate");
    TCase *repro = tcase_create("reproduction");
    tcase_add_loop_test(repro, calibrated_profile_reproduces_its_log, 0,
                        (int)(sizeof(logs) / sizeof(logs[0])));
    tcase_add_test(repro, all_to_all_and_send_recv_logs);
    tcase_add_loop_test(repro, ring_measured_on_names_the_measurement, 0,
                        (int)(sizeof(ring_bases) / sizeof(ring_bases[0])));
    tcase_set_timeout(repro, 60);
    suite_add_tcase(s, repro);
    TCase *profile = tcase_create("profile");
    tcase_add_test(profile, profile_keeps_the_base_and_names_the_calibration);
    tcase_add_test(profile, multi_node_log_sets_the_node_and_network_tier);
    tcase_add_test(profile, gemm_and_hbm_samples_go_into_the_gpu_section);
    tcase_add_test(profile, serial_epilogue_points_that_beat_hbm_are_left_out);
    tcase_add_test(profile, network_curve_must_span_domains);
    tcase_add_test(profile, base_profile_for_a_gpu_name);
    suite_add_tcase(s, profile);
    TCase *errors = tcase_create("errors");
    tcase_add_test(errors, refused_calibrations);
    tcase_add_test(errors, write_is_atomic);
    suite_add_tcase(s, errors);
    TCase *regress = tcase_create("shipped");
    tcase_add_loop_test(regress, shipped_predictions_unchanged, 0,
                        (int)(sizeof(shipped) / sizeof(shipped[0])));
    suite_add_tcase(s, regress);
    return s;
}

int
main(void)
{
    gsl_set_error_handler_off();
    return testutil_run(calibrate_suite());
}
