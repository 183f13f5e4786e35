/*
 * The nccl-tests importer: every public log of tests/data/nccl-tests/ (expected counts from its
 * README.md table, rows copied from the files), then small logs written here for each layout,
 * each tolerance and each error.
 */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

static const char *
log_path(const char *name)
{
    static char path[4096];
    const char *dir = getenv("SPSIM_DATA_DIR");
    snprintf(path, sizeof(path), "%s/tests/data/nccl-tests/%s", dir ? dir : ".", name);
    return path;
}

/* ---- the public logs ----------------------------------------------------------------------- */

/* Counts from tests/data/nccl-tests/README.md ("rows" column; AG/RS: 3 size-0 rows + 28; "each
 * split by INFO lines": 6; "1 row split by INFO line": 1); rank/node counts and collectives from
 * each file's rank lines, header or NCCL INFO lines. */
static const struct {
    const char *file;
    enum spsim_coll_op op;
    uint32_t ranks, nodes;
    size_t rows, zero, split;
    const char *gpu;
} logs[] = {
    {"a100x8_all_reduce_thanos_threads.txt", SPSIM_COLL_ALL_REDUCE, 8, 1, 30, 0, 0,
     "NVIDIA A100-SXM4-80GB"},
    {"a100x8x2nodes_ib_hdr_all_reduce_azure_ndmv4_aks.txt", SPSIM_COLL_ALL_REDUCE, 16, 2, 31, 0, 0,
     NULL},
    {"a100pcie_x2_pcie_all_reduce_medium_1MB-1GB_step10MB_thomaslie210.txt", SPSIM_COLL_ALL_REDUCE,
     2, 1, 103, 0, 0, "NVIDIA A100-PCIE-40GB"},
    {"h100x8_all_reduce_dgxc_benchmarking.txt", SPSIM_COLL_ALL_REDUCE, 8, 1, 32, 0, 0,
     "NVIDIA H100 80GB HBM3"},
    {"h100x4of8_all_reduce_waynehacking8.txt", SPSIM_COLL_ALL_REDUCE, 4, 1, 31, 0, 0,
     "NVIDIA H100 80GB HBM3"},
    {"h100x4of8_all_gather_waynehacking8.txt", SPSIM_COLL_ALL_GATHER, 4, 1, 28, 3, 0,
     "NVIDIA H100 80GB HBM3"},
    {"h100x4of8_reduce_scatter_waynehacking8.txt", SPSIM_COLL_REDUCE_SCATTER, 4, 1, 28, 3, 0,
     "NVIDIA H100 80GB HBM3"},
    {"h100x6of8_all_reduce_NCCL_ALGO_Ring_waynehacking8.txt", SPSIM_COLL_ALL_REDUCE, 6, 1, 6, 0, 6,
     "NVIDIA H100 80GB HBM3"},
    {"h100x4x2nodes_ib_ndr200_all_reduce_snellius_odissei.txt", SPSIM_COLL_ALL_REDUCE, 8, 2, 31, 0,
     1, "NVIDIA H100"},
    /* SYNTHETIC (README): alltoall_perf's layout, busbw = algbw·7/8 on 8 ranks. */
    {"synthetic_h100x8_alltoall.txt", SPSIM_COLL_ALL_TO_ALL, 8, 1, 11, 0, 0,
     "NVIDIA H100 80GB HBM3"},
};

