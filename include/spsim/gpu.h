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

#ifdef __cplusplus
}
#endif

#endif
