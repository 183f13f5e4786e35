/* The optimizer's pieces shared by optimize.c (the search) and optimize_bounds.c (its bounds
 * and the canonical form of a configuration). doc/sweep.md "How optimize searches". */
#ifndef SPSIM_OPTIMIZE_INTERNAL_H
#define SPSIM_OPTIMIZE_INTERNAL_H

#include "sweep_internal.h"

/*
 * What a layer summary guarantees of every configuration composed from it, per micro-batch: a
 * decoder layer's wall is at least `layer` (`layer_no_replay` without its recompute phase, as
 * the block recompute method leaves some layers), the embedding's `embedding`, the output
 * layer's `output`; summed over the pipeline ranks the walls are at least `sum`
 * (`sum_no_replay`); the steady state keeps at least `keep` of the critical rank's wall (1, or
 * 1 − ρ when the EP all-to-all overlap hides up to ρ of it).
 */
struct spsim_opt_floor {
    double layer, layer_no_replay, embedding, output, layers;
    /* A layer's wall by kind (the model's main layer, an MoE model's MoE layer; its dense
     * layer), with and without its recompute phase: [kind][replay]. */
    double kind[2][2];
    double last; /* what rank p − 1 adds to its layers: the output layer and the MTP depths */
    double mtp;  /* MTP depths (each adds a layer to `last`) */
    /* Upper bounds of the backward (with its recompute) of one layer of any kind, and of the
     * embedding, output and MTP blocks together: what a rank's backward can take. */
    double layer_backward, ends_backward;
    double sum, sum_no_replay;
    double keep, keep_a2a;
};

/** The floor of a summary (optimize_bounds.c); with `compute`, of its computation alone (what
 * communication choices such as TE userbuffers leave unchanged). */
void spsim_opt_floor_of(const struct spsim_model *model, const struct spsim_layer_summary *le,
                        bool compute, struct spsim_opt_floor *f);

/** A pipeline's shape: ranks, model chunks per rank, micro-batches, and the decoder layers of
 * ranks 0, 1 and p − 1 (the critical stage is the slowest of them, pipeline_time.c critical_stage;
 * 0 where unknown: the mean over the ranks bounds it then). */
struct spsim_opt_shape {
    double p, v, micro;
    double main[3];    /* of built[], the layers of the main kind (an MoE model's MoE layers) */
    double backward_s; /* at least the critical rank's backward of one micro-batch (bwd_window) */
    double built[3];
};

/** The layers of ranks 0, 1 and p − 1 of a stage plan and how many of them are of the model's
 * main kind (MoE layers of an MoE model, spsim_model_layer_is_moe; every layer of a dense one). */
void spsim_opt_shape_layers(const struct spsim_model *model, const struct spsim_stage_plan *plan,
                            struct spsim_opt_shape *x);

/** A lower bound of the iteration time of every configuration with this floor and shape.
 * `replay`: the recompute phase counts on every layer (false for the block method); `a2a`: the
 * EP all-to-all overlap is on. */
double spsim_opt_iteration_lb(const struct spsim_opt_floor *f, const struct spsim_opt_shape *x,
                              bool replay, bool a2a);

/** What a pipeline shape's first evaluated point tells of its other points: the parameters
 * on one GPU of ranks 0, p − 1 and 1 (0: none), one decoder layer's, and the data-parallel
 * collectives' times as they are asked (`coll`, −1 until then: by collective (AllReduce,
 * ReduceScatter, AllGather of the weights, AllGather of one layer, the ReduceScatter's finish
 * beside a backward), fp32 or 16-bit gradients, and rank). */
struct spsim_opt_pipeline {
    bool known, moe, mixed;
    double params[3];
    double layer_params;
    double coll[5][2][3];
};

/** A lower bound of dp_exposed_s + optimizer_s of the point `pt` of pipeline `pl` with shape
 * `x` (optimize_bounds.c: the lines of dp_time.c dp_exposed, zero_exposed and
 * optimizer_step_s that no overlap can hide). */
double spsim_opt_sharding_lb(const struct spsim_sweep_point *pt, const struct spsim_opt_shape *x,
                             struct spsim_opt_pipeline *pl);

