/*
 * Evaluation in two stages. The per-layer part depends only on the model, the hardware and
 * (t, sp, attention kernel, recompute, s, b, dtype); the composition adds the pipeline, data
 * parallelism and the optimizer. The sweep caches the first and re-runs only the second.
 */
#ifndef SPSIM_EVAL_H
#define SPSIM_EVAL_H

#include "collective_model.h"
#include "layer.h"
#include "optimizer.h"

/** Cost of one schedule step on the hardware. */
struct spsim_step_cost {
    double compute_s;
    double comm_s;
    double exposed_comm_s; /* comm not hidden behind the step's computation */
    struct spsim_coll_time coll;
};

/** A block of ops (a transformer layer, the embedding, the output layer) folded into totals.
 * Times and bytes are per micro-batch on one rank. */
/* A block's per-micro-batch host work outside its schedule (engine/mb_host.c): torch calls and
 * launches before its forward's steps (head), after them (tail) and, past a device-to-host
 * wait (wait), after the wait; and in its backward (the DDP hooks). */
struct spsim_mb_host {
    double fwd_head_calls, fwd_head_launches, fwd_tail_calls, fwd_tail_launches;
    double after_calls, after_launches, bwd_calls, bwd_launches;
    bool wait;
};

/* Which block of the model a block evaluation is (engine/mb_host.c). */
enum spsim_block_role {
    SPSIM_BLOCK_LAYER,
    SPSIM_BLOCK_EMBEDDING,
    SPSIM_BLOCK_OUTPUT,
    SPSIM_BLOCK_MTP
};

struct spsim_block_eval {
    struct spsim_layer block;
    struct spsim_schedule sched;
    struct spsim_step_cost cost[SPSIM_MAX_STEPS];
    /* From here on: what the folding sums into, cleared per evaluation (timing.c eval_clear);
     * the tables above are written entry by entry before they are read. */
    uint64_t saved_bytes;             /* activations kept for backward */
    double fwd_s, bwd_s, recompute_s; /* wall time of each phase */
    double fwd_compute_s, bwd_compute_s, recompute_compute_s;
    double wgrad_compute_s; /* the backward's weight-gradient GEMMs (of bwd_compute_s) */
    double tp_exposed_s;
    double recompute_comm_s, recompute_exposed_s; /* the recompute phase's collectives */
    double fwd_flops, bwd_flops, recompute_flops; /* executed, per rank */
    double tp_nvlink_bytes, tp_network_bytes;     /* per rank, all phases */
    double tp_bwd_wire_bytes;                     /* per rank, backward only */
    uint64_t tp_wire[3];                          /* exact, per phase (enum spsim_phase) */
    uint64_t tp_regather_wire;
    /* Context parallelism's exchanges, kept apart from the TP figures above. */
    double cp_exposed_s, cp_comm_s, cp_bwd_wire_bytes;
    uint64_t cp_wire[3];
    bool cp_network; /* some CP exchange leaves the NVLink domain */
    /* MoE token exchanges (EP, ETP, ETP×EP groups), kept apart as CP's are. */
    double ep_exposed_s, ep_comm_s, ep_bwd_wire_bytes;
    uint64_t ep_wire[3];
    bool ep_network;
    /* Host side (engine/host.c): kernels the host launches per phase (enum spsim_phase), a CUDA
     * graph replay counting one, and the time the phase's wall grew because the host issued
     * them more slowly than the GPU ran them (0 without host.kernel_launch_us). */
    uint32_t launches[3];
    double host_exposed_s;
    struct spsim_mb_host mb_host;
    /* An MoE layer with EP: the token exchanges' time left exposed when its forward runs beside
     * another micro-batch's backward (ep_overlap.c), without and with delayed wgrad. */
    double ep_pair_exposed_s[2];
    /* The router's tokens-per-expert AllReduces (op->moe_aux), all phases; in the phase walls
     * above, not in cp_exposed_s. */
    double moe_aux_exposed_s;
    /* The recompute phase's share of cp_comm_s and cp_exposed_s (recompute_comm_s and
     * recompute_exposed_s are the TP collectives' share). */
    double cp_recompute_comm_s, cp_recompute_exposed_s;
};

