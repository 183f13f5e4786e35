/* Planning outputs: the time, energy and cost of a whole training run; one iteration's timeline. */
#ifndef SPSIM_PLAN_H
#define SPSIM_PLAN_H

#include "spsim/common.h"
#include "spsim/hardware.h"
#include "spsim/result.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A training run of a given number of tokens at one configuration's iteration time. */
struct spsim_train_plan {
    double train_tokens;         /**< the run's tokens (input) */
    double tokens_per_iteration; /**< global batch × sequence length */
    uint64_t iterations;         /**< ceil(train_tokens / tokens_per_iteration) */
    double wall_s;               /**< iterations × time.iteration_s */
    double wall_days;            /**< wall_s / 86400 */
    double gpu_hours;            /**< GPUs × wall_s / 3600 */
    /** The profile's gpu.board_power_W (the vendor's maximum per GPU); 0 where it has none */
    double board_power_W;
    /** GPUs × board power × wall time, kWh: an upper bound on the GPUs' draw (host CPUs,
     * NICs, switches and cooling are not in it); 0 when energy_available is false */
    double energy_kWh;
    bool energy_available; /**< the profile gives a sourced board power */
    /** Why energy is not given: the profile's reason for marking gpu.board_power_W unsourced,
     * or a fixed text when the profile has no such field; NULL when energy_available. Owned by
     * the hardware object (or static): valid while it lives. */
    const char *energy_refused;
    double gpu_hour_price; /**< price of one GPU-hour (input; 0 = not given) */
    double cost;           /**< gpu_hours × gpu_hour_price; 0 when no price is given */
};

/**
 * The time, energy and cost to train `train_tokens` tokens at the configuration of `r` (one
 * evaluated result of `hw`), for ranking configurations by what a whole run costs.
 * @param train_tokens    tokens of the run, finite, ≥ 1 and at most 1e18
 * @param gpu_hour_price  price per GPU-hour in any currency, finite, 0 (none) .. 1e6
 * @return SPSIM_OK or SPSIM_EINVAL (err names the argument and the rule); out untouched on failure
 */
SPSIM_API int spsim_train_plan_make(const struct spsim_result *r, const struct spsim_hardware *hw,
                                    double train_tokens, double gpu_hour_price,
                                    struct spsim_train_plan *out, struct spsim_error *err);

/**
 * The timeline of one iteration of `r` as Chrome trace-event JSON (the JSON object format:
 * {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}), which Perfetto and
 * chrome://tracing open: one process per pipeline rank, threads for the compute stream, the
 * exposed TP/CP/EP communication, the pipeline sends and the data-parallel tail; a complete
 * ("X") event per forward and backward of every micro-batch and model chunk (args microbatch,
 * chunk), per send and per tail step, times in microseconds. The schedule is Megatron-Core's
 * 1F1B or interleaved one at the critical stage's per-chunk times (engine/trace.c); the trace
 * ends (otherData.trace_end_s) at time.iteration_s + (p − 1)/v·time.microbatch_s −
 * time.pp_bubble_s: at iteration_s with even stages and blocking sends.
 * @param out  receives a NUL-terminated document; the caller frees it with free()
 * @return SPSIM_OK, SPSIM_EINVAL, SPSIM_ERANGE (more than 2,000,000 ops, or an interleaved
 *         schedule whose micro-batches are not a multiple of pp), SPSIM_ENUMERIC or SPSIM_ENOMEM
 */
SPSIM_API int spsim_trace_json(const struct spsim_result *r, char **out, struct spsim_error *err);

#ifdef __cplusplus
}
#endif

#endif