START_TEST(public_log_counts)
{
    struct spsim_bw_table *t = NULL;
    ck_assert_int_eq(spsim_bw_table_create(&t), SPSIM_OK);
    struct spsim_nccl_log_summary s;
    struct spsim_error err = {0};
    int rc = spsim_nccl_log_load(log_path(logs[_i].file), NULL, t, &s, &err);
    ck_assert_msg(rc == SPSIM_OK, "%s: %s", logs[_i].file, err.message);
    ck_assert_int_eq(s.op, logs[_i].op);
    ck_assert_uint_eq(s.ranks, logs[_i].ranks);
    ck_assert_uint_eq(s.nodes, logs[_i].nodes);
    ck_assert_uint_eq(s.rows, logs[_i].rows);
    ck_assert_uint_eq(s.zero_rows, logs[_i].zero);
    ck_assert_uint_eq(s.split_rows, logs[_i].split);
    /* The thanos log's header: "every row re-checked arithmetically ... 0 mismatches"; the
     * others were printed by nccl-tests itself, so their rows agree to the printed digits. */
    ck_assert_uint_eq(s.mismatched_rows, 0);
    ck_assert_uint_eq(spsim_bw_table_size(t), logs[_i].rows);
    const char *gpu = spsim_bw_table_info(t, "gpu");
    if (logs[_i].gpu)
        ck_assert_str_eq(gpu, logs[_i].gpu);
    else
        ck_assert_ptr_null(gpu);
    spsim_bw_table_destroy(t);
}
END_TEST

/* Rows copied from the files (size, out-of-place time in µs); split rows among them. */
static const struct {
    const char *file;
    uint64_t size;
    double time_us;
} exact[] = {
    {"a100x8_all_reduce_thanos_threads.txt", 1073741824, 8247.6},
    {"a100x8_all_reduce_thanos_threads.txt", 8, 40.12},
    {"a100x8x2nodes_ib_hdr_all_reduce_azure_ndmv4_aks.txt", 8589934592, 85129},
    {"a100pcie_x2_pcie_all_reduce_medium_1MB-1GB_step10MB_thomaslie210.txt", 1070596096, 72437.4},
    {"h100x8_all_reduce_dgxc_benchmarking.txt", 17179869184ull, 62648},
    {"h100x4of8_all_gather_waynehacking8.txt", 64, 16.98}, /* first row after size 0 */
    /* Cut twice: out-of-place time at line 430 (1303.96), in-place at line 482 (1303.95). */
    {"h100x6of8_all_reduce_NCCL_ALGO_Ring_waynehacking8.txt", 268435456, 1303.96},
    {"h100x6of8_all_reduce_NCCL_ALGO_Ring_waynehacking8.txt", 8589934592, 39015.0}, /* line 955 */
    {"h100x4x2nodes_ib_ndr200_all_reduce_snellius_odissei.txt", 2097152, 87.18},    /* split */
    {"h100x4x2nodes_ib_ndr200_all_reduce_snellius_odissei.txt", 16384, 90.85},
};

START_TEST(public_log_exact_rows)
{
    struct spsim_bw_table *t = NULL;
    ck_assert_int_eq(spsim_bw_table_create(&t), SPSIM_OK);
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_nccl_log_load(log_path(exact[_i].file), NULL, t, NULL, &err), SPSIM_OK);
    const struct spsim_bw_sample *hit = NULL;
    for (size_t i = 0; i < spsim_bw_table_size(t); i++)
        if (spsim_bw_table_get(t, i)->size_bytes == exact[_i].size)
            hit = spsim_bw_table_get(t, i);
    ck_assert_msg(hit != NULL, "%s: no row of %llu B", exact[_i].file,
                  (unsigned long long)exact[_i].size);
    ck_assert_double_eq_tol(hit->time_s, exact[_i].time_us * 1e-6, 1e-12 * exact[_i].time_us);
    /* algbw = size / time, GB = 1e9 (nccl-tests.md §1.1) */
    ck_assert_double_eq_tol(hit->algbw_GBps, exact[_i].size / (exact[_i].time_us * 1e-6) / 1e9,
                            1e-9 * hit->algbw_GBps);
    spsim_bw_table_destroy(t);
}
END_TEST

