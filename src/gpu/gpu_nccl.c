/*
 * NCCL communicators over the local GPUs (or one GPU per MPI rank) and the collectives of
 * nccl-tests: AllReduce, AllGather, ReduceScatter (sum, out-of-place) and Send/Recv, where
 * each rank sends to the next and receives from the previous (nccl-tests sendrecv.cu).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

static int
open_local(struct spsim_gpu_comm *c, int gpus, struct spsim_error *err)
{
    int n = 0, rc = spsim_gpu_impl_device_count(&n, err);
    if (rc != SPSIM_OK)
        return rc;
    if (gpus == 0)
        gpus = n < SPSIM_GPU_MAX_LOCAL ? n : SPSIM_GPU_MAX_LOCAL;
    if (gpus > n)
        return spsim_fail(err, SPSIM_ENOTSUP, "%d GPUs asked for, %d visible", gpus, n);
    c->nlocal = c->nranks = gpus;
    c->nodes = 1;
    for (int i = 0; i < gpus; i++)
        c->devices[i] = i;
    return spsim_gpu_nccl(ncclCommInitAll(c->comms, gpus, c->devices), "ncclCommInitAll", err);
}

/* Every rank must learn of a failure on any other before it waits in a collective call. */
static int
agree(int local_rc, const char *what, struct spsim_error *err)
{
    double ok = local_rc == SPSIM_OK;
    int rc = spsim_gpu_mpi_average(&ok, err);
    if (rc != SPSIM_OK || local_rc != SPSIM_OK)
        return rc != SPSIM_OK ? rc : local_rc;
    return ok < 1 ? spsim_fail(err, SPSIM_EGPU, "%s failed on another MPI rank", what) : SPSIM_OK;
}

static int
open_mpi(struct spsim_gpu_comm *c, struct spsim_error *err)
{
    int rank = 0, size = 0, local = 0, n = 0;
    int rc = spsim_gpu_mpi_begin(&rank, &size, &local, &c->nodes, err);
    if (rc != SPSIM_OK)
        return rc;
    rc = spsim_gpu_impl_device_count(&n, err);
    int device = spsim_gpu_rank_device(local, n);
    if (rc == SPSIM_OK)
        rc = spsim_gpu_use(device, err);
    if ((rc = agree(rc, "selecting a GPU", err)))
        return rc;
    c->mpi = true;
    c->nlocal = 1;
    c->nranks = size;
    c->rank0 = rank;
    c->devices[0] = device;
    /* Rank 0 sends the id, or its failure, so that no rank waits for an id that never comes. */
    struct {
        int ok;
        ncclUniqueId id;
    } boot;
    memset(&boot, 0, sizeof(boot));
    if (rank == 0)
        boot.ok = spsim_gpu_nccl(ncclGetUniqueId(&boot.id), "ncclGetUniqueId", err) == SPSIM_OK;
    if ((rc = spsim_gpu_mpi_bcast(&boot, sizeof(boot), err)))
        return rc;
    if (!boot.ok)
        return rank == 0 ? SPSIM_EGPU
                         : spsim_fail(err, SPSIM_EGPU,
                                      "ncclGetUniqueId failed on MPI "
                                      "rank 0");
    return spsim_gpu_nccl(ncclCommInitRank(&c->comms[0], size, boot.id, rank), "ncclCommInitRank",
                          err);
}

