/*
 * Measurements that calibrate a hardware profile: collective timings (from nccl-tests logs or
 * from `spsim calibrate` on local GPUs), GEMM throughputs and HBM bandwidths.
 */
#ifndef SPSIM_CALIBRATE_H
#define SPSIM_CALIBRATE_H

#include "spsim/common.h"
#include "spsim/hardware.h"
#include "spsim/result.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One measured collective size, in nccl-tests' conventions. */
struct spsim_bw_sample {
    enum spsim_coll_op op;
    uint32_t ranks;       /**< communicator size */
    uint32_t nodes;       /**< nodes spanned; 0 = unknown */
    uint64_t size_bytes;  /**< nccl-tests size (AG/RS: the whole buffer) */
    double time_s;        /**< out-of-place time per operation */
    double algbw_GBps;    /**< size / time, GB = 1e9 */
    double busbw_GBps;    /**< algbw × the collective's factor */
};

/** A growable table of samples with provenance. Opaque. */
struct spsim_bw_table;

SPSIM_API int spsim_bw_table_create(struct spsim_bw_table **out);
/** Free; NULL is accepted. */
SPSIM_API void spsim_bw_table_destroy(struct spsim_bw_table *t);
/** Append a copy of `s`. @return SPSIM_OK, SPSIM_EINVAL (non-finite or non-positive values),
 * SPSIM_ENOMEM */
SPSIM_API int spsim_bw_table_add(struct spsim_bw_table *t, const struct spsim_bw_sample *s);
SPSIM_API size_t spsim_bw_table_size(const struct spsim_bw_table *t);
/** @return the i-th sample (owned by the table), or NULL when out of range */
SPSIM_API const struct spsim_bw_sample *spsim_bw_table_get(const struct spsim_bw_table *t, size_t i);
/** Provenance, as key/value text ("source", "gpu", "nccl_version", "hosts", ...); copied. */
SPSIM_API int spsim_bw_table_set_info(struct spsim_bw_table *t, const char *key, const char *value);
/** @return the value for key, or NULL; owned by the table */
SPSIM_API const char *spsim_bw_table_info(const struct spsim_bw_table *t, const char *key);
/** Iterate provenance: the i-th key/value, or NULL past the end. */
SPSIM_API const char *spsim_bw_table_info_key(const struct spsim_bw_table *t, size_t i);

/** One measured GEMM. */
struct spsim_gemm_sample {
    uint64_t m, n, k;
    enum spsim_dtype dtype;
    double time_s;
    double tflops;
};

/** One measured device-to-device copy. */
struct spsim_hbm_sample {
    uint64_t bytes;  /**< copied (read + written = 2 × bytes of traffic) */
    double time_s;
    double GBps;     /**< 2 × bytes / time / 1e9: HBM traffic rate */
};

#ifdef __cplusplus
}
#endif

#endif
