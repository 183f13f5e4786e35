/* The layer's schedule as the seed article draws it, for `spsim explain`. */
#ifndef SPSIM_SCHEDULE_H
#define SPSIM_SCHEDULE_H

#include "spsim/common.h"
#include "spsim/model.h"
#include "spsim/result.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Room for the text of a tensor shape, e.g. "[s/t, b, h] = [256, 1, 12288]". */
#define SPSIM_SHAPE_TEXT_MAX 80

/** One step of one transformer layer's schedule on one TP rank. */
struct spsim_schedule_step {
    enum spsim_phase phase;
    const char *op;             /**< static: "LayerNorm", "QKV GEMM (column-parallel)", ... */
    const char *pass;           /**< static: "forward", "dgrad", "wgrad", "recompute", "" */
    const char *region;         /**< static: "SP region", "TP region", "replicated", "boundary" */
    const char *collective;     /**< static: "all_gather", ... or "" when the step is computation */
    const char *operator_name;  /**< static: "g", "ḡ", "f", "f̄", "wgrad AG" or "" */
    const char *rng;            /**< static: RNG domain of a dropout ("default",
                                 *   "model-parallel-rng"), or "" for no dropout */
    enum spsim_overlap overlap; /**< for a collective: what it runs beside */
    char shape_in[SPSIM_SHAPE_TEXT_MAX];
    char shape_out[SPSIM_SHAPE_TEXT_MAX];
    double flops;  /**< per rank, this pass */
    double time_s; /**< predicted duration on the hardware (0 without hardware) */
    /* A collective step: its size (nccl-tests' convention), the bytes one rank moves, the
     * group it spans and the tier it crosses (local without hardware). */
    uint64_t message_bytes;
    uint64_t wire_bytes;
    uint32_t group_size;
    enum spsim_tier tier;
    /** static: NCCL's algorithm and protocol for the step's collective ("Ring", "Tree",
     * "NVLS", "PAT"; "LL", "LL128", "Simple"), "" without hardware or collective */
    const char *algorithm;
    const char *protocol;
    /** the step runs inside a CUDA graph replay (--cuda-graph-impl/--cuda-graph-scope) */
    bool graphed;
};

/** Most steps one layer's schedule can have. */
#define SPSIM_MAX_SCHEDULE_STEPS 160

/**
 * The ordered schedule of one transformer layer (forward, recompute, backward) for a config.
 * @param hw     may be NULL: no times are computed
 * @param steps  caller-owned array of `cap` entries
 * @param count  receives the number of steps written
 * @return SPSIM_OK, SPSIM_ECONFIG, SPSIM_EINVAL (cap too small: *count says how many are needed)
 */
SPSIM_API int spsim_layer_schedule(const struct spsim_model *model, const struct spsim_hardware *hw,
                                   const struct spsim_parallel *par,
                                   struct spsim_schedule_step *steps, size_t cap, size_t *count,
                                   struct spsim_error *err);

/**
 * spsim_layer_schedule() of one kind of a hybrid model's layers (`spsim explain --layer-kind`):
 * SPSIM_LAYER_TRANSFORMER is the layer spsim_layer_schedule() gives (a hybrid model's MoE layer
 * when it has one, else its Mamba layer).
 * @return as spsim_layer_schedule(); SPSIM_ECONFIG when the model has no layer of that kind
 */
SPSIM_API int spsim_layer_kind_schedule(const struct spsim_model *model,
                                        const struct spsim_hardware *hw,
                                        const struct spsim_parallel *par,
                                        enum spsim_layer_kind kind,
                                        struct spsim_schedule_step *steps, size_t cap,
                                        size_t *count, struct spsim_error *err);

#ifdef __cplusplus
}
#endif

#endif