static int
open_member(struct spsim_gpu_comm *c, int i, struct spsim_error *err)
{
    int rc;
    if ((rc = spsim_gpu_use(c->devices[i], err)) ||
        (rc = spsim_gpu_cuda(cudaStreamCreateWithFlags(&c->streams[i], cudaStreamNonBlocking),
                             "cudaStreamCreate (collectives)", err)) ||
        (rc = spsim_gpu_cuda(cudaEventCreate(&c->start[i]), "cudaEventCreate", err)) ||
        (rc = spsim_gpu_cuda(cudaEventCreate(&c->stop[i]), "cudaEventCreate", err)) ||
        (rc = spsim_gpu_alloc(&c->send[i], c->buffer_bytes, "collective send buffer", err)) ||
        (rc = spsim_gpu_alloc(&c->recv[i], c->buffer_bytes, "collective receive buffer", err)))
        return rc;
    /* Defined contents; the values do not change NCCL's speed. On the member's stream, where
     * the collectives run: the legacy default stream does not order a non-blocking stream. */
    cudaStream_t s = c->streams[i];
    if ((rc = spsim_gpu_cuda(cudaMemsetAsync(c->send[i], 0, c->buffer_bytes, s),
                             "cudaMemsetAsync (collective send buffer)", err)))
        return rc;
    return spsim_gpu_cuda(cudaMemsetAsync(c->recv[i], 0, c->buffer_bytes, s),
                          "cudaMemsetAsync (collective receive buffer)", err);
}

int
spsim_gpu_comm_open(struct spsim_gpu_comm *c, int gpus, bool mpi, size_t buffer_bytes,
                    struct spsim_error *err)
{
    memset(c, 0, sizeof(*c));
    c->buffer_bytes = buffer_bytes;
    int rc = mpi ? open_mpi(c, err) : open_local(c, gpus, err);
    for (int i = 0; rc == SPSIM_OK && i < c->nlocal; i++)
        rc = open_member(c, i, err);
    if (rc != SPSIM_OK)
        spsim_gpu_comm_close(c);
    return rc;
}

void
spsim_gpu_comm_close(struct spsim_gpu_comm *c)
{
    /* Release paths ignore errors: an earlier failure has already been reported. */
    for (int i = 0; i < c->nlocal; i++) {
        (void)cudaSetDevice(c->devices[i]);
        if (c->streams[i])
            (void)cudaStreamSynchronize(c->streams[i]);
        if (c->comms[i])
            (void)ncclCommDestroy(c->comms[i]);
        if (c->streams[i])
            (void)cudaStreamDestroy(c->streams[i]);
        if (c->start[i])
            (void)cudaEventDestroy(c->start[i]);
        if (c->stop[i])
            (void)cudaEventDestroy(c->stop[i]);
        if (c->send[i])
            (void)cudaFree(c->send[i]);
        if (c->recv[i])
            (void)cudaFree(c->recv[i]);
    }
    memset(c, 0, sizeof(*c));
}

static ncclResult_t
launch_one(struct spsim_gpu_comm *c, int i, enum spsim_coll_op op, uint64_t count,
           ncclDataType_t type)
{
    ncclComm_t comm = c->comms[i];
    cudaStream_t s = c->streams[i];
    int rank = c->rank0 + i, n = c->nranks;
    switch (op) {
    case SPSIM_COLL_ALL_REDUCE:
        return ncclAllReduce(c->send[i], c->recv[i], count, type, ncclSum, comm, s);
    case SPSIM_COLL_ALL_GATHER:
        return ncclAllGather(c->send[i], c->recv[i], count, type, comm, s);
    case SPSIM_COLL_REDUCE_SCATTER:
        return ncclReduceScatter(c->send[i], c->recv[i], count, type, ncclSum, comm, s);
    case SPSIM_COLL_SEND_RECV: {
        ncclResult_t r = ncclSend(c->send[i], count, type, (rank + 1) % n, comm, s);
        return r != ncclSuccess ? r
                                : ncclRecv(c->recv[i], count, type, (rank + n - 1) % n, comm, s);
    }
    case SPSIM_COLL_ALL_TO_ALL: /* not among the collectives spsim calibrates */
    case SPSIM_COLL_COUNT:
        break;
    }
    return ncclInvalidArgument;
}

static size_t
type_bytes(ncclDataType_t type)
{
    return type == ncclFloat32 ? 4 : 2; /* the two types spsim uses: float and bf16 */
}

