/* Hardware profiles: GPU, NVLink domain, scale-out network. */
#ifndef SPSIM_HARDWARE_H
#define SPSIM_HARDWARE_H

#include "spsim/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Data types a GPU may have a tensor-core peak for. */
enum spsim_dtype {
    SPSIM_DTYPE_BF16 = 0,
    SPSIM_DTYPE_FP16 = 1,
    SPSIM_DTYPE_FP8 = 2,
    SPSIM_DTYPE_NVFP4 = 3, /**< TE NVFP4BlockScaling GEMMs; the peak is the FP4 (E2M1) one */
    SPSIM_DTYPE_TF32 = 4,
    SPSIM_DTYPE_FP32 = 5,
    SPSIM_DTYPE_COUNT
};

/** @return "bf16", "fp16", ...; "?" for an unknown value. */
SPSIM_API const char *spsim_dtype_name(enum spsim_dtype dtype);
/** The dtype named `name` (spsim_dtype_name's spelling). @return SPSIM_OK or SPSIM_EINVAL */
SPSIM_API int spsim_dtype_parse(const char *name, enum spsim_dtype *out);
/** The dtypes a configuration trains its GEMMs in: the first four (bf16, fp16, fp8, nvfp4). */
#define SPSIM_DTYPE_TRAINING_COUNT 4

/** The headline numbers of a hardware profile, for listings. Units are in the names. */
struct spsim_hardware_info {
    const char *name;                      /**< owned by the hardware object */
    const char *description;               /**< owned by the hardware object */
    const char *gpu_model;                 /**< owned by the hardware object */
    double peak_tflops[SPSIM_DTYPE_COUNT]; /**< dense; 0 where the GPU has no such unit */
    double gemm_achievable_tflops_bf16;
    uint32_t sm_count;
    uint64_t hbm_capacity_bytes; /**< what the GPU reports (hbm_reported_MiB), else marketed */
    uint64_t hbm_marketed_bytes; /**< the size it is sold as (hbm_capacity_GB · 10^9 B) */
    double hbm_bandwidth_GBps;
    double hbm_achievable_GBps;
    uint32_t gpus_per_node;
    uint32_t nvlink_domain_gpus;
    uint32_t nics_per_node;
    double nvlink_bandwidth_per_direction_GBps;
    double nvlink_ring_busbw_GBps;
    double nvlink_allreduce_busbw_GBps;
    double nic_line_rate_Gbit_s;
    double nic_achievable_GBps;
    bool calibrated; /**< the profile carries a `calibration` object */
    bool fitted;     /**< ... of kind "fitted": spsim calibrate --runs fitted its efficiency
                      *   parameters to measured runs (doc/calibration.md) */
    /** gpu.board_power_W: the vendor's maximum board power per GPU (W); 0 = not given */
    double board_power_W;
    /** where the profile marks board_power_W unsourced ({"value": null}), its reason (owned by
     * the hardware object); NULL otherwise */
    const char *board_power_unsourced;
    /** the figures the time model needs that the profile marks unsourced, comma-separated
     *  (owned by the hardware object), e.g. "gpu.sm_count, gpu.hbm_bandwidth_GBps"; their
     *  fields above are 0. NULL when all are sourced. Only spsim_hardware_load_listing loads
     *  such a profile */
    const char *unsourced_fields;
};

struct spsim_hardware;

/**
 * Load and validate a hardware profile (doc/profiles.md).
 * @param out  the caller owns the result; free it with spsim_hardware_destroy()
 * @return SPSIM_OK, SPSIM_EIO, SPSIM_EPARSE, SPSIM_EFIELD or SPSIM_ENOMEM
 */
SPSIM_API int spsim_hardware_load(const char *path, struct spsim_hardware **out,
                                  struct spsim_error *err);

/**
 * Load a profile for listing and checking only: as spsim_hardware_load, but a profile that
 * marks figures the time model needs unsourced ({"value": null}: gpu.sm_count,
 * gpu.gemm_achievable_tflops.bf16, gpu.hbm_bandwidth_GBps, gpu.hbm_achievable_GBps) is read,
 * with spsim_hardware_info.unsourced_fields naming them. Such an object may be passed to
 * spsim_hardware_get_info and spsim_hardware_destroy only: spsim_hardware_load refuses it.
 */
SPSIM_API int spsim_hardware_load_listing(const char *path, struct spsim_hardware **out,
                                          struct spsim_error *err);

/** Parse a hardware profile held in memory; origin names it in error messages. */
SPSIM_API int spsim_hardware_parse(const char *json, size_t len, const char *origin,
                                   struct spsim_hardware **out, struct spsim_error *err);

/** Free; NULL is accepted. */
SPSIM_API void spsim_hardware_destroy(struct spsim_hardware *hw);

/** Fill `info` with views into `hw` (valid while hw lives). */
SPSIM_API void spsim_hardware_get_info(const struct spsim_hardware *hw,
                                       struct spsim_hardware_info *info);

#ifdef __cplusplus
}
#endif

#endif
