/*
 * The GPU part's CUDA side: error reporting, device buffers, cuBLASLt GEMMs and NCCL
 * communicators, shared by the calibration and the layer replay. Every function that can fail
 * returns SPSIM_OK or a negative status and fills err with the call's error name and the step
 * that failed; every resource it creates is released by the matching close/release, which
 * accepts a partly opened object.
 */
#ifndef SPSIM_GPU_INTERNAL_H
#define SPSIM_GPU_INTERNAL_H

/* The CUDA and NCCL headers are not written for -Wundef and -Wstrict-prototypes (they test
 * __cplusplus unguarded and declare `f()`): their warnings are theirs, not ours. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#endif
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#include "gpu_plan.h"

/* ---- errors ---------------------------------------------------------------------------- */

/** SPSIM_OK, or SPSIM_EGPU with "STEP: cudaErrorName (description)". */
int spsim_gpu_cuda(cudaError_t e, const char *step, struct spsim_error *err);
/** SPSIM_OK, or SPSIM_EGPU with "STEP: CUBLAS_STATUS_NAME (description)". */
int spsim_gpu_cublas(cublasStatus_t s, const char *step, struct spsim_error *err);
/** SPSIM_OK, or SPSIM_EGPU with "STEP: ncclResultName (ncclGetErrorString)". */
int spsim_gpu_nccl(ncclResult_t r, const char *step, struct spsim_error *err);

/** Select `device` for the calling thread. */
int spsim_gpu_use(int device, struct spsim_error *err);

/** Elapsed seconds between two recorded events. */
int spsim_gpu_elapsed(cudaEvent_t start, cudaEvent_t stop, double *seconds,
                      struct spsim_error *err);

/* ---- device buffers -------------------------------------------------------------------- */

/** cudaMalloc `bytes` (at least 1) on the current device; `what` names it in errors. */
int spsim_gpu_alloc(void **ptr, size_t bytes, const char *what, struct spsim_error *err);

/**
 * Fill a device buffer with finite pseudo-random values of `dtype` (BF16/FP16 in ±[2^-7, 2),
 * FP8 E4M3 below 2 in magnitude, FP32 words whose high half is such a BF16). Zeros would make
 * GEMMs run faster than on real data: tensor cores draw less power on zero operands and hold
 * higher clocks. The copies are queued on `stream`, the stream that then uses the buffer.
 *
 * Why a stream: every stream of this module is created cudaStreamNonBlocking, which does not
 * synchronise with the legacy default stream (CUDA Runtime API, "Stream synchronization
 * behavior"); a plain cudaMemcpy device to device or cudaMemset is asynchronous on that
 * stream, so work queued next on a module stream could read the buffer before it is written.
 * No host-side set-up call of this module may use the legacy stream (tests/gpu_streams.sh).
 */
int spsim_gpu_fill(void *dev, size_t bytes, enum spsim_dtype dtype, cudaStream_t stream,
                   struct spsim_error *err);

/* ---- cuBLASLt GEMMs -------------------------------------------------------------------- */

/** One cuBLASLt handle and its workspace on one device. */
struct spsim_gpu_blas {
    cublasLtHandle_t lt;
    void *workspace;
    size_t workspace_bytes;
};

int spsim_gpu_blas_open(struct spsim_gpu_blas *b, struct spsim_error *err);
void spsim_gpu_blas_close(struct spsim_gpu_blas *b);

/** What one GEMM computes: D[m, n] = A[m, k] · B[k, n] (+ D when accumulate), batch times. */
struct spsim_gpu_gemm_spec {
    struct spsim_gpu_gemm_shape shape;
    enum spsim_dtype dtype; /* BF16, FP16 or FP8 (E4M3) inputs */
    bool fp32_output;       /* D in FP32 (BF16/FP16 inputs only), else 16-bit (FP8: BF16) */
    bool accumulate;        /* beta = 1 */
    bool fast_accum;        /* FP8 only: CUBLASLT_MATMUL_DESC_FAST_ACCUM (else split accumulator) */
};

/** A prepared GEMM: descriptors and the algorithm cuBLASLt's heuristic chose. */
struct spsim_gpu_gemm {
    struct spsim_gpu_gemm_spec spec;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
    float alpha, beta;
};

/** Bytes of the A, B and D operands (all batches). */
void spsim_gpu_gemm_bytes(const struct spsim_gpu_gemm_spec *s, size_t *a, size_t *b, size_t *d);
/** True when the compute capability has FP8 tensor cores (8.9 Ada, 9.0 Hopper and later) and
 * the shape meets cuBLASLt's FP8 alignment (m, n, k multiples of 16). */
bool spsim_gpu_fp8_ok(int cc_major, int cc_minor, const struct spsim_gpu_gemm_shape *s);