START_TEST(public_log_provenance)
{
    struct spsim_bw_table *t = NULL;
    ck_assert_int_eq(spsim_bw_table_create(&t), SPSIM_OK);
    ck_assert_int_eq(spsim_nccl_log_load(log_path("h100x4of8_all_reduce_waynehacking8.txt"), NULL,
                                         t, NULL, NULL),
                     SPSIM_OK);
    /* "# nccl-tests version 2.18.3 nccl-headers=22902 nccl-library=22902": 2.29.2 */
    ck_assert_str_eq(spsim_bw_table_info(t, "nccl_version"), "2.29.2");
    ck_assert_str_eq(spsim_bw_table_info(t, "nccl_tests_version"), "2.18.3");
    ck_assert_str_eq(spsim_bw_table_info(t, "hosts"), "8899f5769284");
    ck_assert_ptr_nonnull(strstr(spsim_bw_table_info(t, "log_command"), "all_reduce_perf"));
    spsim_bw_table_destroy(t);
    ck_assert_int_eq(spsim_bw_table_create(&t), SPSIM_OK);
    ck_assert_int_eq(
        spsim_nccl_log_load(log_path("a100x8x2nodes_ib_hdr_all_reduce_azure_ndmv4_aks.txt"), NULL,
                            t, NULL, NULL),
        SPSIM_OK);
    ck_assert_str_eq(spsim_bw_table_info(t, "hosts"),
                     "nccl-allreduce-job1-mpiworker-1,nccl-allreduce-job1-mpiworker-0");
    spsim_bw_table_destroy(t);
}
END_TEST

/* ---- small logs ---------------------------------------------------------------------------- */

struct parsed {
    int rc;
    struct spsim_nccl_log_summary s;
    struct spsim_error err;
    struct spsim_bw_table *t;
};

static struct parsed
parse(const char *text, const char *origin, enum spsim_coll_op op, uint32_t gpus, uint32_t nodes)
{
    struct parsed p = {0};
    struct spsim_nccl_log_options o;
    spsim_nccl_log_defaults(&o);
    o.op = op;
    o.gpus = gpus;
    o.nodes = nodes;
    ck_assert_int_eq(spsim_bw_table_create(&p.t), SPSIM_OK);
    p.rc = spsim_nccl_log_parse(text, strlen(text), origin, &o, p.t, &p.s, &p.err);
    return p;
}

#define NEW_HEADER                                                                                 \
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "    \
    "time "                                                                                        \
    "  algbw   busbw #wrong\n"
#define OLD_HEADER                                                                                 \
    "#       size         count    type   redop     time   algbw   busbw  error     time   algbw " \
    "  busbw  error\n"
#define RANKS_1x4                                                                                  \
    "#  Rank  0 Group  0 Pid  100 on  nodeA device  0 [0x07] NVIDIA A100-SXM4-80GB\n"              \
    "#  Rank  1 Group  0 Pid  100 on  nodeA device  1 [0x0a] NVIDIA A100-SXM4-80GB\n"              \
    "#  Rank  2 Group  0 Pid  100 on  nodeA device  2 [0x45] NVIDIA A100-SXM4-80GB\n"              \
    "#  Rank  3 Group  0 Pid  100 on  nodeA device  3 [0x4b] NVIDIA A100-SXM4-80GB\n"

/* Rows below: AllReduce on 4 ranks, busbw = algbw × 2·3/4 = 1.5 algbw (nccl-tests.md §1.1):
 * 1048576 B in 50.00 µs -> algbw 20.97, busbw 31.46; 8388608 B in 100.0 µs -> 83.89, 125.83. */
#define ROW_1M                                                                                     \
    "     1048576        262144     float     sum      -1    50.00   20.97   31.46      0    "     \
    "50.00   20.97   31.46      0\n"
#define ROW_8M                                                                                     \
    "     8388608       2097152     float     sum      -1    100.0   83.89  125.83      0    "     \
    "100.0   83.89  125.83      0\n"

START_TEST(new_layout_with_header)
{
    struct parsed p =
        parse("# Collective test starting: all_reduce_perf\n" RANKS_1x4 NEW_HEADER ROW_1M ROW_8M,
              "x.txt", SPSIM_COLL_COUNT, 0, 0);
    ck_assert_msg(p.rc == SPSIM_OK, "%s", p.err.message);
    ck_assert_int_eq(p.s.op, SPSIM_COLL_ALL_REDUCE);
    ck_assert_str_eq(p.s.op_from, "log");
    ck_assert_uint_eq(p.s.ranks, 4);
    ck_assert_uint_eq(p.s.nodes, 1);
    ck_assert_uint_eq(p.s.rows, 2);
    ck_assert_uint_eq(p.s.mismatched_rows, 0);
    const struct spsim_bw_sample *x = spsim_bw_table_get(p.t, 1);
    ck_assert_uint_eq(x->size_bytes, 8388608);
    ck_assert_double_eq_tol(x->time_s, 100e-6, 1e-15);
    ck_assert_double_eq_tol(x->busbw_GBps, 8388608 / 100e-6 / 1e9 * 1.5, 1e-9);
    spsim_bw_table_destroy(p.t);
}
END_TEST