/* Members lo .. hi-1 in one NCCL group: all of this process's, or one thread's own. */
static int
launch_group(struct spsim_gpu_comm *c, int lo, int hi, enum spsim_coll_op op, uint64_t count,
             ncclDataType_t type, struct spsim_error *err)
{
    bool whole = op == SPSIM_COLL_ALL_GATHER || op == SPSIM_COLL_REDUCE_SCATTER;
    if (count * type_bytes(type) * (whole ? (uint64_t)c->nranks : 1) > c->buffer_bytes)
        return spsim_fail(err, SPSIM_EINVAL,
                          "%s of %llu elements per rank does not fit the "
                          "%zu-byte buffers",
                          spsim_coll_op_name(op), (unsigned long long)count, c->buffer_bytes);
    ncclResult_t first = ncclGroupStart();
    for (int i = lo; first == ncclSuccess && i < hi; i++)
        first = launch_one(c, i, op, count, type);
    ncclResult_t end = ncclGroupEnd(); /* always, to close the group */
    char step[96];
    snprintf(step, sizeof(step), "NCCL %s of %llu elements per rank", spsim_coll_op_name(op),
             (unsigned long long)count);
    return spsim_gpu_nccl(first != ncclSuccess ? first : end, step, err);
}

int
spsim_gpu_coll_launch(struct spsim_gpu_comm *c, enum spsim_coll_op op, uint64_t count,
                      ncclDataType_t type, struct spsim_error *err)
{
    return launch_group(c, 0, c->nlocal, op, count, type, err);
}

int
spsim_gpu_coll_launch_member(struct spsim_gpu_comm *c, int i, enum spsim_coll_op op, uint64_t count,
                             ncclDataType_t type, struct spsim_error *err)
{
    /* A group even for one member: Send/Recv's send and receive must be one operation, or
     * each rank's send waits for a receive its peer has not posted. */
    return launch_group(c, i, i + 1, op, count, type, err);
}

void
spsim_gpu_comm_abort(struct spsim_gpu_comm *c)
{
    /* ncclCommAbort makes the pending operations of a communicator return (NCCL
     * documentation, "Fault tolerance"); the handle is gone after it. */
    for (int i = 0; i < c->nlocal; i++)
        if (c->comms[i]) {
            (void)ncclCommAbort(c->comms[i]);
            c->comms[i] = NULL;
        }
}

static int
sync_all(struct spsim_gpu_comm *c, struct spsim_error *err)
{
    int rc = SPSIM_OK;
    for (int i = 0; rc == SPSIM_OK && i < c->nlocal; i++)
        rc = spsim_gpu_cuda(cudaStreamSynchronize(c->streams[i]),
                            "cudaStreamSynchronize (collectives)", err);
    return rc;
}

static int
record_all(struct spsim_gpu_comm *c, cudaEvent_t *events, struct spsim_error *err)
{
    int rc = SPSIM_OK;
    for (int i = 0; rc == SPSIM_OK && i < c->nlocal; i++)
        rc = spsim_gpu_cuda(cudaEventRecord(events[i], c->streams[i]), "cudaEventRecord", err);
    return rc;
}

int
spsim_gpu_coll_time(struct spsim_gpu_comm *c, enum spsim_coll_op op, uint64_t count,
                    uint32_t warmup, uint32_t iters, double *seconds, struct spsim_error *err)
{
    int rc = SPSIM_OK;
    for (uint32_t w = 0; rc == SPSIM_OK && w < warmup; w++)
        rc = spsim_gpu_coll_launch(c, op, count, ncclFloat32, err);
    if (rc == SPSIM_OK && (rc = sync_all(c, err)) == SPSIM_OK)
        rc = record_all(c, c->start, err);
    for (uint32_t it = 0; rc == SPSIM_OK && it < iters; it++)
        rc = spsim_gpu_coll_launch(c, op, count, ncclFloat32, err);
    if (rc == SPSIM_OK && (rc = record_all(c, c->stop, err)) == SPSIM_OK)
        rc = sync_all(c, err);
    double slowest = 0;
    for (int i = 0; rc == SPSIM_OK && i < c->nlocal; i++) {
        double s = 0;
        rc = spsim_gpu_elapsed(c->start[i], c->stop[i], &s, err);
        slowest = s > slowest ? s : slowest;
    }
    *seconds = slowest / iters;
    if (rc == SPSIM_OK && c->mpi)
        rc = spsim_gpu_mpi_average(seconds, err);
    return rc;
}