struct spsim_layer_eval {
    struct spsim_layer_config cfg;
    struct spsim_group tp_group;
    uint64_t padded_vocab;
    struct spsim_block_eval layer;
    struct spsim_block_eval embedding;
    struct spsim_block_eval output;
    /* An MoE model with dense layers (first k dense, a layer frequency): one of those, and
     * whether it was built. `layer` is then the MoE layer. */
    struct spsim_block_eval dense;
    bool has_dense;
    struct spsim_block_eval mtp; /* one MTP depth's own rows (when the model has MTP layers) */
    uint64_t dense_no_recompute; /* the dense layer's activations kept whole */
    uint64_t act_modes[SPSIM_MODE_COUNT];
    uint64_t act_no_recompute; /* one layer's activations while it is recomputed (full) */
    uint64_t offload_bytes;    /* of those, what CPU offload moves (spsim_layer_offload_bytes) */
    /* A hybrid model (shape.hybrid_pattern): `layer` is its primary kind (the MoE layer when it
     * has 'E' layers, else the Mamba layer, else its first kind), hybrid[k] every other kind k
     * its pattern or MTP pattern has (bit k of hybrid_kinds, the primary's included). */
    enum spsim_layer_kind hybrid_primary;
    uint32_t hybrid_kinds;
    struct spsim_block_eval hybrid[SPSIM_LAYER_KIND_COUNT];
    uint64_t hybrid_no_recompute; /* the largest kind's activations kept whole */
};

/*
 * What the composition reads of a block, folded once per layer evaluation: the sweep caches
 * these (a few hundred bytes) instead of the whole schedule, and composes without looping
 * over schedule steps. Members are named as in struct spsim_block_eval.
 */
/* Collective steps a block can have (a layer has a few dozen). */
#define SPSIM_BLOCK_MAX_COMM 96

struct spsim_block_totals {
    uint64_t saved_bytes;
    double fwd_s, bwd_s, recompute_s;
    double fwd_compute_s, bwd_compute_s, recompute_compute_s;
    double wgrad_compute_s;
    double tp_exposed_s;
    double recompute_comm_s, recompute_exposed_s;
    /* The collective steps' times in schedule order (composition sums them step by step, so
     * a summary composes to the same bits as the schedule it came from). */
    uint32_t ncomm;
    double comm_s[SPSIM_BLOCK_MAX_COMM];
    double fwd_flops, bwd_flops, recompute_flops;
    double tp_bwd_wire_bytes;
    uint64_t tp_wire[3];
    uint64_t tp_regather_wire;
    uint64_t message_bytes; /* the block's M = b·s·h·2 */
    double cp_exposed_s, cp_comm_s, cp_bwd_wire_bytes;
    uint64_t cp_wire[3];
    bool cp_network;
    double ep_exposed_s, ep_comm_s, ep_bwd_wire_bytes;
    uint64_t ep_wire[3];
    bool ep_network;
    uint32_t launches[3];
    double host_exposed_s;
    double ep_pair_exposed_s[2];
    double moe_aux_exposed_s;
    double cp_recompute_comm_s, cp_recompute_exposed_s;
};