START_TEST(old_layout_error_column_no_root)
{
    /* nccl-tests before #wrong and root (nccl-tests.md §1.3): an 'error' column. */
    const char *rows = "     1048576        262144   float     sum    50.00   20.97   31.46  1e-07 "
                       "   50.00   20.97   31.46  1e-07\n"
                       "     8388608       2097152   float     sum    100.0   83.89  125.83  1e-07 "
                       "   100.0   83.89  125.83    N/A\n";
    char text[2048];
    snprintf(text, sizeof(text), "%s%s%s", RANKS_1x4, OLD_HEADER, rows);
    struct parsed p = parse(text, "all_reduce.log", SPSIM_COLL_COUNT, 0, 0);
    ck_assert_msg(p.rc == SPSIM_OK, "%s", p.err.message);
    ck_assert_str_eq(p.s.op_from, "file name");
    ck_assert_uint_eq(p.s.rows, 2);
    ck_assert_double_eq_tol(spsim_bw_table_get(p.t, 0)->time_s, 50e-6, 1e-15);
    spsim_bw_table_destroy(p.t);
    /* The same rows without any header: the layout is read off the rows. */
    p = parse(rows, "log", SPSIM_COLL_ALL_REDUCE, 4, 1);
    ck_assert_msg(p.rc == SPSIM_OK, "%s", p.err.message);
    ck_assert_uint_eq(p.s.rows, 2);
    ck_assert_str_eq(p.s.ranks_from, "--gpus");
    ck_assert_double_eq_tol(spsim_bw_table_get(p.t, 1)->time_s, 100e-6, 1e-15);
    spsim_bw_table_destroy(p.t);
}
END_TEST

START_TEST(no_header_new_layout)
{
    struct parsed p = parse(ROW_1M ROW_8M, "log", SPSIM_COLL_ALL_REDUCE, 4, 1);
    ck_assert_msg(p.rc == SPSIM_OK, "%s", p.err.message);
    ck_assert_uint_eq(p.s.rows, 2);
    ck_assert_uint_eq(p.s.mismatched_rows, 0);
    spsim_bw_table_destroy(p.t);
}
END_TEST

#define INFO(host) host ":100:200 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"