/* Every member's send buffer holds `count` floats of value (its rank + 1). */
static int
load_ranks(struct spsim_gpu_comm *c, float *host, uint64_t count, struct spsim_error *err)
{
    int rc = SPSIM_OK;
    for (int i = 0; rc == SPSIM_OK && i < c->nlocal; i++) {
        for (uint64_t j = 0; j < count; j++)
            host[j] = (float)(c->rank0 + i + 1);
        /* On the stream the check's collectives run on; synchronised because the next member
         * refills the same host buffer. */
        if ((rc = spsim_gpu_use(c->devices[i], err)) == SPSIM_OK)
            rc = spsim_gpu_cuda(cudaMemcpyAsync(c->send[i], host, count * sizeof(float),
                                                cudaMemcpyHostToDevice, c->streams[i]),
                                "load verification data (cudaMemcpyAsync)", err);
        if (rc == SPSIM_OK)
            rc = spsim_gpu_cuda(cudaStreamSynchronize(c->streams[i]),
                                "load verification data (synchronise)", err);
    }
    return rc;
}

/* Count the received floats that differ from the expected: AllReduce n(n+1)/2 everywhere (exact
 * in float for n <= 64); AllGather chunk j holds j + 1. */
static int
count_wrong(struct spsim_gpu_comm *c, enum spsim_coll_op op, float *host, uint64_t count,
            uint64_t *wrong, struct spsim_error *err)
{
    uint64_t total = op == SPSIM_COLL_ALL_GATHER ? count * (uint64_t)c->nranks : count;
    int rc = sync_all(c, err);
    for (int i = 0; rc == SPSIM_OK && i < c->nlocal; i++) {
        if ((rc = spsim_gpu_use(c->devices[i], err)) ||
            (rc = spsim_gpu_cuda(cudaMemcpyAsync(host, c->recv[i], total * sizeof(float),
                                                 cudaMemcpyDeviceToHost, c->streams[i]),
                                 "read verification result (cudaMemcpyAsync)", err)) ||
            (rc = spsim_gpu_cuda(cudaStreamSynchronize(c->streams[i]),
                                 "read verification result (synchronise)", err)))
            break;
        for (uint64_t j = 0; j < total; j++) {
            double want = op == SPSIM_COLL_ALL_GATHER ? (double)(j / count + 1)
                                                      : c->nranks * (c->nranks + 1) / 2.0;
            *wrong += (double)host[j] != want;
        }
    }
    return rc;
}

int
spsim_gpu_coll_verify(struct spsim_gpu_comm *c, uint64_t count, struct spsim_error *err)
{
    static const enum spsim_coll_op ops[] = {SPSIM_COLL_ALL_REDUCE, SPSIM_COLL_ALL_GATHER};
    float *host = spsim_calloc(count * (uint64_t)c->nranks, sizeof(float));
    if (!host)
        return spsim_fail(err, SPSIM_ENOMEM, "NCCL verification: out of host memory");
    int rc = load_ranks(c, host, count, err);
    for (size_t k = 0; rc == SPSIM_OK && k < SPSIM_ARRAY_LENGTH(ops); k++) {
        uint64_t wrong = 0;
        rc = spsim_gpu_coll_launch(c, ops[k], count, ncclFloat32, err);
        if (rc == SPSIM_OK)
            rc = count_wrong(c, ops[k], host, count, &wrong, err);
        double any = (double)wrong; /* every rank must agree to stop */
        if (rc == SPSIM_OK && c->mpi)
            rc = spsim_gpu_mpi_average(&any, err);
        if (rc == SPSIM_OK && any > 0)
            rc = spsim_fail(err, SPSIM_EGPU,
                            "NCCL %s of known data (rank r sends r + 1) returned "
                            "wrong values (%llu of %llu on this process)",
                            spsim_coll_op_name(ops[k]), (unsigned long long)wrong,
                            (unsigned long long)(count * c->nranks));
    }
    free(host);
    return rc;
}
