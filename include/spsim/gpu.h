/*
 * Measuring the local GPUs: NCCL collectives, cuBLAS GEMMs, HBM copies, and the replay of one
 * transformer layer. The API is the same with and without CUDA: a build without the `cuda`
 * feature returns SPSIM_ENOTSUP from every call, and a machine without a GPU returns
 * SPSIM_ENOTSUP from spsim_gpu_device_count().
 */
#ifndef SPSIM_GPU_H
#define SPSIM_GPU_H

#include "spsim/calibrate.h"
#include "spsim/model.h"
#include "spsim/parallel.h"
#include "spsim/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @return true when this build has GPU support (the `cuda` feature was found). */
SPSIM_API bool spsim_gpu_built(void);

/** Count the visible GPUs. @return SPSIM_OK, SPSIM_ENOTSUP (no GPU support in this build, or
 * no device: err says which), SPSIM_EGPU */
SPSIM_API int spsim_gpu_device_count(int *count, struct spsim_error *err);

/** Called between measurements, for progress display; the library itself never prints. */
typedef void (*spsim_progress_fn)(void *cookie, const char *what, size_t done, size_t total);

/** What `spsim calibrate` measures on the local GPUs. */
struct spsim_gpu_calibrate_options {
    int gpus;                      /**< GPUs in the communicator; 0 = all visible (default) */
    uint64_t min_bytes, max_bytes; /**< collective sizes, nccl-tests convention (8 B .. 1 GiB) */
    uint32_t factor;               /**< size step factor (2) */
    uint32_t warmup_iters, iters;  /**< per size (5, 20) */
    const struct spsim_model
        *model;   /**< GEMMs at its layer's shapes for tp 1, 2, 4, 8 (NULL: grid only) */
    uint32_t mbs; /**< micro-batch size for the model's shapes (1) */
    uint32_t seq; /**< sequence length for them; 0 = the model's */
    bool fp8;     /**< also FP8 GEMMs where the GPU has them */
    spsim_progress_fn progress; /**< optional */
    void *progress_cookie;
    /** One process per GPU across nodes under MPI (`mpirun -np N`; ncclCommInitRank with the
     * id broadcast over MPI); `gpus` must then be 0. Default: true when the build has MPI and
     * the process was started by an MPI launcher with more than one rank (OMPI_COMM_WORLD_SIZE,
     * PMI_SIZE or PMIX_SIZE above 1 in the environment). */
    bool mpi;
};

/** Fill `o` with the defaults documented beside each member. */
SPSIM_API void spsim_gpu_calibrate_defaults(struct spsim_gpu_calibrate_options *o);

/**
 * Check calibration options without touching a GPU: every member within its documented range.
 * @return SPSIM_OK or SPSIM_EINVAL (err names the member and the rule)
 */
SPSIM_API int spsim_gpu_calibrate_check(const struct spsim_gpu_calibrate_options *o,
                                        struct spsim_error *err);

/**
 * Measure NCCL AllGather, ReduceScatter, AllReduce and Send/Recv over the size range (CUDA
 * events, warm-up then timed iterations), cuBLAS(Lt) GEMMs, and device-to-device copies.
 * Provenance (GPU name, driver, CUDA and NCCL versions, GPU count) is set on `collectives`.
 *
 * Collectives follow nccl-tests (doc/gpu.md): float data, out-of-place, sum; AllGather and
 * ReduceScatter sizes are the whole buffer with a per-rank count rounded down to 16 bytes
 * (sizes whose per-rank count rounds to 0 are skipped); time = elapsed / iters, the slowest
 * GPU of this process (under MPI: the average over ranks, nccl-tests' default `-a 1`); algbw
 * = size / time / 1e9; busbw = algbw × 2(n−1)/n (AllReduce), (n−1)/n (AllGather,
 * ReduceScatter), 1 (Send/Recv: each rank sends `size` to the next). Before timing, one
 * AllReduce and one AllGather of known data are checked (SPSIM_EGPU if NCCL returns wrong
 * values).
 *
 * GEMMs (cuBLASLt, "TN" layout, BF16 in and out with FP32 accumulation; FP8 E4M3 in, BF16 out
 * where the compute capability is 8.9 or above and o->fp8, each shape with cuBLASLt's fast
 * accumulation and with the split accumulator, as Transformer Engine runs fprop and
 * dgrad/wgrad; spsim_gemm_sample.fp8_fast_accum says which): the linear-layer GEMMs (forward,
 * dgrad, wgrad M, N, K) of o->model's layer for tp 1, 2, 4 and 8 (those tp the model allows),
 * the square sizes 512 .. 16384, and the paper's four models at t = 8 (Korthikanti et al.
 * 2022, Table 3); each distinct shape once. Shapes whose operands do not fit in 80% of the
 * free GPU memory are left out; their number is the provenance key "gemm_shapes_skipped".
 * HBM: device-to-device copies well beyond the L2 (powers of two from 4 × the L2 size,
 * cudaDevAttrL2CacheSize, and 64 MiB, up to 4 GiB, at most 4 sizes), each size on freshly
 * allocated buffers: smaller copies repeated over the same buffers are served from the L2.
 *
 * Provenance keys set on `collectives`: "source", "gpu", "compute_capability", "sm_count",
 * "gpu_memory_bytes", "cuda_driver", "cuda_runtime", "nccl_version", "gpus", "nodes", "hosts",
 * "datatype", "warmup_iters", "iters", "gemm_shapes_skipped", "l2_cache_bytes", "hbm_copy_sizes".
 * Under MPI every rank returns the same collective table and only rank 0 (spsim_gpu_mpi_rank())
 * measures GEMMs and copies.
 *
 * @param collectives  receives the collective samples
 * @param gemms, hbm   receive arrays the caller frees with free()
 * @return SPSIM_OK, SPSIM_ENOTSUP (no GPU support or no GPU), SPSIM_EGPU (err names the CUDA,
 *         cuBLAS or NCCL error and the step that failed), SPSIM_ENOMEM
 */