/** A layer evaluation reduced to what spsim_compose() needs (see spsim_layer_summarize). */
struct spsim_layer_summary {
    /* Nonzero: a number no other summary of the same memo's life carries (the sweep numbers
     * each one it makes), keying the composition's memos; 0: composed without them. */
    uint64_t id;
    struct spsim_layer_config cfg;
    struct spsim_group tp_group;
    uint64_t padded_vocab;
    struct spsim_block_totals layer, embedding, output;
    uint64_t act_modes[SPSIM_MODE_COUNT];
    uint64_t act_no_recompute;
    /* MoE: the dense layers' totals and parameters (when has_dense), and the routed experts'
     * parameters of one MoE layer on one rank (0 for a dense model). */
    struct spsim_block_totals dense;
    bool has_dense;
    /* Multi-token prediction: one depth's own rows and its parameters on one rank (0 without
     * MTP; memory.c and pipeline_time.c mtp_*). */
    struct spsim_block_totals mtp;
    uint64_t params_mtp;
    uint64_t params_dense_layer, params_layer_experts;
    uint64_t cp_working_bytes; /* CP's transient exchange buffers of one layer (see summary.c) */
    uint64_t logits_working_bytes; /* the 16-bit logits beside their fp32 copy (summary.c) */
    /* MLA with SP and t > 1: one layer's parameters duplicated over TP whose gradients are
     * all-reduced over TP once per iteration (the down-projections and latent norms); else 0. */
    uint64_t params_tp_synced;
    uint64_t offload_bytes;
    /* Parameters on one TP rank (they depend on t through the padded vocabulary). */
    uint64_t params_layer, params_embedding, params_output, params_total;
    uint64_t params_lora_layer;      /* LoRA: one layer's adapter weights (finetune.c); else 0 */
    uint64_t params_active;          /* spsim_model_active_parameters */
    uint64_t fp8_weight_bytes_layer; /* TE's FP8 weight copies of one layer (engine/fp8.c) */
    uint64_t fp8_weights_layer;      /* its linear weights in FP8 (gathered in FP8 with
                                        fp8_param_gather) */
    bool params_ok;                  /* false if a count overflowed 64 bits */
    /* The layer's collectives as comm.per_layer lists them. */
    uint32_t ncoll;
    struct spsim_collective_entry coll[SPSIM_MAX_LAYER_COLLECTIVES];
    /* Host launches (engine/host.c): one layer's, forward and backward (recompute included),
     * and whether any block's wall is host-bound. */
    uint32_t layer_forward_launches, layer_backward_launches;
    bool host_bound;
    uint32_t fp8_gemms_layer; /* GEMM ops of one layer in FP8 or NVFP4 (engine/fp8.c) */
    /* An MoE layer with SP and t > 1: the router's parameters (marked sequence_parallel,
     * router.py), whose gradients join the MLA ones' TP all-reduce (dp_time.c); else 0. */
    uint64_t params_router_tp_synced;
    /* A hybrid model (struct spsim_layer_eval): the kinds, the non-primary kinds' totals (the
     * primary's are `layer`), each kind's parameters on one rank (an 'E' layer's without its
     * routed experts: params_layer_experts), and the decoder's FP8 weights on one rank. */
    enum spsim_layer_kind hybrid_primary;
    uint32_t hybrid_kinds;
    struct spsim_block_totals hybrid[SPSIM_LAYER_KIND_COUNT];
    uint64_t params_hybrid[SPSIM_LAYER_KIND_COUNT];
    uint64_t fp8_weights_hybrid[SPSIM_LAYER_KIND_COUNT];
    uint64_t fp8_weight_bytes_hybrid[SPSIM_LAYER_KIND_COUNT];
    /* Muon (engine/optimizer.c spsim_muon_block) of one layer, one dense layer of an MoE model
     * and one MTP depth's own rows, per [--muon-no-split-qkv][--muon-tp-mode], the
     * Newton-Schulz FLOPs of one iteration (compose multiplies by the steps). */
    struct spsim_muon_totals muon_layer[2][SPSIM_MUON_TP_COUNT], muon_dense[2][SPSIM_MUON_TP_COUNT],
        muon_mtp[2][SPSIM_MUON_TP_COUNT];
};

/** A hybrid summary's totals of kind k: `layer` for the primary kind. */
static inline const struct spsim_block_totals *
spsim_hybrid_totals(const struct spsim_layer_summary *s, enum spsim_layer_kind k)
{
    return k == s->hybrid_primary ? &s->layer : &s->hybrid[k];
}

/** Fold a layer evaluation into its summary. hw may be NULL (as for spsim_layer_evaluate). */
void spsim_layer_summarize(const struct spsim_model *model, const struct spsim_hardware *hw,
                           const struct spsim_layer_eval *le, struct spsim_layer_summary *out);

/** The layer kind a hybrid model's `layer` block is (spsim_layer_eval); SPSIM_LAYER_TRANSFORMER
 * without a hybrid pattern. */
enum spsim_layer_kind spsim_hybrid_primary(const struct spsim_model_shape *m);

