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
    uint32_t ranks;      /**< communicator size */
    uint32_t nodes;      /**< nodes spanned; 0 = unknown */
    uint64_t size_bytes; /**< nccl-tests size (AG/RS: the whole buffer) */
    double time_s;       /**< out-of-place time per operation */
    double algbw_GBps;   /**< size / time, GB = 1e9 */
    double busbw_GBps;   /**< algbw × the collective's factor */
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
SPSIM_API const struct spsim_bw_sample *spsim_bw_table_get(const struct spsim_bw_table *t,
                                                           size_t i);
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
    bool fp8_fast_accum; /**< FP8 only: cuBLASLt fast accumulation (Transformer Engine's fprop),
                          *   else split accumulator (its dgrad and wgrad) */
};

/** One measured device-to-device copy. */
struct spsim_hbm_sample {
    uint64_t bytes; /**< copied (read + written = 2 × bytes of traffic) */
    double time_s;
    double GBps; /**< 2 × bytes / time / 1e9: HBM traffic rate */
};

/* Importing nccl-tests output. */

/** What the caller knows about a log; the importer takes the rest from the log. */
struct spsim_nccl_log_options {
    enum spsim_coll_op op; /**< SPSIM_COLL_COUNT (default): from "Collective test starting:" or
                            *   the file name */
    uint32_t gpus;         /**< ranks; 0 (default): from the "#  Rank N" lines or "nranks N" */
    uint32_t nodes;        /**< nodes; 0 (default): distinct hosts, or "nNodes N" */
};

/** Set every member to its documented default. */
SPSIM_API void spsim_nccl_log_defaults(struct spsim_nccl_log_options *o);

/** Most rows a summary lists individually. */
#define SPSIM_NCCL_LOG_MAX_NOTES 8

/** One row whose printed algbw or busbw disagrees with its size and time. */
struct spsim_nccl_log_note {
    uint32_t line;  /**< 1-based line number in the file */
    char text[160]; /**< e.g. "busbw 0.30 GB/s printed, 0.35 from size, time and 1.75 (8 ranks)" */
};

/** What the importer saw in one log. */
struct spsim_nccl_log_summary {
    enum spsim_coll_op op;
    uint32_t ranks;
    uint32_t nodes;
    const char *op_from;    /**< static: "log", "--op" or "file name" */
    const char *ranks_from; /**< static: "rank lines", "NCCL INFO nranks" or "--gpus" */
    const char *nodes_from; /**< static: "rank lines", "NCCL INFO nNodes", "NCCL INFO hosts" or
                             *   "--nodes" */
    size_t rows;            /**< rows imported (sizes > 0) */
    size_t zero_rows;       /**< rows of size 0, skipped */
    size_t split_rows;      /**< rows cut by NCCL lines and joined again */
    size_t mismatched_rows; /**< rows whose printed algbw or busbw disagree with size and time */
    size_t nnotes;          /**< the first SPSIM_NCCL_LOG_MAX_NOTES of them */
    struct spsim_nccl_log_note notes[SPSIM_NCCL_LOG_MAX_NOTES];
};

/**
 * Read nccl-tests output (all_reduce, all_gather, reduce_scatter, sendrecv, alltoall perf) into
 * `table`: one sample per data row of size > 0, with the out-of-place time; algbw and busbw are
 * recomputed from size and time (GB = 1e9 bytes) after the printed ones are checked against them.
 *
 * Tolerated: `#` comment lines, `## KEY: VALUE` provenance lines (kept as table info), old
 * (`error` column, no `root`) and new (`#wrong`, `root`) column layouts, a missing column header,
 * NCCL INFO/WARN lines between rows or cutting a row (the row continues on a later line), rows of
 * size 0 (skipped and counted), other text lines. Table info set: "source" (origin), "gpu",
 * "hosts", "nccl_version", "nccl_tests_version", "cuda_driver_version", "process_layout", "type",
 * and each `## KEY` as "log_KEY", spaces turned into '_' ("log_command", "log_system", ...),
 * where the log has them.
 *
 * @param text, len  the log; not modified, need not be NUL-terminated
 * @param origin     names the log in messages (a file name); NULL gives "<nccl-tests log>"
 * @param o          may be NULL (all defaults)
 * @param table      receives the samples and provenance (appended to what it holds)
 * @param summary    optional; filled on success
 * @return SPSIM_OK; SPSIM_EPARSE (a truncated or malformed row, a negative time, no data rows:
 *         err names the origin and the line); SPSIM_EFIELD (the collective, rank or node count
 *         cannot be told, or contradicts `o`, or the busbw factor of every row contradicts the
 *         rank count); SPSIM_EINVAL; SPSIM_ENOMEM
 */