SPSIM_API int spsim_gpu_calibrate(const struct spsim_gpu_calibrate_options *o,
                                  struct spsim_bw_table *collectives,
                                  struct spsim_gemm_sample **gemms, size_t *ngemms,
                                  struct spsim_hbm_sample **hbm, size_t *nhbm,
                                  struct spsim_error *err);

/** Facts about one visible GPU and the software stack, for provenance. */
struct spsim_gpu_info {
    char name[256];         /**< cudaDeviceProp.name, e.g. "NVIDIA H200" */
    int cc_major, cc_minor; /**< compute capability */
    int sm_count;           /**< streaming multiprocessors */
    uint64_t memory_bytes;  /**< total device memory */
    int driver_version;     /**< cudaDriverGetVersion, e.g. 13000 */
    int runtime_version;    /**< cudaRuntimeGetVersion */
    int nccl_version;       /**< ncclGetVersion, e.g. 22809 */
    int device_count;       /**< visible GPUs */
};

/**
 * Describe GPU `device` (0-based) and the CUDA and NCCL versions.
 * @return SPSIM_OK, SPSIM_ENOTSUP (no GPU support or no GPU), SPSIM_EINVAL (no such device),
 *         SPSIM_EGPU
 */
SPSIM_API int spsim_gpu_info(int device, struct spsim_gpu_info *out, struct spsim_error *err);

/** @return this process's MPI rank when a calibration runs under MPI, else 0. Only rank 0
 * should write results. */
SPSIM_API int spsim_gpu_mpi_rank(void);

/** Finalize MPI if spsim_gpu_calibrate() initialized it; a no-op otherwise. A program that
 * calibrates under MPI calls it once before exiting. After a failed calibration it leaves MPI
 * as it is: other ranks may be blocked in a collective, and the launcher ends them when this
 * process exits with a failure status. */
SPSIM_API void spsim_gpu_finalize(void);

/* Replaying one transformer layer on the local GPUs: `spsim validate`. */

/** How `spsim validate` replays a layer. */
struct spsim_gpu_validate_options {
    uint32_t warmup_iters; /**< layer passes (forward + backward) before timing; default 3 */
    uint32_t iters;        /**< timed layer passes; per-op times are their mean; default 10 */
};

/** Fill `o` with the defaults documented beside each member. */
SPSIM_API void spsim_gpu_validate_defaults(struct spsim_gpu_validate_options *o);

/** What the replay runs for the computation of one schedule step. */
enum spsim_replay_kind {
    SPSIM_REPLAY_NONE = 0,           /**< no computation: a collective step */
    SPSIM_REPLAY_GEMM = 1,           /**< the linear layer's GEMM at this rank's shape */
    SPSIM_REPLAY_BATCHED_GEMM = 2,   /**< attention's batched matmul (QK^T, attention x V) */
    SPSIM_REPLAY_COPY = 3,           /**< a memory-bound kernel, stood in for by a
                                      *   device-to-device copy moving the same HBM bytes */
    SPSIM_REPLAY_ATTENTION_PROXY = 4 /**< flash attention, stood in for by batched GEMMs of
                                      *   the same FLOPs (causal: half the keys) */
};