/** Resolve the model defaults (seq, attention kernel) into a layer configuration. */
void spsim_layer_config_from(const struct spsim_model_shape *m, const struct spsim_parallel *par,
                             struct spsim_layer_config *cfg);

/** Build, cost and fold the layer, embedding and output blocks. hw may be NULL (no times). */
int spsim_layer_evaluate(const struct spsim_model_shape *m, const struct spsim_hardware *hw,
                         const struct spsim_layer_config *cfg, uint64_t padded_vocab,
                         struct spsim_layer_eval *out, struct spsim_error *err);

/** Whether check_pipeline's batch rules refuse p with v model chunks per rank (gbs not a
 * multiple of mbs·dp; the interleaved schedule's micro-batch groups, check_groups): the rules
 * themselves, so that the sweep, which skips the points inside a batch value that fails them
 * (sweep.c fails_inside_gbs), follows them as they change. */
bool spsim_batch_fails(const struct spsim_parallel *p, uint32_t v);

/** spsim_parallel_check of p where p differs from a configuration that passed it with the same
 * model and hardware only in gbs, distributed_optimizer and overlap_grad_reduce (the sweep's
 * innermost axes): only the rules that read those (the batch's range and split, the FP8,
 * sharding, HSDP and precision-aware optimizer rules on the distributed optimizer, the
 * overlaps' rule), then the warnings; a refusal, or an uneven split, is checked in full, so its
 * message is the first rule's as spsim_parallel_check orders them. */
int spsim_parallel_recheck_batch(const struct spsim_model *model, const struct spsim_hardware *hw,
                                 const struct spsim_parallel *p, uint32_t *warnings,
                                 struct spsim_error *err);

/** SPSIM_ECONFIG naming what the engine does not model yet in this model (mixture-of-experts
 * layers, multi-latent attention, multi-token prediction), else SPSIM_OK: spsim_parallel_check
 * asks it, and the sweep once per model, so that a space of such a model is refused whole. */
int spsim_model_modelled(const struct spsim_model *model, struct spsim_error *err);

/** A hybrid model's rules (engine/hybrid.c): the Mamba layers' TP, CP and FP8 asserts of
 * Megatron-Core, the pipeline split, and spsim's limits; SPSIM_OK for other models. */
int spsim_hybrid_check(const struct spsim_model_shape *m, const struct spsim_parallel *p,
                       struct spsim_error *err);

/** first_last_layers_bf16 (engine/bf16_layers.c): whether some decoder layers run in BF16 (dtype
 * fp8 or nvfp4, a count above 0); Megatron's refusals and spsim's limits (SPSIM_ECONFIG); the
 * BF16 layers of a model of `layers` (the union of the first start and the last end). */
bool spsim_bf16_layers_active(const struct spsim_parallel *par);
int spsim_bf16_layers_check(const struct spsim_model_shape *m, const struct spsim_parallel *par,
                            struct spsim_error *err);
uint64_t spsim_bf16_layers_total(uint32_t layers, uint32_t start, uint32_t end);

/** Check a configuration (spsim_parallel_check) and evaluate its layer: what
 * spsim_layer_schedule() and the replay plan of `spsim validate` share. */
int spsim_layer_evaluate_checked(const struct spsim_model *model, const struct spsim_hardware *hw,
                                 const struct spsim_parallel *par, struct spsim_layer_eval *le,
                                 struct spsim_error *err);

/** The CUDA-graph modules a configuration captures in its transformer layers (enum
 * spsim_cuda_graph_scope bits; SPSIM_CGS_FULL_ITERATION: everything but the optimizer); 0 when
 * eager (engine/host.c). */
uint32_t spsim_cuda_graph_capture(const struct spsim_parallel *par);

/** Megatron's and Megatron-Bridge's rules on --cuda-graph-impl and --cuda-graph-scope.
 * @return SPSIM_OK or SPSIM_ECONFIG */
int spsim_cuda_graph_check(const struct spsim_model_shape *m, const struct spsim_parallel *par,
                           struct spsim_error *err);

/** Whether a step of an op in CUDA-graph module `module` (struct spsim_op graph_module) runs
 * inside a graph when the layer captures `capture` (struct spsim_layer_config graph_capture). */