/** The rank key (spsim_sweep_rank_key) no configuration can beat whose iteration takes at
 * least `iteration_lb` for `tokens` = gbs·seq; `per_token_mfu` is mfu / tokens_per_s of those
 * configurations (MFU ranking only). Memory ranking has no time bound: 0. */
uint64_t spsim_opt_key_lb(enum spsim_sweep_by by, double iteration_lb, double tokens,
                          double per_token_mfu);

/** The layer axes' part of spsim_opt_alias (what a probe of the layer-level digits decides). */
bool spsim_opt_layer_alias(const struct spsim_sweep *sw, const uint32_t *d,
                           const struct spsim_sweep_point *pt);

/** Whether the point of digits `d` (configuration `pt`) is an alias of another point of the
 * space, one that evaluates to the same figures and precedes it in the canonical order: such a
 * point is counted once, at its representative. */
bool spsim_opt_alias(const struct spsim_sweep *sw, const uint32_t *d,
                     const struct spsim_sweep_point *pt);

/** The sharding axes' part of spsim_opt_alias (distributed optimizer, zero, the overlapped
 * reduction and gather, the gradients' dtype). */
bool spsim_opt_sharding_alias(const struct spsim_sweep *sw, const uint32_t *d,
                              const struct spsim_sweep_point *pt);

/** Whether no configuration with these layer-level digits can be valid whatever the
 * composition axes: its probe (pp 1, no interleaving, even split, dp = gpus/(tp·cp), the
 * smallest admissible batch, no sharding, no method, no offload) fails spsim_parallel_check,
 * and every rule the probe can fail reads only what the probe shares with every composition.
 * `probe` receives the probe configuration. */
bool spsim_opt_layer_invalid(const struct spsim_sweep *sw, const uint32_t *d, bool recompute_none,
                             struct spsim_sweep_point *probe);

/** The digit of value 0 of the recompute layers or offload axis when spsim_opt_comp_skip would
 * skip every other value of it here; -1 otherwise. */
int spsim_opt_comp_only(const struct spsim_sweep *sw, const uint32_t *d, int axis);

/**
 * How much recomputing more than configuration `pt` does could shorten a layer's wall (0 without
 * TE userbuffers; INFINITY when unknown). Recomputation adds recompute steps to the same forward
 * and backward steps (schedule.c), except that with TE userbuffers a backward collective whose
 * GEMM partner is then a recompute step away is exposed whole (timing.c ub_partner), which is
 * shorter than beside its GEMM only by what that exposure exceeds the collective's time: the sum
 * of those excesses over pt's layers' backward (`le`: scratch for their evaluation), the larger
 * of its two layer kinds'.
 */
double spsim_opt_ub_slack(const struct spsim_sweep_point *pt, struct spsim_layer_eval *le);

/** Lower every layer wall of a floor by `slack` (a descendant's, spsim_opt_ub_slack). */
void spsim_opt_floor_less(struct spsim_opt_floor *f, double slack);

/** The least a rank's weights, gradients and optimizer state can need: `params` parameters on
 * one GPU, `experts` of them routed experts (sharded over `edp`), `unit` one layer's, at
 * sharding level `level` over D = dp·cp ranks, gradients in fp32 or not. */
double spsim_opt_static_bytes(double params, double experts, double unit, int level, bool fp32,
                              double D, double edp);

/** The least total_bytes of a configuration of summary `le` (its probe `probe`: the layer-level
 * digits, gpus set) on p ranks whose rank 0 holds `m0` layers of the main kind of its `b0` and
 * rank p − 1 `ml` of `bl`, at the least sharding level and gradient dtype the space holds. */
double spsim_opt_ranks_static(const struct spsim_sweep *sw, const struct spsim_layer_summary *le,
                              const struct spsim_sweep_point *probe, double p, double m0, double b0,
                              double ml, double bl);

/** Whether digit `i` of composition axis `axis` cannot lead to a valid point given the digits
 * already chosen in `d` (the axes before it in the search's order): the recompute method,
 * layer count and offload rules of spsim_parallel_check that read only those. */
bool spsim_opt_comp_skip(const struct spsim_sweep *sw, const uint32_t *d, int axis, uint32_t i);

#endif
