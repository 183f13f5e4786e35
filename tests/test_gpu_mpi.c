/*
 * The MPI side of the multi-node calibration, without a GPU: run as `mpirun -np 2 test_gpu_mpi`
 * on one host (tests/meson.build does). Every rank checks what it learns about the job: two
 * ranks on one node, each its own local rank, rank 0's bytes broadcast, the average of the
 * ranks (0 + 1) / 2, this host's name, and that an MPI launch turns the `mpi` option on.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu_internal.h"
#include "testutil.h"

START_TEST(mpi_launch_is_detected)
{
    struct spsim_gpu_calibrate_options o;
    spsim_gpu_calibrate_defaults(&o);
    ck_assert(o.mpi);
    o.gpus = 2; /* under MPI each rank drives one GPU */
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_gpu_calibrate_check(&o, &err), SPSIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "'gpus'"));
}
END_TEST

START_TEST(mpi_job_is_two_ranks_on_one_node)
{
    int rank = -1, size = -1, local = -1, nodes = -1;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_gpu_mpi_begin(&rank, &size, &local, &nodes, &err) == SPSIM_OK, "%s",
                  err.message);
    ck_assert_int_eq(size, 2);
    ck_assert(rank == 0 || rank == 1);
    ck_assert_int_eq(local, rank);
    ck_assert_int_eq(nodes, 1);
    ck_assert_int_eq(spsim_gpu_impl_mpi_rank(), rank);

    char word[16] = "";
    if (rank == 0)
        strcpy(word, "from rank 0");
    ck_assert_msg(spsim_gpu_mpi_bcast(word, sizeof(word), &err) == SPSIM_OK, "%s", err.message);
    ck_assert_str_eq(word, "from rank 0");

    double v = rank;
    ck_assert_msg(spsim_gpu_mpi_average(&v, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_double_eq_tol(v, 0.5, 1e-15);

    char hosts[256], mine[64] = "";
    ck_assert_int_eq(gethostname(mine, sizeof(mine) - 1), 0);
    ck_assert_msg(spsim_gpu_mpi_hosts(hosts, sizeof(hosts), &err) == SPSIM_OK, "%s", err.message);
    ck_assert_str_eq(hosts, mine); /* both ranks here: one distinct name */
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("gpu_mpi");
    TCase *tc = tcase_create("mpi");
    tcase_add_test(tc, mpi_launch_is_detected);
    tcase_add_test(tc, mpi_job_is_two_ranks_on_one_node);
    suite_add_tcase(s, tc);
    int rc = testutil_run_nofork(s);
    spsim_gpu_impl_finalize();
    return rc;
}
