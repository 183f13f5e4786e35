/*
 * Evaluation in two stages. The per-layer part depends only on the model, the hardware and
 * (t, sp, attention kernel, recompute, s, b, dtype); the composition adds the pipeline, data
 * parallelism and the optimizer. The sweep caches the first and re-runs only the second.
 */
#ifndef SPSIM_EVAL_H
#define SPSIM_EVAL_H

#include "collective_model.h"
#include "layer.h"

/** Cost of one schedule step on the hardware. */
struct spsim_step_cost {
    double compute_s;
    double comm_s;
    double exposed_comm_s; /* comm not hidden behind the step's computation */
    struct spsim_coll_time coll;
};

/** A block of ops (a transformer layer, the embedding, the output layer) folded into totals.
 * Times and bytes are per micro-batch on one rank. */
struct spsim_block_eval {
    struct spsim_layer block;
    struct spsim_schedule sched;
    struct spsim_step_cost cost[SPSIM_MAX_STEPS];
    uint64_t saved_bytes;                         /* activations kept for backward */
    double fwd_s, bwd_s, recompute_s;             /* wall time of each phase */
    double fwd_compute_s, bwd_compute_s, recompute_compute_s;
    double tp_exposed_s;
    double fwd_flops, bwd_flops, recompute_flops; /* executed, per rank */
    double tp_nvlink_bytes, tp_network_bytes;     /* per rank, all phases */
    double tp_bwd_wire_bytes;                     /* per rank, backward only */
    uint64_t tp_wire[3];                          /* exact, per phase (enum spsim_phase) */
    uint64_t tp_regather_wire;
};

struct spsim_layer_eval {
    struct spsim_layer_config cfg;
    struct spsim_group tp_group;
    uint64_t padded_vocab;
    struct spsim_block_eval layer;
    struct spsim_block_eval embedding;
    struct spsim_block_eval output;
    uint64_t act_modes[SPSIM_MODE_COUNT];
    uint64_t act_no_recompute; /* one layer's activations while it is recomputed (full) */
};

/** Resolve the model defaults (seq, attention kernel) into a layer configuration. */
void spsim_layer_config_from(const struct spsim_model_shape *m, const struct spsim_parallel *par,
                             struct spsim_layer_config *cfg);

/** Build, cost and fold the layer, embedding and output blocks. hw may be NULL (no times). */
int spsim_layer_evaluate(const struct spsim_model_shape *m, const struct spsim_hardware *hw,
                         const struct spsim_layer_config *cfg, uint64_t padded_vocab,
                         struct spsim_layer_eval *out, struct spsim_error *err);

/** Check a configuration (spsim_parallel_check) and evaluate its layer: what
 * spsim_layer_schedule() and the replay plan of `spsim validate` share. */
int spsim_layer_evaluate_checked(const struct spsim_model *model, const struct spsim_hardware *hw,
                                 const struct spsim_parallel *par, struct spsim_layer_eval *le,
                                 struct spsim_error *err);

/** Time of one GEMM (M, N, K, batch) of `dtype` on the hardware, roofline included.
 * @param fp32_accumulate_out  the output is accumulated in fp32 (Megatron's wgrad fusion) */
int spsim_gemm_time(const struct spsim_hardware *hw, enum spsim_dtype dtype, uint64_t m,
                    uint64_t n, uint64_t k, uint64_t batch, bool fp32_accumulate_out,
                    double *seconds);

/** Compose a full result from a checked configuration and its layer evaluation. */
int spsim_compose(const struct spsim_model *model, const struct spsim_hardware *hw,
                  const struct spsim_parallel *par, const struct spsim_layer_eval *le,
                  uint32_t warnings, struct spsim_result *out, struct spsim_error *err);

#endif