START_TEST(info_lines_between_and_inside_rows)
{
    /* Cut after root and continued (the 6-of-8 H100 log), cut after the out-of-place group
     * (the Snellius log cuts after root with both groups following). */
    const char *text = INFO("nodeA") RANKS_1x4 NEW_HEADER INFO(
        "nodeA") "     1048576        262144     float     sum      -1" INFO("nodeA")
        INFO("nodeA") "    50.00   20.97   31.46      0    50.00   20.97   31.46      0\n"
                      "     8388608       2097152     float     sum      -1    100.0   83.89  "
                      "125.83      0" INFO("nodeA") "    100.0   83.89  125.83      0\n"
                                                    "# Avg bus bandwidth    : 78.6\n" INFO("nodeA");
    struct parsed p = parse(text, "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0);
    ck_assert_msg(p.rc == SPSIM_OK, "%s", p.err.message);
    ck_assert_uint_eq(p.s.rows, 2);
    ck_assert_uint_eq(p.s.split_rows, 2);
    ck_assert_double_eq_tol(spsim_bw_table_get(p.t, 0)->time_s, 50e-6, 1e-15);
    ck_assert_double_eq_tol(spsim_bw_table_get(p.t, 1)->time_s, 100e-6, 1e-15);
    spsim_bw_table_destroy(p.t);
}
END_TEST

START_TEST(zero_rows_are_skipped_and_counted)
{
    const char *text =
        RANKS_1x4 NEW_HEADER "           0             0     float    none      -1     0.42    "
                             "0.00    0.00      0     0.46    0.00    0.00      0\n"
                             "           0             0     float    none      -1     0.44    "
                             "0.00    0.00      0     0.44    0.00    0.00      0\n" ROW_1M;
    struct parsed p = parse(text, "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0);
    ck_assert_msg(p.rc == SPSIM_OK, "%s", p.err.message);
    ck_assert_uint_eq(p.s.zero_rows, 2);
    ck_assert_uint_eq(p.s.rows, 1);
    spsim_bw_table_destroy(p.t);
}
END_TEST

START_TEST(rank_layouts_threads_and_mpi)
{
    /* -t 2 -g 2 on two hosts: four rank lines, two hosts. MPI -g 1 prints the same lines. */
    const char *text =
        "# nThread 2 nGpus 2 minBytes 8 maxBytes 8388608 step: 2(factor) warmup iters: 5 iters: "
        "20\n"
        "#  Rank  0 Group  0 Pid  100 on  nodeA device  0 [0x07] NVIDIA H100 80GB HBM3\n"
        "#  Rank  1 Group  0 Pid  100 on  nodeA device  1 [0x0a] NVIDIA H100 80GB HBM3\n"
        "#  Rank  2 Group  1 Pid  200 on  nodeB device  0 [0x07] NVIDIA H100 80GB HBM3\n"
        "#  Rank  3 Group  1 Pid  200 on  nodeB device  1 [0x0a] NVIDIA H100 80GB HBM3\n" NEW_HEADER
            ROW_1M;
    struct parsed p = parse(text, "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0);
    ck_assert_msg(p.rc == SPSIM_OK, "%s", p.err.message);
    ck_assert_uint_eq(p.s.ranks, 4);
    ck_assert_uint_eq(p.s.nodes, 2);
    ck_assert_str_eq(spsim_bw_table_info(p.t, "process_layout"),
                     "2 thread(s) x 2 GPU(s) per process");
    ck_assert_str_eq(spsim_bw_table_info(p.t, "gpu"), "NVIDIA H100 80GB HBM3");
    spsim_bw_table_destroy(p.t);
    /* Without rank lines: NCCL INFO nranks and the hosts of the INFO lines. */
    text = "h1:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE\n"
           "h2:3:4 [0] NCCL INFO comm 0x2 rank 2 nranks 4 cudaDev 0 busId 1000 - Init "
           "COMPLETE\n" NEW_HEADER ROW_1M;
    p = parse(text, "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0);
    ck_assert_msg(p.rc == SPSIM_OK, "%s", p.err.message);
    ck_assert_uint_eq(p.s.ranks, 4);
    ck_assert_str_eq(p.s.ranks_from, "NCCL INFO nranks");
    ck_assert_uint_eq(p.s.nodes, 2);
    ck_assert_str_eq(p.s.nodes_from, "NCCL INFO hosts");
    spsim_bw_table_destroy(p.t);
}
END_TEST

START_TEST(sendrecv_and_alltoall_factors)
{
    /* sendrecv: busbw = algbw; alltoall: (n−1)/n = 0.75 on 4 ranks (nccl-tests.md §1.1).
     * 1048576 B in 50.00 µs: algbw 20.97. */
    struct parsed p = parse("# Collective test starting: sendrecv_perf\n" RANKS_1x4 NEW_HEADER
                            "     1048576        262144     float     sum      -1    50.00   20.97 "
                            "  20.97      0    50.00   20.97   20.97      0\n",
                            "x", SPSIM_COLL_COUNT, 0, 0);
    ck_assert_msg(p.rc == SPSIM_OK, "%s", p.err.message);
    ck_assert_int_eq(p.s.op, SPSIM_COLL_SEND_RECV);
    ck_assert_uint_eq(p.s.mismatched_rows, 0);
    spsim_bw_table_destroy(p.t);
    p = parse("# Collective test starting: alltoall_perf\n" RANKS_1x4 NEW_HEADER
              "     1048576         65536     float    none      -1    50.00   20.97   15.73      "
              "0    50.00   20.97   15.73      0\n",
              "x", SPSIM_COLL_COUNT, 0, 0);
    ck_assert_msg(p.rc == SPSIM_OK, "%s", p.err.message);
    ck_assert_int_eq(p.s.op, SPSIM_COLL_ALL_TO_ALL);
    ck_assert_uint_eq(p.s.mismatched_rows, 0);
    spsim_bw_table_destroy(p.t);
}
END_TEST

START_TEST(disagreeing_rows_are_reported)
{
    /* algbw printed 21.50 where 1048576 / 50 µs = 20.97 GB/s: 2.5 % off, a slip of a digit
     * rather than a wrong size or time (refused from 10 %: wrong_rows_are_refused). */
    const char *text =
        RANKS_1x4 NEW_HEADER ROW_8M "     1048576        262144     float     sum      -1    50.00 "
                                    "  21.50   31.46      0    50.00   20.97   31.46      0\n";
    struct parsed p = parse(text, "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0);
    ck_assert_msg(p.rc == SPSIM_OK, "%s", p.err.message);
    ck_assert_uint_eq(p.s.mismatched_rows, 1);
    ck_assert_uint_eq(p.s.nnotes, 1);
    ck_assert_uint_eq(p.s.notes[0].line, 7);
    ck_assert_ptr_nonnull(strstr(p.s.notes[0].text, "algbw"));
    spsim_bw_table_destroy(p.t);
}
END_TEST

/* ---- errors -------------------------------------------------------------------------------- */

static const struct {
    const char *what, *text, *origin;
    enum spsim_coll_op op;
    uint32_t gpus, nodes;
    int rc;
    const char *message; /* a part of the expected message */
} bad[] = {
    {"truncated row",
     RANKS_1x4 NEW_HEADER ROW_1M
     "     8388608       2097152     float     sum      -1    100.0   83.89\n",
     "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE, "all_reduce.txt: line 7: truncated"},
    {"cut row never continued",
     RANKS_1x4 NEW_HEADER "     8388608       2097152     float     sum      -1" INFO(
         "nodeA") "# Out of bounds values : 0 OK\n",
     "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE, "line 6: truncated"},
    {"negative time",
     RANKS_1x4 NEW_HEADER "     1048576        262144     float     sum      -1   -50.00   20.97   "
                          "31.46      0    50.00   20.97   31.46      0\n",
     "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE, "line 6: negative time"},
    {"no data rows", RANKS_1x4 NEW_HEADER "# Avg bus bandwidth    : 0\n", "all_reduce.txt",
     SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE, "line 6: no data rows"},
    {"numbers without a row", RANKS_1x4 NEW_HEADER "    50.00   20.97   31.46      0\n",
     "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE, "line 6: numbers that continue no"},
    {"garbled row",
     RANKS_1x4 NEW_HEADER "     1048576        262144  float sum -1 fast 20.97 31.46 0\n",
     "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE, "line 6: time, algbw"},
    {"collective unknown", RANKS_1x4 NEW_HEADER ROW_1M, "results.txt", SPSIM_COLL_COUNT, 0, 0,
     SPSIM_EFIELD, "give it with --op"},
    {"file name names two", RANKS_1x4 NEW_HEADER ROW_1M, "all_reduce_vs_all_gather.txt",
     SPSIM_COLL_COUNT, 0, 0, SPSIM_EFIELD, "names several"},
    {"collective not modelled",
     "# Collective test starting: broadcast_perf\n" RANKS_1x4 NEW_HEADER ROW_1M, "x.txt",
     SPSIM_COLL_COUNT, 0, 0, SPSIM_EFIELD, "line 1: 'broadcast_perf' is not"},
    {"--op contradicts the log",
     "# Collective test starting: all_reduce_perf\n" RANKS_1x4 NEW_HEADER ROW_1M, "x.txt",
     SPSIM_COLL_ALL_GATHER, 0, 0, SPSIM_EFIELD, "measured all_reduce, not all_gather"},
    {"--gpus contradicts the log", RANKS_1x4 NEW_HEADER ROW_1M, "all_reduce.txt", SPSIM_COLL_COUNT,
     8, 0, SPSIM_EFIELD, "rank lines give 4, but --gpus says 8"},
    {"no rank count", NEW_HEADER ROW_1M, "all_reduce.txt", SPSIM_COLL_COUNT, 0, 1, SPSIM_EFIELD,
     "give it with --gpus"},
    {"no node count", NEW_HEADER ROW_1M, "all_reduce.txt", SPSIM_COLL_COUNT, 4, 0, SPSIM_EFIELD,
     "give it with --nodes"},
    {"busbw factor of another rank count", NEW_HEADER ROW_1M ROW_8M ROW_1M, "all_reduce.txt",
     SPSIM_COLL_COUNT, 8, 1, SPSIM_EFIELD, "the rank count or the collective is wrong"},
    /* Rows that contradict themselves (issue 15): refused at their line, nothing imported. */
    {"size and count swapped",
     RANKS_1x4 NEW_HEADER ROW_1M "       2097152    8388608     float     sum      -1    100.0   "
                                 "83.89  125.83      0    100.0   83.89  125.83      0\n",
     "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE,
     "line 7: size 2097152 B is not count 8388608 x 4 B"},
    {"AllGather size not count x 4 B x 4 ranks",
     RANKS_1x4 NEW_HEADER "     1048576        262144     float    none      -1    50.00   20.97  "
                          " 15.73      0    50.00   20.97   15.73      0\n",
     "all_gather.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE,
     "line 6: size 1048576 B is not count 262144 x 4 B x the ranks of all_gather"},
    {"size 2^64-1",
     RANKS_1x4 NEW_HEADER
     "18446744073709551615    262144     float     sum      -1    50.00   20.97 "
     "  31.46      0    50.00   20.97   31.46      0\n",
     "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE,
     "line 6: size 18446744073709551615 B is beyond any GPU memory"},
    {"hex float time",
     RANKS_1x4 NEW_HEADER "     1048576        262144     float     sum      -1    0x1p5   20.97  "
                          " 31.46      0    50.00   20.97   31.46      0\n",
     "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE,
     "line 6: time, algbw, busbw and #wrong "
     "must be decimal numbers"},
    {"time 1e300",
     RANKS_1x4 NEW_HEADER "     1048576        262144     float     sum      -1    1e300   20.97  "
                          " 31.46      0    50.00   20.97   31.46      0\n",
     "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE, "line 6: time, algbw"},
    {"time 1e-300",
     RANKS_1x4 NEW_HEADER "     1048576        262144     float     sum      -1   1e-300   20.97  "
                          " 31.46      0    50.00   20.97   31.46      0\n",
     "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE, "line 6: time, algbw"},
    {"time beyond 10^9 us",
     RANKS_1x4 NEW_HEADER "           8             2     float     sum      -1 2000000000.00    "
                          "0.00    0.00      0    50.00    0.00    0.00      0\n",
     "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE, "line 6: time 2e+09 us is beyond"},
    {"time 13x what algbw says",
     RANKS_1x4 NEW_HEADER ROW_1M "     8388608       2097152     float     sum      -1   1300.0   "
                                 "83.89  125.83      0    100.0   83.89  125.83      0\n",
     "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE,
     "line 7: algbw 83.89 GB/s printed, but size and time give 6.453: the size or the time is "
     "wrong"},
    {"8 GiB in 0.01 us",
     RANKS_1x4 NEW_HEADER "  8589934592    2147483648     float     sum      -1     0.01 "
                          "858993459.20 1288490188.80  0     0.01 858993459.20 1288490188.80  0\n",
     "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE,
     "line 6: size and time give 1.288e+09 GB/s, beyond the 10^6 GB/s"},
    {"row cut by a line of an unknown host",
     RANKS_1x4 NEW_HEADER
     "     1048576        262144     float     sum      -1other:1:2 [0] NCCL INFO x\n",
     "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0, SPSIM_EPARSE, "line 6:"},
};

START_TEST(malformed_logs_fail_with_file_and_line)
{
    struct parsed p = parse(bad[_i].text, bad[_i].origin, bad[_i].op, bad[_i].gpus, bad[_i].nodes);
    ck_assert_msg(p.rc == bad[_i].rc, "%s: rc %d (%s)", bad[_i].what, p.rc, p.err.message);
    ck_assert_msg(strstr(p.err.message, bad[_i].message) != NULL, "%s: message '%s' lacks '%s'",
                  bad[_i].what, p.err.message, bad[_i].message);
    ck_assert_ptr_null(strchr(p.err.message, '\n'));
    ck_assert_uint_eq(spsim_bw_table_size(p.t), 0); /* nothing half-imported */
    spsim_bw_table_destroy(p.t);
}
END_TEST

/* 1e-300 us written out in full: once "out of memory", the label of every failure of the
 * sample store; now the row's line. */
START_TEST(tiny_time_names_its_line)
{
    char text[2048], tiny[320] = "0.";
    memset(tiny + 2, '0', 299);
    tiny[301] = '1';
    tiny[302] = '\0';
    snprintf(text, sizeof(text),
             RANKS_1x4 NEW_HEADER "     1048576        262144     float     sum      -1 %s 20.97 "
                                  "31.46      0    50.00   20.97   31.46      0\n",
             tiny);
    struct parsed p = parse(text, "all_reduce.txt", SPSIM_COLL_COUNT, 0, 0);
    ck_assert_int_eq(p.rc, SPSIM_EPARSE);
    ck_assert_str_eq(p.err.message, "all_reduce.txt: line 6: size and time give inf GB/s, beyond "
                                    "the 10^6 GB/s a profile may hold");
    spsim_bw_table_destroy(p.t);
}
END_TEST

START_TEST(invalid_arguments)
{
    struct spsim_bw_table *t = NULL;
    ck_assert_int_eq(spsim_bw_table_create(&t), SPSIM_OK);
    ck_assert_int_eq(spsim_nccl_log_parse(NULL, 0, "x", NULL, t, NULL, NULL), SPSIM_EINVAL);
    ck_assert_int_eq(spsim_nccl_log_parse("", 0, "x", NULL, NULL, NULL, NULL), SPSIM_EINVAL);
    ck_assert_int_eq(spsim_nccl_log_load("/nonexistent/log.txt", NULL, t, NULL, NULL), SPSIM_EIO);
    spsim_bw_table_destroy(t);
}
END_TEST

static Suite *
nccl_log_suite(void)
{
    Suite *s = suite_create("nccl_log");
    TCase *pub = tcase_create("public logs");
    tcase_add_loop_test(pub, public_log_counts, 0, (int)(sizeof(logs) / sizeof(logs[0])));
    tcase_add_loop_test(pub, public_log_exact_rows, 0, (int)(sizeof(exact) / sizeof(exact[0])));
    tcase_add_test(pub, public_log_provenance);
    suite_add_tcase(s, pub);
    TCase *small = tcase_create("layouts and tolerance");
    tcase_add_test(small, new_layout_with_header);
    tcase_add_test(small, old_layout_error_column_no_root);
    tcase_add_test(small, no_header_new_layout);
    tcase_add_test(small, info_lines_between_and_inside_rows);
    tcase_add_test(small, zero_rows_are_skipped_and_counted);
    tcase_add_test(small, rank_layouts_threads_and_mpi);
    tcase_add_test(small, sendrecv_and_alltoall_factors);
    tcase_add_test(small, disagreeing_rows_are_reported);
    suite_add_tcase(s, small);
    TCase *errors = tcase_create("errors");
    tcase_add_loop_test(errors, malformed_logs_fail_with_file_and_line, 0,
                        (int)(sizeof(bad) / sizeof(bad[0])));
    tcase_add_test(errors, invalid_arguments);
    tcase_add_test(errors, tiny_time_names_its_line);
    suite_add_tcase(s, errors);
    return s;
}

int
main(void)
{
    gsl_set_error_handler_off();
    return testutil_run(nccl_log_suite());
}