bool spsim_cuda_graph_captures(uint32_t capture, uint32_t module);

/** Count a folded block's host launches and, with hw's kernel_launch_s, make each phase's wall
 * max(GPU time, host issue time) (engine/host.c). hw may be NULL (counts only). */
void spsim_block_host(const struct spsim_hardware *hw, struct spsim_block_eval *be);

/** Count a block's per-micro-batch host work outside its schedule into be->mb_host (the DDP
 * hooks, get_batch, loss_func: engine/mb_host.c), which spsim_block_host then prices. */
void spsim_block_mb_host(const struct spsim_model_shape *m, enum spsim_block_role role,
                         struct spsim_block_eval *be);

/** The parameter tensors of the model's norm, attention and MLP or MoE block (engine/mb_host.c,
 * the TE layer spec); *weights: the Transformer Engine linears' weights among them. */
double spsim_norm_tensors(const struct spsim_model_shape *m);
double spsim_attention_tensors(const struct spsim_model_shape *m, double *weights);
double spsim_mlp_tensors(const struct spsim_model_shape *m, uint32_t ep, bool moe, double *weights);

/** Time of one GEMM (M, N, K, batch) of `dtype` on the hardware, roofline included.
 * @param fp32_accumulate_out  the output is accumulated in fp32 (Megatron's wgrad fusion) */
int spsim_gemm_time(const struct spsim_hardware *hw, enum spsim_dtype dtype, uint64_t m, uint64_t n,
                    uint64_t k, uint64_t batch, bool fp32_accumulate_out, double *seconds);

/** The main-loop rate per full wave behind one measured M×N×K GEMM (16-bit output, beta = 0):
 * its serial epilogue (gpu.gemm_epilogue) taken out, then divided by its tile efficiency.
 * SPSIM_ERANGE when the measurement is faster than its epilogue alone. */
int spsim_gemm_mainloop_rate(const struct spsim_hardware *hw, uint64_t m, uint64_t n, uint64_t k,
                             double measured_flops_per_s, double *rate);

/** Forward model FLOPs per token (multiply by 3 for forward and backward) of a model with MoE,
 * MLA or MTP layers (engine/model_flops.c): the 2022 paper's convention generalised (model), the
 * Megatron-LM formula (megatron) and the logits' share (logits) of both. */
struct spsim_flops_per_token {
    double model, megatron, logits;
};
void spsim_model_flops_per_token(const struct spsim_model *model, double s, double vpad,
                                 struct spsim_flops_per_token *f);

/** The optimizer step's time on a GPU holding `params` parameters, sharded as par says over
 * D = dp·cp ranks (memory-bound: dp_time.c; what the optimizer's bounds read). */
double spsim_optimizer_step_params_s(const struct spsim_hardware *hw,
                                     const struct spsim_parallel *par, double params, double D);

/** Compose a full result from a checked configuration and its layer summary. */
int spsim_compose(const struct spsim_model *model, const struct spsim_hardware *hw,
                  const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                  uint32_t warnings, struct spsim_result *out, struct spsim_error *err);

/*
 * The composition's memos (compose.h, coll_memo.c): remembered collective predictions and the
 * stages of the composition that repeat from point to point of a sweep, each keyed by every
 * input it reads, so a hit is exactly what computing again gives. One per sweep worker.
 */
struct spsim_coll_memo;
/** @return a memo (free with spsim_coll_memo_destroy), or NULL when out of memory */
struct spsim_coll_memo *spsim_coll_memo_create(void);
void spsim_coll_memo_destroy(struct spsim_coll_memo *memo);

/**
 * spsim_compose() for the sweep: writes into `out` directly (its contents are undefined on
 * failure), uses `memo` (may be NULL) for collectives, and leaves comm.per_layer empty when
 * `per_layer` is false (it is no scalar field).
 */
int spsim_compose_into(const struct spsim_model *model, const struct spsim_hardware *hw,
                       const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                       uint32_t warnings, struct spsim_coll_memo *memo, bool per_layer,
                       struct spsim_result *out, struct spsim_error *err);

#endif