/** Describe the GEMM to cuBLASLt and pick its algorithm. @return SPSIM_OK, SPSIM_ENOTSUP when
 * cuBLASLt has no algorithm for these types and sizes, SPSIM_EGPU */
int spsim_gpu_gemm_prepare(struct spsim_gpu_blas *blas, const struct spsim_gpu_gemm_spec *spec,
                           struct spsim_gpu_gemm *g, struct spsim_error *err);
int spsim_gpu_gemm_launch(struct spsim_gpu_blas *blas, const struct spsim_gpu_gemm *g,
                          const void *a, const void *b, void *d, cudaStream_t stream,
                          struct spsim_error *err);
/** Release a prepared (or zeroed, or partly prepared) GEMM. */
void spsim_gpu_gemm_release(struct spsim_gpu_gemm *g);

/* ---- NCCL communicators ---------------------------------------------------------------- */

/** The communicator members this process drives, with a stream and two buffers each. */
struct spsim_gpu_comm {
    int nlocal; /* members driven by this process (all GPUs; 1 under MPI) */
    int nranks; /* communicator size */
    int rank0;  /* global rank of local member 0 */
    int nodes;  /* nodes spanned (1 without MPI) */
    bool mpi;
    int devices[SPSIM_GPU_MAX_LOCAL];
    ncclComm_t comms[SPSIM_GPU_MAX_LOCAL];
    cudaStream_t streams[SPSIM_GPU_MAX_LOCAL];
    cudaEvent_t start[SPSIM_GPU_MAX_LOCAL], stop[SPSIM_GPU_MAX_LOCAL];
    void *send[SPSIM_GPU_MAX_LOCAL], *recv[SPSIM_GPU_MAX_LOCAL];
    size_t buffer_bytes; /* of each send and recv buffer */
};

/**
 * Open a communicator over `gpus` local GPUs (ncclCommInitAll), or under MPI over one GPU per
 * rank (ncclCommInitRank); allocate two buffers of `buffer_bytes` per member.
 */
int spsim_gpu_comm_open(struct spsim_gpu_comm *c, int gpus, bool mpi, size_t buffer_bytes,
                        struct spsim_error *err);
void spsim_gpu_comm_close(struct spsim_gpu_comm *c);

/** Launch one collective on every member (one NCCL group), `count` elements of `type` per
 * rank in nccl-tests' sense (AG: sent, RS: received, Send/Recv: sent to rank + 1). */
int spsim_gpu_coll_launch(struct spsim_gpu_comm *c, enum spsim_coll_op op, uint64_t count,
                          ncclDataType_t type, struct spsim_error *err);

/** Launch one collective on member i alone (its own NCCL group), for the thread driving it. */
int spsim_gpu_coll_launch_member(struct spsim_gpu_comm *c, int i, enum spsim_coll_op op,
                                 uint64_t count, ncclDataType_t type, struct spsim_error *err);

/** Abort every member's communicator (ncclCommAbort), so that threads waiting on a collective
 * that will never complete return; the communicators are then closed. */
void spsim_gpu_comm_abort(struct spsim_gpu_comm *c);

/** Time one collective: warm-up, then `iters` back to back between CUDA events; the slowest
 * member's elapsed / iters (under MPI averaged over ranks, as nccl-tests -a 1). */
int spsim_gpu_coll_time(struct spsim_gpu_comm *c, enum spsim_coll_op op, uint64_t count,
                        uint32_t warmup, uint32_t iters, double *seconds, struct spsim_error *err);

/** One AllReduce and one AllGather of known data (rank r contributes r + 1), checked on the
 * host: SPSIM_EGPU when a value differs. */
int spsim_gpu_coll_verify(struct spsim_gpu_comm *c, uint64_t count, struct spsim_error *err);

/* ---- MPI (multi-node calibration); without HAVE_MPI these return SPSIM_ENOTSUP ---------- */

/** MPI_Init if needed; this rank, the world size, the rank on this node and the node count. */
int spsim_gpu_mpi_begin(int *rank, int *size, int *local_rank, int *nodes, struct spsim_error *err);
/** Rank 0's NCCL id to every rank. */
int spsim_gpu_mpi_bcast(void *data, size_t bytes, struct spsim_error *err);
/** Sum of `v` over ranks, divided by the world size. */
int spsim_gpu_mpi_average(double *v, struct spsim_error *err);
/** The host names of all ranks, distinct, comma-separated into buf. */
int spsim_gpu_mpi_hosts(char *buf, size_t cap, struct spsim_error *err);
/** A calibration failed under MPI: spsim_gpu_impl_finalize() then leaves MPI unfinalized, so that
 * this process can exit without waiting for ranks that may be blocked in a collective (the
 * launcher ends them when it sees this one exit with a failure status). */
void spsim_gpu_mpi_note_failure(void);

#endif
