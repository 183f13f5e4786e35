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
    int gpus;                       /**< GPUs in the communicator; 0 = all visible (default) */
    uint64_t min_bytes, max_bytes;  /**< collective sizes, nccl-tests convention (8 B .. 1 GiB) */
    uint32_t factor;                /**< size step factor (2) */
    uint32_t warmup_iters, iters;   /**< per size (5, 20) */
    const struct spsim_model *model; /**< GEMMs at its layer's shapes for tp 1, 2, 4, 8 (NULL: grid only) */
    uint32_t mbs;                   /**< micro-batch size for the model's shapes (1) */
    uint32_t seq;                   /**< sequence length for them; 0 = the model's */
    bool fp8;                       /**< also FP8 GEMMs where the GPU has them */
    spsim_progress_fn progress;     /**< optional */
    void *progress_cookie;
};

/** Fill `o` with the defaults documented beside each member. */
SPSIM_API void spsim_gpu_calibrate_defaults(struct spsim_gpu_calibrate_options *o);

/**
 * Measure NCCL AllGather, ReduceScatter, AllReduce and Send/Recv over the size range (CUDA
 * events, warm-up then timed iterations), cuBLAS(Lt) GEMMs, and device-to-device copies.
 * Provenance (GPU name, driver, CUDA and NCCL versions, GPU count) is set on `collectives`.
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

#ifdef __cplusplus
}
#endif

#endif