SPSIM_API int spsim_nccl_log_parse(const char *text, size_t len, const char *origin,
                                   const struct spsim_nccl_log_options *o,
                                   struct spsim_bw_table *table,
                                   struct spsim_nccl_log_summary *summary, struct spsim_error *err);

/** spsim_nccl_log_parse() on a file. @return as it, or SPSIM_EIO when the file cannot be read */
SPSIM_API int spsim_nccl_log_load(const char *path, const struct spsim_nccl_log_options *o,
                                  struct spsim_bw_table *table,
                                  struct spsim_nccl_log_summary *summary, struct spsim_error *err);

/* Calibrating a hardware profile from measurements. */

/** Where the calibrated profile starts from and what it records. */
struct spsim_calibrate_options {
    const char *base_path;    /**< base hardware profile, a file (required) */
    const char *name;         /**< "name" of the calibrated profile (required, non-empty) */
    const char *command_line; /**< recorded in every replaced source and the provenance; NULL:
                               *   none (default) */
    const char *date;         /**< recorded likewise; NULL (default): now, UTC, ISO 8601 */
};

/** Set every member to its documented default (all NULL). */
SPSIM_API void spsim_calibrate_defaults(struct spsim_calibrate_options *o);

/** The fit of one link tier (doc/calibration.md): time = α + steps·hop + wire/B. */
struct spsim_calibration_tier {
    bool measured;          /**< some samples ran on this tier */
    bool hop_fitted;        /**< false: one step count only, so the base profile's base latency
                             *   is kept and the rest of α is spread over the steps as hop */
    double base_latency_us; /**< as written to the profile */
    double hop_latency_us;  /**< as written to the profile */
    double fit_busbw_GBps[SPSIM_COLL_COUNT];     /**< fitted B per collective; 0 = not measured */
    double peak_busbw_GBps[SPSIM_COLL_COUNT];    /**< the busbw the written profile gives the
                                                  *   curve's group at eff = 1 */
    double fit_median_rel_err[SPSIM_COLL_COUNT]; /**< |fit − measured| / measured over sizes */
    double fit_max_rel_err[SPSIM_COLL_COUNT];
};

/** One measured size: the measurement, the tier's fit and the calibrated profile's prediction. */
struct spsim_calibration_row {
    size_t input; /**< index of the table it came from */
    enum spsim_coll_op op;
    enum spsim_tier tier; /**< SPSIM_TIER_NVLINK, _NETWORK or _HIERARCHICAL */
    uint32_t ranks, nodes;
    uint64_t size_bytes;
    double measured_s;  /**< mean of the table's samples of this size */
    double algbw_GBps;  /**< size / measured_s, GB = 1e9 B (nccl-tests) */
    double busbw_GBps;  /**< algbw × the collective's nccl-tests factor */
    double fit_s;       /**< α + steps·hop + wire/B of the tier's fit */
    double eff;         /**< eff(size) of the calibrated profile for this tier and collective */
    double predicted_s; /**< spsim_collective_predict() on the calibrated profile */
    bool in_curve;      /**< the size is a point of the written busbw curve */
};

/** Most notes a calibration keeps. */
#define SPSIM_CALIBRATION_MAX_NOTES 8

