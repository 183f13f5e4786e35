/*
 * MPI for the multi-node calibration: `mpirun -np N spsim calibrate`, one rank per GPU. MPI's
 * default error handler aborts the job; spsim switches MPI_COMM_WORLD to MPI_ERRORS_RETURN and
 * checks every call, so that a failure becomes SPSIM_EGPU with MPI's own words.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_internal.h"

#if HAVE_MPI

#include <mpi.h>

static bool initialized_here; /* MPI_Init was called by spsim, which then finalizes it */
static bool failed;           /* a calibration failed: see spsim_gpu_mpi_note_failure() */
static int world_rank;

static int
mpi_check(int code, const char *call, struct spsim_error *err)
{
    if (code == MPI_SUCCESS)
        return SPSIM_OK;
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof(text), "error %d", code);
    return spsim_fail(err, SPSIM_EGPU, "%s: %s", call, text);
}

int
spsim_gpu_mpi_begin(int *rank, int *size, int *local_rank, int *nodes, struct spsim_error *err)
{
    int done = 0, rc = mpi_check(MPI_Initialized(&done), "MPI_Initialized", err);
    if (rc == SPSIM_OK && !done) {
        rc = mpi_check(MPI_Init(NULL, NULL), "MPI_Init", err);
        initialized_here = rc == SPSIM_OK;
    }
    if (rc == SPSIM_OK)
        rc = mpi_check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
                       "MPI_Comm_set_errhandler", err);
    if (rc == SPSIM_OK)
        rc = mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, rank), "MPI_Comm_rank", err);
    if (rc == SPSIM_OK)
        rc = mpi_check(MPI_Comm_size(MPI_COMM_WORLD, size), "MPI_Comm_size", err);
    /* The ranks sharing this node's memory: the local rank picks a GPU (spsim_gpu_rank_device). */
    MPI_Comm node = MPI_COMM_NULL;
    if (rc == SPSIM_OK)
        rc = mpi_check(
            MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type", err);
    if (rc == SPSIM_OK)
        rc = mpi_check(MPI_Comm_rank(node, local_rank), "MPI_Comm_rank (node)", err);
    int first = rc == SPSIM_OK && *local_rank == 0;
    if (rc == SPSIM_OK)
        rc = mpi_check(MPI_Allreduce(&first, nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                       "MPI_Allreduce (node count)", err);
    if (node != MPI_COMM_NULL)
        (void)MPI_Comm_free(&node);
    if (rc == SPSIM_OK)
        world_rank = *rank;
    return rc;
}

int
spsim_gpu_mpi_bcast(void *data, size_t bytes, struct spsim_error *err)
{
    return mpi_check(MPI_Bcast(data, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast", err);
}

int
spsim_gpu_mpi_average(double *v, struct spsim_error *err)
{
    double sum = 0;
    int size = 1;
    int rc = mpi_check(MPI_Allreduce(v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
                       "MPI_Allreduce", err);
    if (rc == SPSIM_OK)
        rc = mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size", err);
    if (rc == SPSIM_OK)
        *v = sum / size;
    return rc;
}

/* Host names are gathered in fixed slots of HOST_MAX bytes. */
#define HOST_MAX 64

static void
join_distinct(const char *all, int size, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int r = 0; r < size; r++) {
        const char *h = all + (size_t)r * HOST_MAX;
        bool seen = false;
        for (int q = 0; q < r && !seen; q++)
            seen = strncmp(h, all + (size_t)q * HOST_MAX, HOST_MAX) == 0;
        if (!seen && used < cap)
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? "," : "", h);
    }
}

int
spsim_gpu_mpi_hosts(char *buf, size_t cap, struct spsim_error *err)
{
    char mine[HOST_MAX] = "";
    if (gethostname(mine, sizeof(mine) - 1) != 0)
        snprintf(mine, sizeof(mine), "?");
    int size = 1;
    int rc = mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size", err);
    char *all = rc == SPSIM_OK ? spsim_calloc((size_t)size, HOST_MAX) : NULL;
    if (rc == SPSIM_OK && !all)
        rc = spsim_fail(err, SPSIM_ENOMEM, "MPI host names: out of memory");
    if (rc == SPSIM_OK)
        rc = mpi_check(
            MPI_Allgather(mine, HOST_MAX, MPI_CHAR, all, HOST_MAX, MPI_CHAR, MPI_COMM_WORLD),
            "MPI_Allgather (host names)", err);
    if (rc == SPSIM_OK)
        join_distinct(all, size, buf, cap);
    free(all);
    return rc;
}

int
spsim_gpu_impl_mpi_rank(void)
{
    return world_rank;
}

void
spsim_gpu_mpi_note_failure(void)
{
    failed = true;
}

void
spsim_gpu_impl_finalize(void)
{
    int finalized = 1;
    if (initialized_here && !failed && MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized)
        (void)MPI_Finalize();
    initialized_here = false;
}

#else /* !HAVE_MPI */

static int
no_mpi(struct spsim_error *err)
{
    return spsim_fail(err, SPSIM_ENOTSUP,
                      "this spsim was built without MPI (configure with "
                      "-Dmpi=enabled where an MPI library is installed)");
}

int
spsim_gpu_mpi_begin(int *rank, int *size, int *local_rank, int *nodes, struct spsim_error *err)
{
    *rank = *local_rank = 0;
    *size = *nodes = 1;
    return no_mpi(err);
}

int
spsim_gpu_mpi_bcast(void *data, size_t bytes, struct spsim_error *err)
{
    (void)data;
    (void)bytes;
    return no_mpi(err);
}

int
spsim_gpu_mpi_average(double *v, struct spsim_error *err)
{
    (void)v;
    return no_mpi(err);
}

int
spsim_gpu_mpi_hosts(char *buf, size_t cap, struct spsim_error *err)
{
    if (cap)
        buf[0] = '\0';
    return no_mpi(err);
}

int
spsim_gpu_impl_mpi_rank(void)
{
    return 0;
}

void
spsim_gpu_mpi_note_failure(void)
{
}

void
spsim_gpu_impl_finalize(void)
{
}

#endif