/** @return "none", "gemm", "batched_gemm", "copy", "attention_proxy"; "?" otherwise. */
SPSIM_API const char *spsim_replay_kind_name(enum spsim_replay_kind kind);

/** One step of the layer's schedule (spsim_layer_schedule() order), predicted and measured.
 * Times in seconds, per rank; measured values are the slowest GPU's mean over the timed
 * passes (0 in a plan). */
struct spsim_gpu_validate_step {
    enum spsim_phase phase;
    const char *op;   /**< static: the schedule's op name */
    const char *pass; /**< static: "forward", "dgrad", "wgrad", "backward", "" */
    enum spsim_replay_kind kind;
    enum spsim_dtype dtype;     /**< of the GEMMs */
    uint64_t m, n, k, batch;    /**< GEMM shape (each proxy GEMM's); 0 without a GEMM */
    uint32_t gemms;             /**< GEMMs launched: 1, or 2 (proxy forward) / 5 (backward) */
    bool fp32_output;           /**< wgrad accumulated into an fp32 gradient (Megatron's
                                 *   gradient-accumulation fusion); BF16/FP16 only */
    bool fp8_fast_accum;        /**< FP8 GEMM with cuBLASLt's fast accumulation, as Transformer
                                 *   Engine runs fprop (dgrad and wgrad: split accumulator) */
    double flops;               /**< replayed FLOPs */
    uint64_t copy_bytes;        /**< HBM traffic (read + written) replayed by copies */
    enum spsim_coll_op coll;    /**< SPSIM_COLL_COUNT when the step issues no collective */
    uint64_t coll_bytes;        /**< its nccl-tests size (AG/RS: the whole gathered tensor) */
    const char *coll_site;      /**< static; "" without a collective */
    enum spsim_overlap overlap; /**< a collective beside the computation: separate streams */
    double predicted_compute_s, predicted_comm_s;
    double predicted_s; /**< compute + exposed collective time */
    double measured_compute_s, measured_comm_s;
    double measured_s; /**< from the computation's start until both are done */
};

/** The replay of one layer. */
struct spsim_gpu_validate_report {
    size_t nsteps;
    struct spsim_gpu_validate_step steps[SPSIM_MAX_SCHEDULE_STEPS];
    uint32_t gpus; /**< tp */
    uint32_t iters, warmup_iters;
    double predicted_forward_s, predicted_backward_s; /**< backward includes recomputation */
    double measured_forward_s, measured_backward_s;   /**< 0 in a plan */
    struct spsim_gpu_info gpu;                        /**< GPU 0; zero in a plan */
};

/**
 * The replay plan of one layer without running it (no GPU needed): every step of
 * spsim_layer_schedule() with what would run and the prediction on `hw`.
 * @param out  caller-owned; filled on success
 * @return SPSIM_OK, SPSIM_EINVAL (NULL argument), SPSIM_ECONFIG (Megatron's rules), SPSIM_ERANGE
 */
SPSIM_API int spsim_gpu_validate_plan(const struct spsim_model *model,
                                      const struct spsim_hardware *hw,
                                      const struct spsim_parallel *par,
                                      struct spsim_gpu_validate_report *out,
                                      struct spsim_error *err);

/**
 * Replay one transformer layer (forward, recomputation, backward) on tp local GPUs (tp = 1:
 * one GPU, no collectives) and time every step with CUDA events, against the prediction on
 * `hw`. Collectives run on their own stream beside the GEMM Megatron overlaps them with; the
 * others are waited for. One host thread drives each GPU; memory-bound ops are copies between
 * fresh stretches of a ring larger than the L2 (doc/gpu.md). Only par's tp, sp, recompute, mbs,
 * seq, flash_attn and dtype matter.
 * @param o  NULL: the defaults
 * @return SPSIM_OK, SPSIM_EINVAL, SPSIM_ECONFIG, SPSIM_ERANGE, SPSIM_ENOTSUP (no GPU support, no
 *         GPU, or fewer than tp GPUs), SPSIM_EGPU (err names the CUDA, cuBLAS or NCCL error and
 *         the step)
 */
SPSIM_API int spsim_gpu_validate(const struct spsim_model *model, const struct spsim_hardware *hw,
                                 const struct spsim_parallel *par,
                                 const struct spsim_gpu_validate_options *o,
                                 struct spsim_gpu_validate_report *out, struct spsim_error *err);

#ifdef __cplusplus
}
#endif

#endif