/** The result of spsim_calibrate_profile(). Free with spsim_calibration_free(). */
struct spsim_calibration {
    struct spsim_calibration_tier tier[2]; /**< [0] the NVLink domain, [1] the network */
    struct spsim_calibration_row *rows;    /**< owned; every measured size of every table */
    size_t nrows;
    char *profile_json; /**< owned; the calibrated profile, already accepted by
                         *   spsim_hardware_parse() */
    size_t profile_len;
    size_t nnotes;
    char notes[SPSIM_CALIBRATION_MAX_NOTES][256]; /**< what was not used as given, one line each */
};

/**
 * Fit the measured collectives and write a calibrated hardware profile: the base profile with
 * the fitted tier latencies, the ring/AllReduce busbw, a busbw curve per measured collective
 * and tier (for multi-node samples the network tier and node.gpus_per_node = ranks per node),
 * for GPU runs also gpu.gemm_table and gpu.hbm_achievable_GBps; every other field keeps its
 * source, each replaced number's source names the calibration, and a `calibration` object
 * holds the provenance. `spsim collective` on the result reproduces every measured size from
 * the curves (doc/calibration.md). Nothing is written: see spsim_calibration_write().
 * @param tables        measured collectives (e.g. from spsim_nccl_log_load()); not modified
 * @param gemms, hbm    optional GPU measurements (NULL with a count of 0)
 * @param out           filled on success; the caller frees it with spsim_calibration_free()
 * @return SPSIM_OK; SPSIM_EIO, SPSIM_EPARSE, SPSIM_EFIELD (the base profile); SPSIM_EINVAL (no
 *         samples, samples that do not fit the base's nodes, a measurement the base profile cannot
 *         hold: err says which); SPSIM_ENUMERIC (the fit failed); SPSIM_ENOMEM
 */
SPSIM_API int spsim_calibrate_profile(const struct spsim_calibrate_options *o,
                                      const struct spsim_bw_table *const *tables, size_t ntables,
                                      const struct spsim_gemm_sample *gemms, size_t ngemms,
                                      const struct spsim_hbm_sample *hbm, size_t nhbm,
                                      struct spsim_calibration *out, struct spsim_error *err);

/** Free what a calibration owns and zero it; NULL is accepted. */
SPSIM_API void spsim_calibration_free(struct spsim_calibration *c);

/** Write c->profile_json to `path` atomically (spsim_file_write_atomic): on failure the old file,
 * if any, is left as it was. @return SPSIM_OK, SPSIM_EINVAL, SPSIM_EIO */
SPSIM_API int spsim_calibration_write(const struct spsim_calibration *c, const char *path,
                                      struct spsim_error *err);

/* Fitting a hardware profile's efficiency parameters to measured training runs. */

/** One measured training run: a configuration spsim can state and its measured time. */
struct spsim_run {
    const struct spsim_model *model; /**< borrowed; must outlive the calibration */
    struct spsim_parallel par;       /**< the configuration (spsim_evaluate() must accept it) */
    double measured_s;               /**< measured time per iteration, seconds, > 0 */
    const char *group;               /**< cross-validation group: model family × system (runs
                                      *   of one group are left out together); required */
    const char *id;                  /**< the run's label in the profile ("FILE:LINE"), or NULL */
};

/** Most parameters a runs calibration fits. */
#define SPSIM_RUNS_MAX_PARAMS 8

/** One physical parameter of the fit (doc/calibration.md, "Calibration from measured runs"). */
struct spsim_runs_param {
    const char *name;         /**< "gemm_bf16", "memory_bound", "host_op_us", ... (static) */
    const char *field;        /**< the profile field(s) it sets (static) */
    const char *prior_source; /**< where the prior comes from (static) */
    bool scale;               /**< a factor on the base profile's figures (prior 1), else the
                               *   field's own value (prior: the base profile's) */
    bool present;             /**< the base profile has the field */
    bool fitted;              /**< the runs determine it; else it stays at the prior */
    double prior, lo, hi;     /**< the prior and the bounds */
    double value, sigma;      /**< the fitted value and its 1σ uncertainty (prior, 0 if not
                               *   fitted) */
};

/** What the calibration predicts for one run (seconds per iteration). */
struct spsim_runs_prediction {
    double sourced_s; /**< the base profile's */
    double fitted_s;  /**< the profile fitted to all runs */
    double cv_s;      /**< the profile fitted to the runs of the other groups (leave-one-group-out);
                       *   the base profile's when no other group has runs */
};

/** The result of spsim_calibrate_runs(). Free with spsim_runs_calibration_free(). */
struct spsim_runs_calibration {
    size_t nparams;
    struct spsim_runs_param param[SPSIM_RUNS_MAX_PARAMS];
    size_t nruns;
    struct spsim_runs_prediction *runs; /**< owned; one per run, in order */
    size_t ngroups;
    size_t iterations;  /**< of the fit to all runs */
    int status;         /**< GSL's status of that fit: GSL_SUCCESS, or GSL_EMAXITER / GSL_ENOPROG
                         *   when it stopped at the best point it reached */
    char *profile_json; /**< owned; the fitted profile, accepted by spsim_hardware_parse() */
    size_t profile_len;
};

/**
 * Fit a hardware profile's efficiency parameters (sustained GEMM rate per dtype, attention
 * rate, memory-bound bandwidth, per-op host time, network hop latency: each a physical knob of
 * the time model with a sourced prior and bounds) to measured runs by nonlinear least squares
 * (GSL multifit_nlinear, bounded by a logistic transform) on log(predicted / measured), with a
 * weak prior per parameter; parameters the runs do not move stay at their prior. With
 * `cross_validate`, each group is predicted by the fit to the other groups. The written profile
 * is the base profile with the fitted fields, each source naming the fit, and a `calibration`
 * object of kind "fitted" with every parameter (value, uncertainty, prior, bounds) and every
 * run (measured, sourced, fitted and cross-validated times). Nothing is written: see
 * spsim_runs_calibration_write().
 * @param runs  at least one; every run's configuration must evaluate on the base profile
 * @return SPSIM_OK; SPSIM_EIO, SPSIM_EPARSE, SPSIM_EFIELD (the base profile); SPSIM_EINVAL (no
 *         runs, a run without a model, group or positive time: err names it); SPSIM_ECONFIG (a
 *         run spsim_evaluate() refuses); SPSIM_ENUMERIC (the fit failed); SPSIM_ENOMEM
 */
SPSIM_API int spsim_calibrate_runs(const struct spsim_calibrate_options *o,
                                   const struct spsim_run *runs, size_t nruns, bool cross_validate,
                                   struct spsim_runs_calibration *out, struct spsim_error *err);

/** Free what a runs calibration owns and zero it; NULL is accepted. */
SPSIM_API void spsim_runs_calibration_free(struct spsim_runs_calibration *c);

/** Write c->profile_json to `path` atomically. @return SPSIM_OK, SPSIM_EINVAL, SPSIM_EIO */
SPSIM_API int spsim_runs_calibration_write(const struct spsim_runs_calibration *c, const char *path,
                                           struct spsim_error *err);

/**
 * The shipped hardware profile for a GPU as CUDA names it ("NVIDIA A100-SXM4-80GB"): the one
 * whose gpu.model is that name, or a known alias (doc/calibration.md).
 * @param out  receives the profile NAME; capacity `cap`
 * @return SPSIM_OK; SPSIM_EFIELD when no shipped profile matches (err says so); SPSIM_EINVAL;
 *         SPSIM_EIO (no data directory)
 */
SPSIM_API int spsim_calibrate_base_for_gpu(const char *gpu_name, char *out, size_t cap,
                                           struct spsim_error *err);

#ifdef __cplusplus
}
#endif

#endif
